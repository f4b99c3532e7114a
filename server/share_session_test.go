package server

import (
	"testing"
	"time"
)

func TestParseByDuration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"PT1H", time.Hour, true},
		{"P1DT2H3M4.5S", 26*time.Hour + 3*time.Minute + 4500*time.Millisecond, true},
		{"PT0S", 0, true},
		{"P2D", 48 * time.Hour, true},
		{"P", 0, false},
		{"PT", 0, false},
		{"1H", 0, false},
		{"PT-1H", 0, false},
		{"PT99999999999H", 0, false},
		{"PT1e12S", 0, false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseByDuration(tc.in)
			if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
				t.Fatalf("parseByDuration(%q) = %v, %v; want %v ok=%v", tc.in, got, err, tc.want, tc.ok)
			}
		})
	}
}

func TestShareByDurationReset(t *testing.T) {
	// Records stamped now (produce time); by_duration of an hour starts at
	// the first of them, of zero at the end.
	e := startShareServer(t, 3, func(c *ShareGroupConfig) { c.AutoOffsetReset = "by_duration:PT1H" })
	e.clock.add(time.Minute)
	wantRanges(t, acquired(t, e.fetch(e.client(), sfetch{member: "a", max: 10})), [3]int64{0, 2, 1})
}

func TestShareByDurationResetPastEveryRecord(t *testing.T) {
	// Two hours on, an hour back is past every record: the start is the
	// end of the log, as latest.
	e := startShareServer(t, 3, func(c *ShareGroupConfig) { c.AutoOffsetReset = "by_duration:PT1H" })
	e.clock.add(2 * time.Hour)
	cl := e.client()
	if got := acquired(t, e.fetch(cl, sfetch{member: "a", max: 10})); len(got) != 0 {
		t.Fatalf("acquired %v", got)
	}
	e.produce(1, 3)
	wantRanges(t, acquired(t, e.fetch(cl, sfetch{member: "a", epoch: 1, max: 10})), [3]int64{3, 3, 1})
}
