package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"

	bload "github.com/sluice/sluice/bench/load"
)

// Shared rates: scripts/bench-report-omb.sh first probes every broker
// (`sluice perf omb --rates none`), then runs each of them at the same
// fixed rates, fractions of the highest probe (`--max-rate`), so that "at
// every rate" compares brokers at one offered load, as OMB's fixed-rate
// workloads do, rather than each at fractions of its own probe (a broker
// with a slower probe would be asked for less). ombmax gives that rate,
// ombmerge joins each broker's probe and fixed-rate results into one.

// readOMB reads one `sluice perf omb --json` result.
func readOMB(path string) (*bload.OMBResult, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r bload.OMBResult
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// ombMaxCmd implements `benchreport ombmax PROBE.json...`: it prints the
// highest probe rate (records/s, rounded down) of the results.
func ombMaxCmd(args []string) error {
	best, err := ombMax(args)
	if err != nil {
		return err
	}
	fmt.Println(best)
	return nil
}

// ombMax returns the highest probe rate of the results in paths, rounded
// down; an error when no probe acked anything.
func ombMax(paths []string) (int64, error) {
	best := 0.0
	for _, p := range paths {
		r, err := readOMB(p)
		if err != nil {
			return 0, err
		}
		if pr := phase(r, "probe"); pr != nil && pr.ProduceRate > best {
			best = pr.ProduceRate
		}
	}
	if best < 1 {
		return 0, errors.New("no probe acked anything")
	}
	return int64(best), nil
}

// ombMergeCmd implements `benchreport ombmerge -out FILE PROBE.json
// RATES.json`: one result with the probe's phases, then the fixed rates'.
func ombMergeCmd(args []string) error {
	fs := flag.NewFlagSet("ombmerge", flag.ContinueOnError)
	out := fs.String("out", "", "the merged result's file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 2 || *out == "" {
		return errors.New("usage: ombmerge -out FILE PROBE.json RATES.json")
	}
	probe, err := readOMB(fs.Arg(0))
	if err != nil {
		return err
	}
	rates, err := readOMB(fs.Arg(1))
	if err != nil {
		return err
	}
	m, err := mergeOMB(probe, rates)
	if err != nil {
		return err
	}
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return os.WriteFile(*out, append(b, '\n'), 0o644)
}

// mergeOMB joins a broker's probe-only run and its run at given rates.
func mergeOMB(probe, rates *bload.OMBResult) (*bload.OMBResult, error) {
	if probe.Target != rates.Target || probe.Partitions != rates.Partitions {
		return nil, fmt.Errorf("ombmerge: %s at %d partitions and %s at %d are not one broker's runs",
			probe.Target, probe.Partitions, rates.Target, rates.Partitions)
	}
	m := *rates
	m.Phases = append(append([]bload.OMBPhase(nil), probe.Phases...), rates.Phases...)
	if m.FirstError == "" {
		m.FirstError = probe.FirstError
	}
	return &m, nil
}
