package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	bload "github.com/sluice/sluice/bench/load"
)

// TestMergeOMB: a broker's probe-only run and its run at the shared rates
// become one result, probe first, the shared maximum kept; runs of two
// brokers are refused.
func TestMergeOMB(t *testing.T) {
	full := ombRun("sluice-segment", 100, 2000, 1, 1)
	probe := &bload.OMBResult{Target: full.Target, Partitions: 100, MaxRate: 2000, Phases: full.Phases[:1]}
	rates := &bload.OMBResult{Target: full.Target, Partitions: 100, MaxRate: 2500, Phases: full.Phases[1:], FirstError: "x"}
	m, err := mergeOMB(probe, rates)
	if err != nil {
		t.Fatal(err)
	}
	if m.MaxRate != 2500 || len(m.Phases) != 5 || m.Phases[0].Name != "probe" || m.Phases[1].Name != "rate-25%" || m.FirstError != "x" {
		t.Fatalf("merged: max %v, phases %d (%s, %s), error %q", m.MaxRate, len(m.Phases), m.Phases[0].Name, m.Phases[1].Name, m.FirstError)
	}
	if _, err := mergeOMB(probe, &bload.OMBResult{Target: "kfake", Partitions: 100}); err == nil {
		t.Fatal("merged two brokers' runs")
	}
	if _, err := mergeOMB(probe, &bload.OMBResult{Target: full.Target, Partitions: 10000}); err == nil {
		t.Fatal("merged two partition counts' runs")
	}
}

// TestOMBMax: the highest probe of the files, rounded down; no probe that
// acked anything is an error.
func TestOMBMax(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, r *bload.OMBResult) string {
		p := filepath.Join(dir, name)
		b, _ := json.Marshal(r)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := write("a.json", ombRun("kfake", 100, 1500.7, 1, 1))
	b := write("b.json", ombRun("sluice-segment", 100, 2200.9, 1, 1))
	out := captureStdout(t, func() {
		if err := ombMaxCmd([]string{a, b}); err != nil {
			t.Fatal(err)
		}
	})
	if out != "2200\n" {
		t.Fatalf("ombmax printed %q, want 2200", out)
	}
	none := write("none.json", &bload.OMBResult{Target: "kfake", Partitions: 100})
	if err := ombMaxCmd([]string{none}); err == nil {
		t.Fatal("no error without a probe")
	}
}

func captureStdout(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	defer func() { os.Stdout = old }()
	f()
	w.Close()
	b := make([]byte, 256)
	n, _ := r.Read(b)
	return string(b[:n])
}
