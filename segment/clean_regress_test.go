package segment

import (
	"errors"
	"fmt"
	"math/rand"
	"testing"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/record"
)

func oneRec(val string) []byte {
	return record.AppendBatch(nil, record.BatchOptions{ProducerID: -1, BaseSequence: -1},
		[]record.BuildRecord{{Key: []byte("k"), Value: []byte(val), Timestamp: 1000}})
}

// Found in review: a truncation inside a group's segment, then other data
// until the log rolls at the same boundary (same segment objects, cut in
// place): Commit must conflict, not bring the truncated records back.
func TestCleanCommitSeesInPlaceTruncation(t *testing.T) {
	s := openStore(t, t.TempDir(), nil)
	defer s.Close()
	cfg := compactCfg()
	cfg.SegmentBytes = int64(4 * len(oneRec("old-00")))
	l, err := s.CreateLog(tp, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 12; i++ {
		if _, err := l.Append(oneRec(fmt.Sprintf("old-%02d", i)), engine.AppendOptions{AssignOffsets: true, LeaderEpoch: 1}); err != nil {
			t.Fatal(err)
		}
	}
	old := sliceBytes(t, l, 4, 1<<20, 8)
	w, err := l.(*Log).ReplaceSegments(4, 8)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	if err := l.Truncate(6); err != nil {
		t.Fatal(err)
	}
	for i := 6; i < 12; i++ {
		if _, err := l.Append(oneRec(fmt.Sprintf("new-%02d", i)), engine.AppendOptions{AssignOffsets: true, LeaderEpoch: 2}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Write(old); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(); !errors.Is(err, engine.ErrCleanConflict) {
		t.Fatalf("Commit after a truncation of its segments: %v, want ErrCleanConflict", err)
	}
	for _, r := range readRecords(t, l) {
		if r.off == 6 && r.value != "new-06" {
			t.Fatalf("offset 6 holds %q (truncated data came back)", r.value)
		}
	}
}

// A compacted, cleaned log whose cleanup.policy becomes delete, reopened.
func TestCleanedLogReopensAfterPolicyChange(t *testing.T) {
	for _, unclean := range []bool{false, true} {
		t.Run(fmt.Sprint("unclean=", unclean), func(t *testing.T) {
			dir := t.TempDir()
			clock := newClock()
			s := openStore(t, dir, clock)
			cfg := compactCfg()
			l, err := s.CreateLog(tp, cfg)
			if err != nil {
				t.Fatal(err)
			}
			fillKeyed(t, l, rand.New(rand.NewSource(1)), 600, 40, clock.Now().UnixMilli())
			if _, err := clean(t, l, cfg, clock.Now()); err != nil {
				t.Fatal(err)
			}
			before := readRecords(t, l)
			end := l.EndOffset()
			del := cfg
			del.Compact, del.Delete = false, true
			if err := l.SetConfig(del); err != nil {
				t.Fatal(err)
			}
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			if !unclean {
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			}
			s2 := openStore(t, dir, clock)
			defer s2.Close()
			l2, err := s2.OpenLog(tp, del)
			if err != nil {
				t.Fatalf("reopen as delete policy: %v", err)
			}
			got := readRecords(t, l2)
			if len(got) != len(before) || l2.EndOffset() != end {
				t.Fatalf("%d records end %d after reopen with delete policy, want %d end %d", len(got), l2.EndOffset(), len(before), end)
			}
		})
	}
}

func recAt(off int64, val string) []byte {
	b := oneRec(val)
	record.Batch(b).SetBaseOffset(off)
	return b
}

func TestCleanerDoesNotSpinOnGaps(t *testing.T) {
	s := openStore(t, t.TempDir(), nil)
	defer s.Close()
	cfg := compactCfg()
	x := len(oneRec("v"))
	cfg.SegmentBytes = int64(x*2 + x/2)
	l, err := s.CreateLog(tp, cfg)
	if err != nil {
		t.Fatal(err)
	}
	fol := engine.AppendOptions{AssignOffsets: false}
	for _, b := range [][]byte{recAt(0, "a"), recAt(10, "b")} {
		if _, err := l.Append(b, fol); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Truncate(5); err != nil {
		t.Fatal(err)
	}
	big := recAt(5, string(make([]byte, 2*x)))
	if _, err := l.Append(big, fol); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		res, err := clean(t, l, cfg, newClock().Now())
		if err != nil {
			t.Fatal(err)
		}
		// The first round cleans to the segment boundary; later ones
		// find nothing dirty instead of reading nothing forever.
		if i > 0 && res.Progress.Cleanable {
			t.Fatalf("round %d: still cleanable with nothing to clean: %+v", i, res.Progress)
		}
	}
}

func TestTruncateLowersCleanerCheckpoint(t *testing.T) {
	s := openStore(t, t.TempDir(), nil)
	defer s.Close()
	cfg := compactCfg()
	l, err := s.CreateLog(tp, cfg)
	if err != nil {
		t.Fatal(err)
	}
	fillKeyed(t, l, rand.New(rand.NewSource(1)), 600, 40, 1000)
	res, err := clean(t, l, cfg, newClock().Now())
	if err != nil {
		t.Fatal(err)
	}
	segs := l.(*Log).InactiveSegments()
	if err := l.Truncate(segs[1].Base); err != nil {
		t.Fatal(err)
	}
	if cp := l.(engine.Compactable).CleanerCheckpoint(); cp > segs[1].Base {
		t.Fatalf("cleaner checkpoint %d above the truncation point %d (cleaned to %d)", cp, segs[1].Base, res.CleanedTo)
	}
}
