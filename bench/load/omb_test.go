package load

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestParseFractions(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []float64
		bad  bool
	}{
		{in: "25,50,75,100", want: []float64{0.25, 0.5, 0.75, 1}},
		{in: " 10% , 200", want: []float64{0.1, 2}},
		{in: "0", bad: true},
		{in: "50,,100", bad: true},
		{in: "x", bad: true},
		{in: "2000", bad: true},
		{in: "none", want: []float64{}},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseFractions(tc.in)
			if tc.bad {
				if err == nil {
					t.Fatalf("ParseFractions(%q) = %v, want an error", tc.in, got)
				}
				return
			}
			if err != nil || len(got) != len(tc.want) || got == nil {
				t.Fatalf("ParseFractions(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("ParseFractions(%q) = %v, want %v", tc.in, got, tc.want)
				}
			}
		})
	}
}

func TestOMBDefaults(t *testing.T) {
	c, err := OMBConfig{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if c.Partitions != 100 || c.RecordSize != 1024 || c.Producers != 4 || c.Consumers != 4 ||
		c.Duration != 60*time.Second || len(c.Fractions) != 4 || !strings.HasPrefix(c.Topic, "omb-") ||
		c.Compression != "none" {
		t.Fatalf("defaults: %+v", c)
	}
	for name, bad := range map[string]OMBConfig{
		"record size":  {RecordSize: 8},
		"fraction":     {Fractions: []float64{0}},
		"negative max": {MaxRate: -1},
		"partitions":   {Partitions: -3},
		"max, no rate": {MaxRate: 1000, Fractions: []float64{}},
		"compression":  {Compression: "brotli"},
	} {
		if _, err := bad.withDefaults(); err == nil {
			t.Errorf("%s: no error for %+v", name, bad)
		}
	}
}

// TestParseProcStatCPU: utime and stime are counted after the command
// name's last ')', which may hold spaces and parentheses.
func TestParseProcStatCPU(t *testing.T) {
	line := "4242 (sluice (x) y) S 1 4242 4242 0 -1 4194560 1234 0 0 0 250 150 0 0 20 0 12 0 100 0 0"
	got, err := parseProcStatCPU(line)
	if err != nil || got != 4.0 {
		t.Fatalf("parseProcStatCPU = %v, %v; want 4 s (250+150 ticks)", got, err)
	}
	for _, bad := range []string{"", "1 (x) S 1 2", "1 (x) S 1 2 3 4 5 6 7 8 9 10 a b"} {
		if _, err := parseProcStatCPU(bad); err == nil {
			t.Errorf("parseProcStatCPU(%q): no error", bad)
		}
	}
	if cpu, err := procCPU(0); cpu != 0 || err != nil {
		t.Errorf("procCPU(0) = %v, %v; want 0, nil", cpu, err)
	}
}

func TestOMBPhaseRatesAndTable(t *testing.T) {
	p := OMBPhase{Name: "rate-50%", TargetRate: 1000, Seconds: 2, Produced: 2000, Consumed: 1990, ClientCPU: 1}
	p.setRates(2_000_000_000, 1_990_000_000, 3)
	if p.ProduceRate != 1000 || p.ConsumeRate != 995 || p.ProduceMBps != 1000 || p.CPUPerGB != 1.5 {
		t.Fatalf("rates: %+v", p)
	}
	var h Histogram
	for i := int64(1); i <= 1000; i++ {
		h.Record(i * 1e6)
	}
	p.Publish, p.E2E = latencyOf(&h), latencyOf(&Histogram{})
	res := &OMBResult{Target: "sluice-segment", Topic: "t", Partitions: 100, RecordSize: 1024, Producers: 4, Consumers: 4, MaxRate: 2000,
		Phases: []OMBPhase{p, {Name: "probe", Publish: latencyOf(&Histogram{}), E2E: latencyOf(&Histogram{})}}}
	var b bytes.Buffer
	res.WriteTable(&b)
	out := b.String()
	for _, want := range []string{"(sluice-segment)", "| rate-50% | 1000 | 1000 | 995 | 1000.0 |", "| 1.50 | 150 / 50 | 0 |", "| probe | max |", "| - | - | - | - / - | 0 |"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "\n|") != 4 {
		t.Errorf("want a header, a rule and 2 phase rows:\n%s", out)
	}
}

func TestOMBSearchSustained(t *testing.T) {
	// A broker that keeps any rate up to 80% of the maximum and acks 90%
	// of what it is offered above that.
	const maxRate, capacity = 1000.0, 0.8
	offer := func(name string, f float64) OMBPhase {
		p := OMBPhase{Name: name, TargetRate: f * maxRate, ProduceRate: f * maxRate}
		if f > capacity {
			p.ProduceRate *= 0.9
		}
		return p
	}
	grid := func(fs ...float64) *OMBResult {
		res := &OMBResult{MaxRate: maxRate, Phases: []OMBPhase{{Name: "probe", ProduceRate: maxRate}}}
		for _, f := range fs {
			res.Phases = append(res.Phases, offer(fmt.Sprintf("rate-%g%%", f*100), f))
		}
		return res
	}
	for _, tc := range []struct {
		name  string
		res   *OMBResult
		steps int
		want  []float64 // fractions the search runs
	}{
		{"between 75 and 100", grid(0.25, 0.5, 0.75, 1), 3, []float64{0.875, 0.8125, 0.78125}},
		{"nothing kept", grid(0.9, 1), 2, []float64{0.45, 0.675}},
		{"everything kept", grid(0.25, 0.5), 3, nil},
		{"no fixed rates", grid(), 3, nil},
		{"no steps", grid(0.5, 1), 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ran []float64
			before := len(tc.res.Phases)
			err := searchSustained(tc.res, tc.steps, func(f float64) (OMBPhase, error) {
				ran = append(ran, f)
				return offer("search", f), nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(ran) != fmt.Sprint(tc.want) {
				t.Fatalf("ran %v, want %v", ran, tc.want)
			}
			if len(tc.res.Phases) != before+len(tc.want) {
				t.Fatalf("%d phases, want %d", len(tc.res.Phases), before+len(tc.want))
			}
		})
	}
	// A failing step ends the search with its phase kept in the result.
	res := grid(0.5, 1)
	boom := errors.New("interrupted")
	err := searchSustained(res, 3, func(f float64) (OMBPhase, error) { return offer("search", f), boom })
	if !errors.Is(err, boom) || len(res.Phases) != 4 {
		t.Fatalf("err %v, %d phases", err, len(res.Phases))
	}
}

func TestOMBPhaseKept(t *testing.T) {
	for _, tc := range []struct {
		p    OMBPhase
		want bool
	}{
		{OMBPhase{TargetRate: 1000, ProduceRate: 950}, true},
		{OMBPhase{TargetRate: 1000, ProduceRate: 949}, false},
		{OMBPhase{TargetRate: 0, ProduceRate: 5000}, false}, // the probe has no target
	} {
		if got := tc.p.Kept(); got != tc.want {
			t.Errorf("%+v: Kept %v, want %v", tc.p, got, tc.want)
		}
	}
}
