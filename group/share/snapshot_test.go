package share

import (
	"math"
	"testing"
)

func TestSnapshotRestoreRedeliversOnlyUnacknowledged(t *testing.T) {
	cfg := testConfig()
	p := New(100)
	p.Acquire("m", t0, 10, 200, cfg) // 100..109
	p.Acknowledge("m", t0, []AckBatch{
		{First: 101, Last: 102, Types: []AckType{AckAccept}},
		{First: 104, Last: 104, Types: []AckType{AckReject}},
		{First: 105, Last: 105, Types: []AckType{AckRelease}},
	}, false, cfg)
	s := p.Snapshot()
	q := Restore(s, 1000)
	if q.Start() != 100 || q.Next() != 110 {
		t.Fatalf("restored start %d next %d", q.Start(), q.Next())
	}
	// Everything not acknowledged comes back, with its delivery counted.
	got := q.Acquire("n", t0, 100, 110, cfg)
	want := []Range{{100, 100, 2}, {103, 103, 2}, {105, 109, 2}}
	if len(got) != len(want) {
		t.Fatalf("reacquired %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("reacquired %v, want %v", got, want)
		}
	}
}

// FuzzRestore checks that Restore never panics, keeps its invariants
// (start <= next, in flight within the bound, first record unfinished) and
// that a restored partition's snapshot restores to the same snapshot.
func FuzzRestore(f *testing.F) {
	f.Add(int64(0), int64(0), int64(5), int8(2), int16(1), int64(7), int64(9), int8(0), int16(3))
	f.Add(int64(10), int64(math.MinInt64), int64(math.MaxInt64), int8(4), int16(-1), int64(3), int64(1), int8(9), int16(0))
	f.Fuzz(func(t *testing.T, start, f1, l1 int64, s1 int8, c1 int16, f2, l2 int64, s2 int8, c2 int16) {
		if start < 0 {
			return
		}
		s := Snapshot{StartOffset: start, Batches: []StateBatch{
			{First: f1, Last: l1, DeliveryState: RecordState(s1), DeliveryCount: c1},
			{First: f2, Last: l2, DeliveryState: RecordState(s2), DeliveryCount: c2},
		}}
		p := Restore(s, 64)
		if p.Start() < start || p.InFlight() > 64 {
			t.Fatalf("start %d in flight %d", p.Start(), p.InFlight())
		}
		if st, _, ok := p.Record(p.Start()); ok && (st == Acknowledged || st == Archived) {
			t.Fatalf("first record %v", st)
		}
		s2nd := p.Snapshot()
		q := Restore(s2nd, 64)
		s3rd := q.Snapshot()
		if s2nd.StartOffset != s3rd.StartOffset || len(s2nd.Batches) != len(s3rd.Batches) {
			t.Fatalf("unstable: %+v vs %+v", s2nd, s3rd)
		}
		for i := range s2nd.Batches {
			if s2nd.Batches[i] != s3rd.Batches[i] {
				t.Fatalf("unstable: %+v vs %+v", s2nd, s3rd)
			}
		}
	})
}
