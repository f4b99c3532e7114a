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
	if got, err := ombMax([]string{a, b}); err != nil || got != 2200 {
		t.Fatalf("ombMax = %d, %v; want 2200", got, err)
	}
	none := write("none.json", &bload.OMBResult{Target: "kfake", Partitions: 100})
	if _, err := ombMax([]string{none}); err == nil {
		t.Fatal("no error without a probe")
	}
	if _, err := ombMax([]string{filepath.Join(dir, "missing.json")}); err == nil {
		t.Fatal("no error for a missing file")
	}
	torn := filepath.Join(dir, "torn.json")
	if err := os.WriteFile(torn, []byte(`{"target":"kfake","phases":[{"na`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ombMax([]string{a, torn}); err == nil {
		t.Fatal("no error for a torn result")
	}
}
