package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
)

// record is one line of the results file.
//
//	kind "limit": Name ("dd", "sendfile", "tcp") and MBps of one run.
//	kind "floor": Name (a bench/floor mode), MBps and CPUPerGB of one run.
//	kind "run":   one `sluice perf` run: Tags (broker, workload, size,
//	              producers, acks), Result (perf's --json object, nil when it
//	              printed none), Exit (its status), Wall/ClientCPU/BrokerCPU
//	              in seconds.
type record struct {
	Kind      string            `json:"kind"`
	Name      string            `json:"name,omitempty"`
	MBps      float64           `json:"mbps,omitempty"`
	CPUPerGB  float64           `json:"cpu_s_per_gb,omitempty"`
	Tags      map[string]string `json:"tags,omitempty"`
	Exit      int               `json:"exit"`
	Wall      float64           `json:"wall_s,omitempty"`
	ClientCPU float64           `json:"client_cpu_s,omitempty"`
	BrokerCPU float64           `json:"broker_cpu_s,omitempty"`
	Result    *perfResult       `json:"result,omitempty"`
}

// perfResult is the part of bench/load.Result the report uses.
type perfResult struct {
	Records       int64    `json:"records"`
	Bytes         int64    `json:"bytes"`
	Seconds       float64  `json:"seconds"`
	RecordsPerSec float64  `json:"records_per_sec"`
	MBPerSec      float64  `json:"mb_per_sec"`
	Errors        int64    `json:"errors"`
	StoppedBy     string   `json:"stopped_by"`
	Produce       *latency `json:"produce_latency_ms,omitempty"`
	E2E           *latency `json:"e2e_latency_ms,omitempty"`
}

type latency struct {
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p99_9"`
	Max  float64 `json:"max"`
}

func appendRecord(path string, r record) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	b, err := json.Marshal(r)
	if err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func readRecords(path string) ([]record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		var r record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		out = append(out, r)
	}
	return out, sc.Err()
}
