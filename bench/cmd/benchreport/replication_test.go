package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The targets rows come from each round's RF 3 / RF 1 pair, per placement
// and size; failed runs and other workloads are left out.
func TestReplicationTargets(t *testing.T) {
	lines := []string{
		`{"kind":"run","target":"rf1","round":1,"workload":"produce","size":1024,"exit":0,"broker_cpus":"0","client_cpus":"1","result":{"mb_per_sec":1000}}`,
		`{"kind":"run","target":"rf3","round":1,"workload":"produce","size":1024,"exit":0,"broker_cpus":"0","client_cpus":"1","result":{"mb_per_sec":300}}`,
		`{"kind":"run","target":"rf1","round":2,"workload":"produce","size":1024,"exit":0,"broker_cpus":"0","client_cpus":"1","result":{"mb_per_sec":800}}`,
		`{"kind":"run","target":"rf3","round":2,"workload":"produce","size":1024,"exit":0,"broker_cpus":"0","client_cpus":"1","result":{"mb_per_sec":400}}`,
		`{"kind":"run","target":"rf1","round":3,"workload":"produce","size":1024,"exit":0,"broker_cpus":"0","client_cpus":"1","result":{"mb_per_sec":900}}`,
		`{"kind":"run","target":"rf3","round":3,"workload":"produce","size":1024,"exit":1,"broker_cpus":"0","client_cpus":"1","result":{"mb_per_sec":900}}`,
		`{"kind":"run","target":"rf3","round":1,"workload":"e2e","size":1024,"exit":0,"broker_cpus":"0","client_cpus":"1","result":{"mb_per_sec":10}}`,
		`{"kind":"run","target":"rf1","round":1,"workload":"produce","size":16384,"exit":0,"broker_cpus":"0,1","client_cpus":"0,1","result":{"mb_per_sec":1000}}`,
		`{"kind":"run","target":"rf3","round":1,"workload":"produce","size":16384,"exit":0,"broker_cpus":"0,1","client_cpus":"0,1","result":{"mb_per_sec":450}}`,
		`{"kind":"syscalls"}`,
		`not json`,
	}
	path := filepath.Join(t.TempDir(), "repl.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rs, err := loadReplication(path)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	writeReplTargets(&buf, rs)
	want := "| replicated produce RF 3 >= 0.4x the single node (1 KiB records; brokers on CPU 0, client on CPU 1) | 0.40x (0.30x–0.50x) | yes |\n" +
		"| replicated produce RF 3 >= 0.4x the single node (16 KiB records; brokers on CPU 0,1, client on CPU 0,1) | 0.45x (0.45x–0.45x) | yes |\n"
	if buf.String() != want {
		t.Fatalf("rows:\n%s\nwant:\n%s", buf.String(), want)
	}
}
