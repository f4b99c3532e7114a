package replication

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/sluice/sluice/engine"
)

// step is one Append in an idempotence scenario.
type step struct {
	pid     int64
	epoch   int16
	seq     int32
	n       int
	wantErr error
	dupOf   int // 1-based index of the step this one duplicates; 0: not a duplicate
}

func TestIdempotentProducer(t *testing.T) {
	cases := []struct {
		name  string
		steps []step
	}{
		{"in order", []step{{1, 0, 0, 2, nil, 0}, {1, 0, 2, 3, nil, 0}, {1, 0, 5, 1, nil, 0}}},
		{"duplicate of each of the last 5", []step{
			{1, 0, 0, 1, nil, 0}, {1, 0, 1, 1, nil, 0}, {1, 0, 2, 1, nil, 0}, {1, 0, 3, 1, nil, 0},
			{1, 0, 4, 1, nil, 0}, {1, 0, 5, 1, nil, 0},
			{1, 0, 1, 1, nil, 2}, {1, 0, 2, 1, nil, 3}, {1, 0, 3, 1, nil, 4}, {1, 0, 4, 1, nil, 5}, {1, 0, 5, 1, nil, 6},
			{1, 0, 6, 1, nil, 0},
		}},
		{"sixth oldest is no longer a duplicate", []step{
			{1, 0, 0, 1, nil, 0}, {1, 0, 1, 1, nil, 0}, {1, 0, 2, 1, nil, 0}, {1, 0, 3, 1, nil, 0},
			{1, 0, 4, 1, nil, 0}, {1, 0, 5, 1, nil, 0},
			{1, 0, 0, 1, ErrOutOfOrderSequence, 0},
		}},
		{"gap", []step{{1, 0, 0, 2, nil, 0}, {1, 0, 3, 1, ErrOutOfOrderSequence, 0}, {1, 0, 2, 1, nil, 0}}},
		{"same sequence, different length", []step{{1, 0, 0, 2, nil, 0}, {1, 0, 0, 1, ErrOutOfOrderSequence, 0}}},
		{"old epoch", []step{{1, 2, 0, 1, nil, 0}, {1, 1, 1, 1, ErrInvalidProducerEpoch, 0}, {1, 2, 1, 1, nil, 0}}},
		{"new epoch from 0", []step{{1, 0, 0, 3, nil, 0}, {1, 1, 0, 1, nil, 0}, {1, 1, 1, 1, nil, 0}}},
		{"new epoch not from 0", []step{{1, 0, 0, 3, nil, 0}, {1, 1, 3, 1, ErrOutOfOrderSequence, 0}}},
		{"new epoch forgets old duplicates", []step{{1, 0, 0, 1, nil, 0}, {1, 1, 0, 1, nil, 0}, {1, 0, 0, 1, ErrInvalidProducerEpoch, 0}}},
		{"wrap-around", []step{
			{1, 0, math.MaxInt32 - 1, 2, nil, 0}, {1, 0, 0, 1, nil, 0}, {1, 0, math.MaxInt32 - 1, 2, nil, 1},
		}},
		{"batch spanning the wrap", []step{{1, 0, math.MaxInt32 - 1, 4, nil, 0}, {1, 0, 2, 1, nil, 0}}},
		{"unknown producer at any sequence", []step{{1, 0, 42, 1, nil, 0}, {2, 5, 7, 1, nil, 0}, {1, 0, 43, 1, nil, 0}}},
		{"producers are independent", []step{{1, 0, 0, 1, nil, 0}, {2, 0, 0, 1, nil, 0}, {1, 0, 1, 1, nil, 0}, {2, 0, 0, 1, nil, 2}}},
		{"non-idempotent batches are not checked", []step{{-1, 0, -1, 1, nil, 0}, {-1, 0, -1, 1, nil, 0}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, backend string) {
				p, cl := newPartition(t, openStore(t, backend), engine.LogConfig{}, Options{})
				runSteps(t, p, cl, tc.steps)
			})
		})
	}
}

// runSteps appends the steps one by one and checks each outcome, that a
// duplicate got its original's offsets and that it wrote nothing.
func runSteps(t *testing.T, p *Partition, cl *countingLog, steps []step) []AppendResult {
	t.Helper()
	results := make([]AppendResult, len(steps))
	for i, s := range steps {
		end, appends := p.LogEndOffset(), cl.appends.Load()
		res, err := p.Append(ctx, batch(s.pid, s.epoch, s.seq, s.n), 1)
		results[i] = res
		if !errors.Is(err, s.wantErr) || (s.wantErr == nil && err != nil) {
			t.Fatalf("step %d %+v: err %v, want %v", i+1, s, err, s.wantErr)
		}
		switch {
		case err != nil:
		case s.dupOf > 0:
			orig := results[s.dupOf-1]
			if !res.Duplicate || res.BaseOffset != orig.BaseOffset || res.LastOffset != orig.LastOffset {
				t.Fatalf("step %d: %+v, want duplicate of step %d %+v", i+1, res, s.dupOf, orig)
			}
			if p.LogEndOffset() != end || cl.appends.Load() != appends {
				t.Fatalf("step %d: duplicate was written", i+1)
			}
		default:
			if res.Duplicate || res.BaseOffset != end || res.LastOffset != end+int64(s.n)-1 {
				t.Fatalf("step %d: %+v, log end was %d", i+1, res, end)
			}
		}
	}
	return results
}

func TestProducerStateSurvivesReopen(t *testing.T) {
	cases := []struct {
		name      string
		scanBytes int64
		before    []step
		after     []step // dupOf indexes the before steps
	}{
		{"duplicate detected", 0, []step{{1, 0, 0, 1, nil, 0}, {1, 0, 1, 2, nil, 0}, {2, 3, 0, 1, nil, 0}},
			[]step{{1, 0, 1, 2, nil, 2}, {2, 3, 0, 1, nil, 3}, {1, 0, 4, 1, ErrOutOfOrderSequence, 0}, {1, 0, 3, 1, nil, 0}}},
		{"epoch remembered", 0, []step{{1, 4, 0, 1, nil, 0}},
			[]step{{1, 3, 1, 1, ErrInvalidProducerEpoch, 0}, {1, 4, 1, 1, nil, 0}}},
		{"no snapshot, no scan: producers unknown", -1, []step{{1, 4, 0, 1, nil, 0}},
			[]step{{1, 3, 9, 1, nil, 0}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, backend string) {
				st := openStore(t, backend)
				p, cl := newPartition(t, st, engine.LogConfig{}, Options{})
				// Some unrelated traffic first, so the state is not all at offset 0.
				for i := 0; i < 10; i++ {
					if _, err := p.Append(ctx, batch(-1, 0, -1, 3), 1); err != nil {
						t.Fatal(err)
					}
				}
				orig := runSteps(t, p, cl, tc.before)
				if err := p.Close(); err != nil {
					t.Fatal(err)
				}
				l, err := st.OpenLog(testID, engine.LogConfig{})
				if err != nil {
					t.Fatal(err)
				}
				if tc.scanBytes < 0 {
					// Close left a snapshot, which would be loaded.
					if err := l.(engine.SnapshotStore).DeleteSnapshotsFrom(0); err != nil {
						t.Fatal(err)
					}
				}
				cl2 := &countingLog{Log: l}
				p2, err := NewPartition(cl2, Options{ProducerScanBytes: tc.scanBytes})
				if err != nil {
					t.Fatal(err)
				}
				defer p2.Close()
				if p2.HighWatermark() != p.LogEndOffset() {
					t.Fatalf("HW %d after reopen, end was %d", p2.HighWatermark(), p.LogEndOffset())
				}

				results := append(orig, make([]AppendResult, len(tc.after))...)
				for i, s := range tc.after {
					j := len(tc.before) + i
					end := p2.LogEndOffset()
					res, err := p2.Append(ctx, batch(s.pid, s.epoch, s.seq, s.n), 1)
					results[j] = res
					if !errors.Is(err, s.wantErr) || (s.wantErr == nil && err != nil) {
						t.Fatalf("after step %d %+v: err %v, want %v", i+1, s, err, s.wantErr)
					}
					if err == nil && s.dupOf > 0 {
						o := results[s.dupOf-1]
						if !res.Duplicate || res.BaseOffset != o.BaseOffset || res.LastOffset != o.LastOffset {
							t.Fatalf("after step %d: %+v, want duplicate of %+v", i+1, res, o)
						}
					}
					if err == nil && s.dupOf == 0 && (res.Duplicate || res.BaseOffset != end) {
						t.Fatalf("after step %d: %+v", i+1, res)
					}
				}
			})
		})
	}
}

// TestRebuildWithoutSnapshotScansWholeLog checks that, with no producer
// snapshot, a producer whose batches lie far before ProducerScanBytes of
// the log end is still remembered: the rebuild reads the whole log.
func TestRebuildWithoutSnapshotScansWholeLog(t *testing.T) {
	st := openStore(t, "memory")
	p, _ := newPartition(t, st, engine.LogConfig{}, Options{})
	if _, err := p.Append(ctx, batch(1, 0, 0, 1), 1); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200; i++ {
		if _, err := p.Append(ctx, batch(-1, 0, -1, 10), 1); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.Append(ctx, batch(2, 0, 0, 1), 1); err != nil {
		t.Fatal(err)
	}
	p.Close()
	l, err := st.OpenLog(testID, engine.LogConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.(engine.SnapshotStore).DeleteSnapshotsFrom(0); err != nil {
		t.Fatal(err)
	}
	p2, err := NewPartition(l, Options{ProducerScanBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	if ps := p2.producers.producers; ps[1] == nil || ps[2] == nil {
		t.Fatalf("producers after a rebuild without snapshots: %v", ps)
	}
}

// TestProducersExpire: a producer idle for producer.id.expiration.ms is
// forgotten (its next batch is accepted at any sequence, as an unknown
// producer's), one that appended recently is kept, and the sweep never
// drops an entry of the round in progress.
func TestProducersExpire(t *testing.T) {
	const minute = int64(60_000)
	s := newProducerState(time.Minute)
	at := func(b []byte, next, nowMs int64) error {
		_, _, err := s.check(b, next, nowMs)
		s.commit()
		return err
	}
	if err := at(batch(1, 0, 0, 1), 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := at(batch(2, 0, 0, 1), 1, minute/2); err != nil {
		t.Fatal(err)
	}
	// Known producer 1 at a gap: refused while it is remembered.
	if err := at(batch(1, 0, 5, 1), 2, minute/2); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("gap of a known producer: %v", err)
	}
	if err := at(batch(3, 0, 0, 1), 2, minute+minute/10); err != nil {
		t.Fatal(err)
	}
	if s.producers[1] != nil || s.producers[2] == nil || s.producers[3] == nil {
		t.Fatalf("after 66 s: producers %v (want 2 and 3)", s.producers)
	}
	if err := at(batch(1, 0, 5, 1), 3, minute+minute/10); err != nil {
		t.Fatalf("an expired producer is unknown, accepted at any sequence: %v", err)
	}
	// Never expires with expiration 0.
	s = newProducerState(0)
	at(batch(1, 0, 0, 1), 0, 0)
	at(batch(2, 0, 0, 1), 1, 1<<50)
	if s.producers[1] == nil {
		t.Fatal("expired with producer.id.expiration.ms unset")
	}
}
