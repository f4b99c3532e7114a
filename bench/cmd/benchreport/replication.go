package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
)

// replRun is the part of a scripts/bench-replication.sh result line the
// targets table needs: one produce run against the single node (rf1) or
// the cluster (rf3).
type replRun struct {
	Kind       string `json:"kind"`
	Target     string `json:"target"`
	Round      int    `json:"round"`
	Workload   string `json:"workload"`
	Size       int    `json:"size"`
	Exit       int    `json:"exit"`
	BrokerCPUs string `json:"broker_cpus"`
	ClientCPUs string `json:"client_cpus"`
	Result     struct {
		MBPerSec float64 `json:"mb_per_sec"`
		Errors   int64   `json:"errors"`
	} `json:"result"`
}

// replRatio is RF 3 over RF 1 throughput for one placement and record
// size, over the rounds in which both ran cleanly.
type replRatio struct {
	brokerCPUs, clientCPUs string
	size                   int
	ratio                  stat
}

// loadReplication reads bench-replication's JSON lines and returns the
// RF 3 / RF 1 ratios, each round's pair divided before the median is
// taken (as the script's own table does), by placement then size.
func loadReplication(path string) ([]replRatio, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	type key struct {
		broker, client string
		size, round    int
	}
	mbps := map[key]map[string]float64{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var r replRun
		if json.Unmarshal(sc.Bytes(), &r) != nil || r.Kind != "run" || r.Workload != "produce" ||
			r.Exit != 0 || r.Result.Errors != 0 || r.Result.MBPerSec <= 0 {
			continue
		}
		k := key{r.BrokerCPUs, r.ClientCPUs, r.Size, r.Round}
		if mbps[k] == nil {
			mbps[k] = map[string]float64{}
		}
		mbps[k][r.Target] = r.Result.MBPerSec
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	type place struct {
		broker, client string
		size           int
	}
	ratios := map[place][]float64{}
	for k, m := range mbps {
		if m["rf1"] > 0 && m["rf3"] > 0 {
			p := place{k.broker, k.client, k.size}
			ratios[p] = append(ratios[p], m["rf3"]/m["rf1"])
		}
	}
	var out []replRatio
	for p, v := range ratios {
		out = append(out, replRatio{brokerCPUs: p.broker, clientCPUs: p.client, size: p.size, ratio: statOf(v)})
	}
	slices.SortFunc(out, func(a, b replRatio) int {
		return cmp.Or(cmp.Compare(a.brokerCPUs, b.brokerCPUs), cmp.Compare(a.size, b.size)) // "0" before "0,1"
	})
	return out, nil
}

// writeReplTargets adds the replicated-produce rows to the targets table.
func writeReplTargets(w io.Writer, rs []replRatio) {
	for _, r := range rs {
		met := "yes"
		if r.ratio.med < 0.4 {
			met = "**no**"
		}
		fmt.Fprintf(w, "| replicated produce RF 3 >= 0.4x the single node (%s records; brokers on CPU %s, client on CPU %s) | %.2fx (%.2fx–%.2fx) | %s |\n",
			recordSize(r.size), r.brokerCPUs, r.clientCPUs, r.ratio.med, r.ratio.min, r.ratio.max, met)
	}
}

// recordSize names a record size as the replication tables do.
func recordSize(n int) string {
	if n%1024 == 0 {
		return fmt.Sprintf("%d KiB", n/1024)
	}
	return fmt.Sprintf("%d B", n)
}
