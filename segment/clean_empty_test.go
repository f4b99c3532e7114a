package segment

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/record"
)

// fillRounds appends rounds of every key in keys (batches of 4 records),
// values naming the round, and returns the latest value per key.
func fillRounds(t *testing.T, l engine.Log, from, rounds, keys int, ts int64, latest map[string]string) {
	t.Helper()
	for r := from; r < from+rounds; r++ {
		for k := 0; k < keys; k += 4 {
			var recs []record.BuildRecord
			for j := k; j < k+4 && j < keys; j++ {
				key, val := fmt.Sprintf("k%03d", j), fmt.Sprintf("r%d-%03d-%080d", r, j, 0)
				recs = append(recs, record.BuildRecord{Key: []byte(key), Value: []byte(val), Timestamp: ts})
				latest[key] = val
			}
			b := record.AppendBatch(nil, record.BatchOptions{ProducerID: -1, BaseSequence: -1}, recs)
			if _, err := l.Append(b, engine.AppendOptions{AssignOffsets: true, LeaderEpoch: 1}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestCleanEmptyGroup: when every record of a group is superseded the
// cleaner keeps no batch of it (only a round's last batch and producers'
// last batches stay emptied, as in Kafka), so the group is replaced by an
// empty segment. Its .swap is empty: a crash after the commit point
// completes it over [base, base] and keeps the group's other segments as
// they were, and a reopen finds the log whole (same start and end, every
// key's latest value, offsets increasing), at every crash step.
func TestCleanEmptyGroup(t *testing.T) {
	defer func() { crashAt = nil }()
	for step := 0; step <= 8; step++ {
		t.Run(fmt.Sprint("crash=", step), func(t *testing.T) {
			dir := t.TempDir()
			clock := newClock()
			s := openStore(t, dir, clock)
			cfg := compactCfg()
			l, err := s.CreateLog(tp, cfg)
			if err != nil {
				t.Fatal(err)
			}
			latest := map[string]string{}
			// 40 keys of ~100 bytes a round: each 4 KiB segment holds
			// about one round, superseded by the next.
			fillRounds(t, l, 0, 6, 40, clock.Now().UnixMilli(), latest)
			// A first round leaves small and empty segments, which
			// the second round's first group merges (so that a crash
			// can come between the removals of its segments).
			if _, err := clean(t, l, cfg, clock.Now()); err != nil {
				t.Fatal(err)
			}
			fillRounds(t, l, 6, 6, 40, clock.Now().UnixMilli(), latest)
			start, end := l.StartOffset(), l.EndOffset()
			if step > 0 {
				crashAt = func(n int) bool { return n == step }
			}
			res, err := clean(t, l, cfg, clock.Now())
			crashAt = nil
			switch {
			case step == 0 && err != nil:
				t.Fatal(err)
			case step > 0 && !errors.Is(err, errCrashed):
				t.Fatalf("clean: %v, want the test crash", err)
			}
			if step == 0 {
				// The first group, several segments, is all
				// superseded: one empty segment at the log start,
				// and no empty batch left but (at most) the round's
				// last.
				segs := l.(*Log).InactiveSegments()
				if segs[0].Base != start || segs[0].Bytes != 0 || res.Groups >= res.Segments {
					t.Fatalf("first segment after cleaning: %+v, want an empty one at %d for a group of several (result %+v)", segs[0], start, res)
				}
				data := readAllBytes(t, l)
				for pos := 0; pos < len(data); {
					b := record.Batch(data[pos:])
					if b.RecordCount() == 0 && b.NextOffset() != res.Progress.FirstUncleanable {
						t.Fatalf("empty batch [%d, %d] kept; only the round's last (ending at %d) may be", b.BaseOffset(), b.LastOffset(), res.Progress.FirstUncleanable-1)
					}
					pos += b.Size()
				}
				s.Close()
			}
			s2 := openStore(t, dir, clock)
			defer s2.Close()
			l2, err := s2.OpenLog(tp, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if l2.StartOffset() != start || l2.EndOffset() != end {
				t.Fatalf("after reopen: [%d, %d), want [%d, %d)", l2.StartOffset(), l2.EndOffset(), start, end)
			}
			got := map[string]string{}
			for _, r := range readRecords(t, l2) {
				got[r.key] = r.value
			}
			for k, v := range latest {
				if got[k] != v {
					t.Fatalf("after reopen: key %s is %q, want %q", k, got[k], v)
				}
			}
			if leftovers, _ := filepath.Glob(filepath.Join(dir, "*", "*.swap")); len(leftovers) > 0 {
				t.Fatalf("after reopen: %v left", leftovers)
			}
		})
	}
}

// readAllBytes reads every batch from the log start (reads in gaps go on
// at the next batch).
func readAllBytes(t *testing.T, l engine.Log) []byte {
	t.Helper()
	var all []byte
	for off := l.StartOffset(); off < l.EndOffset(); {
		data := sliceBytes(t, l, off, 64<<10, -1)
		if len(data) == 0 {
			break
		}
		all = append(all, data...)
		for pos := 0; pos < len(data); {
			b := record.Batch(data[pos:])
			off = b.NextOffset()
			pos += b.Size()
		}
	}
	return all
}
