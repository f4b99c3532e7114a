package main

import (
	"strings"
	"testing"

	bload "github.com/sluice/sluice/bench/load"
)

func TestReplaceSection(t *testing.T) {
	doc := "# T\n<!-- bench:omb -->\nold\nrows\n<!-- /bench:omb -->\ntail\n"
	got, err := replaceSection(doc, "omb", "new")
	if err != nil {
		t.Fatal(err)
	}
	if want := "# T\n<!-- bench:omb -->\nnew\n<!-- /bench:omb -->\ntail\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if _, err := replaceSection(doc, "targets", "x"); err == nil {
		t.Fatal("no error for a missing section")
	}
	if _, err := replaceSection("<!-- bench:omb -->\nx\n", "omb", "x"); err == nil {
		t.Fatal("no error for a missing end marker")
	}
}

// ombRun is a synthetic result: a probe, then the fixed rates, each kept
// at kept of its target, with e2e p99 e2e ms.
func ombRun(target string, parts int32, max, kept, e2e float64) *bload.OMBResult {
	l := func(p99 float64) *bload.Latency {
		return &bload.Latency{Count: 10, P50: p99 / 2, P99: p99, P999: p99, Max: p99}
	}
	r := &bload.OMBResult{Target: target, Partitions: parts, RecordSize: 1024, MaxRate: max,
		Phases: []bload.OMBPhase{{Name: "probe", ProduceRate: max, ProduceMBps: max / 1000, Publish: l(5), E2E: l(9), CPUPerGB: 1,
			Seconds: 10, BrokerCPU: 5, ClientCPU: 9.9}}}
	for _, f := range []float64{0.25, 0.5, 0.75, 1} {
		name := map[float64]string{0.25: "rate-25%", 0.5: "rate-50%", 0.75: "rate-75%", 1: "rate-100%"}[f]
		r.Phases = append(r.Phases, bload.OMBPhase{Name: name, TargetRate: f * max, ProduceRate: f * max * kept, Publish: l(1), E2E: l(e2e), CPUPerGB: 0.5})
	}
	return r
}

// TestOMBSections: the sustained rate is the highest fixed rate kept within
// 5%; the targets table says met or not from the figures, per partition
// count (1.3x at 100, 1.5x at 10,000), and e2e p99 per rate.
func TestOMBSections(t *testing.T) {
	runs := []*bload.OMBResult{
		ombRun("kfake", 100, 1000, 1, 2),
		ombRun("sluice-segment", 100, 2000, 0.99, 1),
		ombRun("sluice-pebble", 100, 2000, 0.5, 3), // keeps only 25% and 50% (0.5x of those: none within 5%)
		ombRun("kfake", 10000, 1000, 1, 2),
		ombRun("sluice-segment", 10000, 1400, 1, 1),
	}
	// A kfake that acked nothing (out of descriptors): no ratio, no
	// latency to compare with.
	failed := ombRun("kfake", 20000, 1000, 0, 0)
	for i := range failed.Phases {
		failed.Phases[i].ProduceRate, failed.Phases[i].Errors = 0, 100
		failed.Phases[i].Publish, failed.Phases[i].E2E = &bload.Latency{}, &bload.Latency{}
	}
	runs = append(runs, ombRun("sluice-segment", 20000, 1000, 1, 1), failed)
	// A search step above the grid raises the sustained rate; its e2e p99,
	// at a rate kfake did not run, is not compared.
	runs[4].Phases = append(runs[4].Phases, bload.OMBPhase{Name: "search-114.3%", TargetRate: 1600, ProduceRate: 1600,
		Publish: runs[4].Phases[1].Publish, E2E: &bload.Latency{Count: 10, P99: 100}})
	s := ombSections(runs, "run: test")
	for name, want := range map[string][]string{
		"targets": {
			"| sluice-segment, 100 partitions: max sustained rate >= 1.3x kfake's | 1.98x (1980 vs 1000 records/s) | yes |",
			"| sluice-pebble, 100 partitions: max sustained rate >= 1.3x kfake's | 0.00x (0 vs 1000 records/s) | no |",
			"| sluice-pebble, 100 partitions: e2e p99 below kfake's at every rate | rate-25%: 3.00 vs 2.00 ms;",
			"| sluice-segment, 10000 partitions: max sustained rate >= 1.5x kfake's | 1.60x (1600 vs 1000 records/s) | yes |",
			"| sluice-segment, 10000 partitions: e2e p99 below kfake's at every rate | every rate | yes |",
			"| sluice-segment, 10000 partitions: publish p99 at the probe <= kfake's | 5.0 vs 5.0 ms | yes |",
			"| sluice-segment, 20000 partitions: max sustained rate >= 1.5x kfake's | 1000 records/s; kfake kept no rate (500 records failed) | no comparison |",
			"| sluice-segment, 20000 partitions: e2e p99 below kfake's at every rate | kfake delivered nothing at any rate | no comparison |",
			"| sluice-segment, 20000 partitions: publish p99 at the probe <= kfake's | 5.00; kfake acked nothing (100 records failed) | no comparison |",
		},
		"headline":   {"run: test", "| sluice-segment | 100 | 2.0 | 2.0 | 1.98x |", "| kfake | 10000 |"},
		"partitions": {"| 10000 | sluice-segment | 1.4 | 1.7 |", "| 1.00 | 50 / 99 | 0 |"},
		"omb":        {"(sluice-segment): 100 partitions"},
	} {
		for _, w := range want {
			if !strings.Contains(s[name], w) {
				t.Errorf("section %s lacks %q:\n%s", name, w, s[name])
			}
		}
	}
	if strings.Contains(s["omb"], "10000 partitions") {
		t.Errorf("the omb section holds only the smallest partition count:\n%s", s["omb"])
	}
}
