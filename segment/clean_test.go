package segment

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/engine/cleaner"
	"github.com/sluice/sluice/record"
)

func compactCfg() engine.LogConfig {
	c := testCfg()
	c.Compact = true
	c.DeleteRetention = time.Hour
	return c
}

type rec struct {
	off        int64
	key, value string
}

// fillKeyed appends n batches of 1-5 records with keys drawn from keys
// distinct ones and returns nothing: readAll is the reference.
func fillKeyed(t testing.TB, l engine.Log, rng *rand.Rand, n, keys int, ts int64) {
	t.Helper()
	for i := 0; i < n; i++ {
		recs := make([]record.BuildRecord, 1+rng.Intn(5))
		for j := range recs {
			k := rng.Intn(keys)
			recs[j] = record.BuildRecord{Key: []byte(fmt.Sprintf("k%03d", k)), Value: []byte(fmt.Sprintf("v%d-%d-%s", i, j, strings.Repeat("x", rng.Intn(100)))), Timestamp: ts + int64(i)}
		}
		b := record.AppendBatch(nil, record.BatchOptions{ProducerID: -1, BaseSequence: -1}, recs)
		if _, err := l.Append(b, engine.AppendOptions{AssignOffsets: true, LeaderEpoch: 1}); err != nil {
			t.Fatal(err)
		}
	}
}

// readAll reads every record from the log start, checking that batches
// and records come in strictly increasing offsets.
func readRecords(t testing.TB, l engine.Log) []rec {
	t.Helper()
	var out []rec
	var it record.Iter
	last := int64(-1)
	for off := l.StartOffset(); off < l.EndOffset(); {
		data := sliceBytes(t, l, off, 64<<10, -1)
		if len(data) == 0 {
			break
		}
		for pos := 0; pos < len(data); {
			n, err := record.ValidateStored(data[pos:])
			if err != nil {
				t.Fatalf("batch at offset %d: %v", off, err)
			}
			b := record.Batch(data[pos : pos+n])
			if b.BaseOffset() <= last && b.BaseOffset() >= off {
				t.Fatalf("batch at %d after offset %d", b.BaseOffset(), last)
			}
			for it.Reset(b); it.Next(); {
				o := it.Offset()
				if o < off {
					continue
				}
				if o <= last {
					t.Fatalf("record offset %d after %d", o, last)
				}
				last = o
				r := it.Record()
				out = append(out, rec{o, string(r.Key), string(r.Value)})
			}
			if it.Err() != nil {
				t.Fatal(it.Err())
			}
			off = b.NextOffset()
			pos += n
		}
	}
	return out
}

// checkCompacted asserts that got is before cleaned below end: each key
// at most once there, with its latest record below end, and everything
// from end on unchanged.
func checkCompacted(t testing.TB, before, got []rec, end int64) {
	t.Helper()
	latest := map[string]int64{}
	for _, r := range before {
		if r.off < end {
			latest[r.key] = r.off
		}
	}
	var want []rec
	for _, r := range before {
		if r.off >= end || latest[r.key] == r.off {
			want = append(want, r)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d records after cleaning below %d, want %d (of %d)", len(got), end, len(want), len(before))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("record %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

func clean(t testing.TB, l engine.Log, cfg engine.LogConfig, now time.Time) (cleaner.Result, error) {
	t.Helper()
	c, err := cleaner.New(1<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c.Clean(cleaner.Target{Log: l, Config: cfg, Bound: -1}, now)
}

func TestCleanSegments(t *testing.T) {
	dir := t.TempDir()
	clock := newClock()
	s := openStore(t, dir, clock)
	cfg := compactCfg()
	l, err := s.CreateLog(tp, cfg)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(1))
	fillKeyed(t, l, rng, 600, 40, clock.Now().UnixMilli())
	before := readRecords(t, l)
	segsBefore := len(l.(*Log).InactiveSegments())
	start, end := l.StartOffset(), l.EndOffset()
	res, err := clean(t, l, cfg, clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if res.CleanedTo <= res.Progress.FirstDirty || res.Groups == 0 {
		t.Fatalf("nothing cleaned: %+v", res)
	}
	got := readRecords(t, l)
	checkCompacted(t, before, got, res.CleanedTo)
	if l.StartOffset() != start || l.EndOffset() != end {
		t.Fatalf("start/end %d/%d, want %d/%d", l.StartOffset(), l.EndOffset(), start, end)
	}
	if cp := l.(engine.Compactable).CleanerCheckpoint(); cp != res.CleanedTo {
		t.Fatalf("cleaner checkpoint %d, want %d", cp, res.CleanedTo)
	}
	// Reads at every offset, in gaps too, return the first record at or
	// after it.
	for off := start; off < end; off += 7 {
		data := sliceBytes(t, l, off, 1, -1)
		if len(data) == 0 {
			t.Fatalf("empty read at %d", off)
		}
		if record.Batch(data).LastOffset() < off {
			t.Fatalf("read at %d returned a batch ending at %d", off, record.Batch(data).LastOffset())
		}
	}
	// The log goes on: appends, another round, clean and unclean reopen.
	fillKeyed(t, l, rng, 200, 40, clock.Now().UnixMilli()+1000)
	before = readRecords(t, l)
	res, err = clean(t, l, cfg, clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	got = readRecords(t, l)
	checkCompacted(t, before, got, res.CleanedTo)
	if n := len(l.(*Log).InactiveSegments()); n >= segsBefore {
		t.Fatalf("%d inactive segments after two rounds, %d before the first: cleaned segments were not merged", n, segsBefore)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, clock)
	l, err = s.OpenLog(tp, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if again := readRecords(t, l); !equalRecs(again, got) {
		t.Fatal("log differs after a clean reopen")
	}
	if cp := l.(engine.Compactable).CleanerCheckpoint(); cp != res.CleanedTo {
		t.Fatalf("cleaner checkpoint %d after reopen, want %d", cp, res.CleanedTo)
	}
	// Unclean: a second store on the same files, as after a crash,
	// recovers every segment, gaps and emptied batches included.
	s2 := openStore(t, dir, clock)
	defer s2.Close()
	l2, err := s2.OpenLog(tp, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if again := readRecords(t, l2); !equalRecs(again, got) {
		t.Fatal("log differs after recovery")
	}
	if l2.EndOffset() != l.EndOffset() {
		t.Fatalf("end %d after recovery, want %d", l2.EndOffset(), l.EndOffset())
	}
	s.Close()
}

func equalRecs(a, b []rec) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestCleanCrashAtEveryStep stops a cleaning commit at each step as a
// crash would and opens the files again: before the commit point the old
// segments come back, after it the cleaned one (with the group's segments
// past its last batch as they were), never both or neither.
func TestCleanCrashAtEveryStep(t *testing.T) {
	defer func() { crashAt = nil }()
	for step := 1; step <= 8; step++ {
		t.Run(fmt.Sprint(step), func(t *testing.T) {
			dir := t.TempDir()
			clock := newClock()
			s := openStore(t, dir, clock)
			cfg := compactCfg()
			l, err := s.CreateLog(tp, cfg)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewSource(int64(step)))
			fillKeyed(t, l, rng, 300, 25, clock.Now().UnixMilli())
			// A first round shrinks the segments, so that the second
			// rewrites groups of several.
			if _, err := clean(t, l, cfg, clock.Now()); err != nil {
				t.Fatal(err)
			}
			fillKeyed(t, l, rng, 300, 25, clock.Now().UnixMilli())
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			before := readRecords(t, l)
			end := l.EndOffset()
			crashAt = func(n int) bool { return n == step }
			res, err := clean(t, l, cfg, clock.Now())
			crashAt = nil
			if !errors.Is(err, errCrashed) {
				t.Fatalf("clean: %v, want the test crash", err)
			}
			s2 := openStore(t, dir, clock)
			defer s2.Close()
			l2, err := s2.OpenLog(tp, cfg)
			if err != nil {
				t.Fatal(err)
			}
			got := readRecords(t, l2)
			if step == 1 {
				if !equalRecs(got, before) {
					t.Fatalf("crash before the commit point: %d records, want the %d before", len(got), len(before))
				}
			} else {
				// The swap holds the first group cleaned. It may end
				// before the group's last segments (the cleaner keeps
				// no batch at a group's end) or be empty: recovery
				// then keeps those segments as they were, past the
				// swap's batches. So: a subset of the records before,
				// each at its offset, never one twice (readRecords
				// checks the order), the latest of every key kept.
				prev := map[int64]rec{}
				for _, r := range before {
					prev[r.off] = r
				}
				for _, r := range got {
					if p, ok := prev[r.off]; !ok || p != r {
						t.Fatalf("crash after the commit point: record %+v was not in the log before", r)
					}
				}
				latest := map[string]string{}
				for _, r := range before {
					latest[r.key] = r.value
				}
				gotLatest := map[string]string{}
				for _, r := range got {
					gotLatest[r.key] = r.value
				}
				for k, v := range latest {
					if gotLatest[k] != v {
						t.Fatalf("key %s: latest %q, want %q", k, gotLatest[k], v)
					}
				}
			}
			if l2.EndOffset() != end {
				t.Fatalf("end %d, want %d", l2.EndOffset(), end)
			}
			_ = res
			leftovers, _ := filepath.Glob(filepath.Join(s2.logDir(tp), "*.swap"))
			cleaned, _ := filepath.Glob(filepath.Join(s2.logDir(tp), "*.cleaned"))
			if len(leftovers)+len(cleaned) > 0 {
				t.Fatalf("leftovers after recovery: %v %v", leftovers, cleaned)
			}
			// Cleaning goes on from there.
			if _, err := clean(t, l2, cfg, clock.Now()); err != nil {
				t.Fatal(err)
			}
			// s "crashed": it is left as it is, not closed.
		})
	}
}

// TestCleanConflict: a truncation below the group voids the replacement.
func TestCleanConflict(t *testing.T) {
	s := openStore(t, t.TempDir(), nil)
	defer s.Close()
	cfg := compactCfg()
	l, err := s.CreateLog(tp, cfg)
	if err != nil {
		t.Fatal(err)
	}
	fillKeyed(t, l, rand.New(rand.NewSource(3)), 200, 10, 1000)
	segs := l.(*Log).InactiveSegments()
	w, err := l.(*Log).ReplaceSegments(segs[1].Base, segs[1].Next)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	if err := l.Truncate(segs[1].Base); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(); !errors.Is(err, engine.ErrCleanConflict) {
		t.Fatalf("Commit after truncation: %v, want ErrCleanConflict", err)
	}
	w.Abort()
	if m, _ := filepath.Glob(filepath.Join(s.logDir(tp), "*.cleaned")); len(m) > 0 {
		t.Fatalf("Abort left %v", m)
	}
	if _, err := os.Stat(segmentPath(s.logDir(tp), segs[0].Base, logSuffix)); err != nil {
		t.Fatal(err)
	}
}
