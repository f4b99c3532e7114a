package quota

import (
	"math"
	"testing"
	"time"
)

// fakeClock is a settable time source for the quota tests.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time          { return c.now }
func (c *fakeClock) advance(d time.Duration) { c.now = c.now.Add(d) }

// TestReplicationThrottledLists: which partitions a topic's replica list
// throttles on this broker (Kafka's parseThrottledPartitions: "*" all,
// else the partitions paired with this broker's id), and that a changed
// list applies at the next call.
func TestReplicationThrottledLists(t *testing.T) {
	r := NewReplication(ReplicationConfig{BrokerID: 2})
	for _, tc := range []struct {
		name, list string
		part       int32
		want       bool
	}{
		{"none", "", 0, false},
		{"all", "*", 7, true},
		{"all spaced", " * ", 0, true},
		{"this broker", "0:1,0:2,3:2", 3, true},
		{"other broker", "0:1,1:3", 1, false},
		{"spaces and empty entries", " 4:2 ,, 5:1", 4, true},
		{"invalid throttles nothing", "0:x", 0, false},
		{"star in a list is invalid", "*,0:2", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := r.Throttled("t", tc.list, tc.part); got != tc.want {
				t.Fatalf("Throttled(%q, %d) = %v, want %v", tc.list, tc.part, got, tc.want)
			}
		})
	}
	// The cache follows the value: a list changed to name other
	// partitions applies at once, and Forget drops it.
	if !r.Throttled("u", "1:2", 1) || r.Throttled("u", "2:2", 1) || !r.Throttled("u", "2:2", 2) {
		t.Fatal("a changed list was not re-read")
	}
	r.Forget("u")
	if r.Throttled("u", "", 2) {
		t.Fatal("an emptied list still throttles")
	}
}

// TestReplicationRate: the quota is exceeded once the SimpleRate of the
// recorded bytes passes the bound, clears as time passes, holds no bound
// by default and follows SetBound at once.
func TestReplicationRate(t *testing.T) {
	clk := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	r := NewReplication(ReplicationConfig{BrokerID: 1, Samples: 11, Window: time.Second, Now: clk.Now})
	if r.Bound() != math.MaxInt64 {
		t.Fatalf("default bound %d", r.Bound())
	}
	r.Record(100 << 20)
	if r.Exceeded() {
		t.Fatal("exceeded with no bound")
	}
	r2 := NewReplication(ReplicationConfig{BrokerID: 1, Now: clk.Now})
	r2.SetBound(1 << 20)
	// The first window counts as a whole second: 1 MiB at once is at the
	// bound, not over it.
	r2.Record(1 << 20)
	if r2.Exceeded() {
		t.Fatalf("1 MiB in the first second exceeded 1 MiB/s (rate %.0f)", r2.Rate())
	}
	r2.Record(1 << 20)
	if !r2.Exceeded() {
		t.Fatalf("2 MiB in the first second did not exceed 1 MiB/s (rate %.0f)", r2.Rate())
	}
	// 2 MiB over 2 s is the bound again.
	clk.advance(2 * time.Second)
	if r2.Exceeded() {
		t.Fatalf("still exceeded after 2 s (rate %.0f)", r2.Rate())
	}
	// A steady 1 MiB/s for 30 s stays at the bound: it is never exceeded
	// after a window's record, and the rate reads ~1 MiB/s.
	for i := 0; i < 30; i++ {
		clk.advance(time.Second)
		r2.Record(1 << 20)
	}
	if got := r2.Rate(); got < 0.9*(1<<20) || got > 1.1*(1<<20) {
		t.Fatalf("steady rate %.0f, want ~%d", got, 1<<20)
	}
	// Raising the bound clears it at once; lowering sets it.
	r2.Record(4 << 20)
	if !r2.Exceeded() {
		t.Fatal("a burst of 4 MiB did not exceed")
	}
	r2.SetBound(100 << 20)
	if r2.Exceeded() {
		t.Fatal("exceeded after the bound was raised")
	}
	// A bound of 0 is Kafka's Quota.upperBound(0): any byte of a
	// throttled replica exceeds it (a rate of 0 is acceptable, so a
	// quiet quota lets one fetch through), not "no bound".
	r2.SetBound(0)
	if !r2.Exceeded() || r2.Bound() != 0 {
		t.Fatalf("a bound of 0 is not exceeded by %.0f B/s (bound %d)", r2.Rate(), r2.Bound())
	}
	r2.SetBound(-1) // none
	if r2.Exceeded() || r2.Bound() != math.MaxInt64 {
		t.Fatal("a negative bound is not none")
	}
	// Windows older than samples × window are forgotten: even a bound of
	// 0 then lets the next fetch through.
	r2.SetBound(0)
	clk.advance(12 * time.Second)
	if r2.Exceeded() || r2.Rate() != 0 {
		t.Fatalf("old windows still count: rate %.0f", r2.Rate())
	}
	r2.Record(1)
	if !r2.Exceeded() {
		t.Fatal("a byte did not exceed a bound of 0")
	}
}

// TestReplicationNil: a nil quota (no cluster) throttles nothing.
func TestReplicationNil(t *testing.T) {
	var r *Replication
	r.Record(10)
	r.NoteSkipped(1)
	r.Forget("x")
	if r.Throttled("t", "*", 0) || r.Exceeded() || r.Rate() != 0 || r.Skipped() != 0 {
		t.Fatal("a nil quota throttles")
	}
}
