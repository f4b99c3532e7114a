package segment

import (
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice/sluice/record"
)

// TestRestartSurvivesCrash: TruncateFullyAndStartAt (above the end, inside
// the log) and Truncate below the start are durable without a clean Close:
// a copy of the files taken right after (a process crash) reopens empty at
// the new offset, with one segment named by it and no epoch history.
func TestRestartSurvivesCrash(t *testing.T) {
	for _, tc := range []struct {
		name string
		do   func(l *Log, batches [][]byte) (int64, error)
	}{
		{"full/above end", func(l *Log, _ [][]byte) (int64, error) {
			return 100_000, l.TruncateFullyAndStartAt(100_000)
		}},
		{"full/inside", func(l *Log, b [][]byte) (int64, error) {
			at := record.Batch(b[20]).BaseOffset() + 1
			return at, l.TruncateFullyAndStartAt(at)
		}},
		{"truncate below start", func(l *Log, b [][]byte) (int64, error) {
			start := record.Batch(b[30]).BaseOffset()
			if err := l.DeleteBefore(start); err != nil {
				return 0, err
			}
			return start - 5, l.Truncate(start - 5)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			noFsync(t)
			dir := t.TempDir()
			st := openStore(t, dir, nil)
			defer st.Close()
			el, err := st.CreateLog(tp, testCfg())
			if err != nil {
				t.Fatal(err)
			}
			l := el.(*Log)
			batches := fill(t, l, rand.New(rand.NewSource(7)), 40, 3)
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := st.checkpointRecoveryPoints(); err != nil {
				t.Fatal(err)
			}
			at, err := tc.do(l, batches)
			if err != nil {
				t.Fatal(err)
			}
			if l.RecoveryPoint() != at {
				t.Fatalf("recovery point %d after restart at %d", l.RecoveryPoint(), at)
			}
			crash := copyDir(t, dir)
			s2, l2 := reopen(t, crash)
			defer s2.Close()
			if l2.StartOffset() != at || l2.EndOffset() != at || l2.Size() != 0 || len(l2.LeaderEpochs()) != 0 {
				t.Fatalf("after crash: start %d end %d size %d epochs %v; want empty at %d",
					l2.StartOffset(), l2.EndOffset(), l2.Size(), l2.LeaderEpochs(), at)
			}
			if got := segBases(t, l2.dir); len(got) != 1 || got[0] != at {
				t.Fatalf("segments after crash %v, want [%d]", got, at)
			}
			more := fill(t, l2, rand.New(rand.NewSource(8)), 3, 4)
			checkLog(t, l2, more)
		})
	}
}

// TestRestartCrashMidway builds the states a crash inside
// TruncateFullyAndStartAt can leave (the new segment created, none or only
// the newest old segments removed, the start checkpoint not yet written)
// and checks that each recovers to the old log or a prefix of it: never
// to a log with a hole or with the new segment after old data.
func TestRestartCrashMidway(t *testing.T) {
	tmpl, batches := crashedLog(t, 5, false)
	logDir := func(dir string) string { return filepath.Join(dir, "topic-3") }
	bases := segBases(t, logDir(tmpl))
	end := record.Batch(batches[len(batches)-1]).LastOffset() + 1
	for removed := 0; removed < len(bases); removed++ {
		for _, at := range []int64{end + 500, bases[1] + 1, bases[1]} {
			dir := copyDir(t, tmpl)
			for _, b := range bases[len(bases)-removed:] {
				for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
					os.Remove(segmentPath(logDir(dir), b, suf))
				}
			}
			if err := os.WriteFile(segmentPath(logDir(dir), at, logSuffix), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			s, l := reopen(t, dir)
			// What is left: the old segments in front of the new
			// one (recovery cuts the log where offsets stop
			// continuing), up to the first removed one. A new segment
			// named like an old one replaced it.
			limit := end
			for _, b := range bases {
				if b >= at {
					limit = b
					break
				}
			}
			if removed > 0 {
				limit = min(limit, bases[len(bases)-removed])
			}
			var want [][]byte
			for _, b := range batches {
				if record.Batch(b).LastOffset() < limit {
					want = append(want, b)
				}
			}
			if l.StartOffset() != 0 {
				t.Fatalf("removed %d, restart at %d: start %d, want 0", removed, at, l.StartOffset())
			}
			checkLog(t, l, want)
			s.Close()
		}
	}
}
