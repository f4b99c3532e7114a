package segment

import (
	"math/rand"
	"path/filepath"
	"testing"
)

// TestLogStartBelowLocalStart: the log start offset of a tiered log
// (Kafka's logStartOffset, below the first local offset) survives a close
// and reopen through log-start-offset-checkpoint; moving only the local
// start keeps it, moving the log start (DeleteBefore, a restart) drops it,
// and a log whose owner never sets it checkpoints its local start as
// before. Each case fills a log of several segments, acts on it, and checks
// StartOffset, LogStartOffset and the checkpoint before and after a reopen.
func TestLogStartBelowLocalStart(t *testing.T) {
	cases := []struct {
		name string
		act  func(t *testing.T, l *Log, base int64) (local, start int64)
	}{
		{"local retention keeps the log start", func(t *testing.T, l *Log, base int64) (int64, int64) {
			mustDo(t, l.DeleteLocalBefore(base))
			return base, 0
		}},
		{"raised below the local start", func(t *testing.T, l *Log, base int64) (int64, int64) {
			mustDo(t, l.DeleteLocalBefore(base))
			mustDo(t, l.RaiseLogStartOffset(base/2))
			return base, base / 2
		}},
		{"DeleteBefore moves both", func(t *testing.T, l *Log, base int64) (int64, int64) {
			mustDo(t, l.DeleteLocalBefore(base))
			mustDo(t, l.RaiseLogStartOffset(base/2))
			mustDo(t, l.DeleteBefore(base+1))
			return base + 1, base + 1
		}},
		{"set at the local start follows it", func(t *testing.T, l *Log, base int64) (int64, int64) {
			mustDo(t, l.DeleteLocalBefore(base))
			mustDo(t, l.RaiseLogStartOffset(base))
			mustDo(t, l.DeleteBefore(base+2))
			return base + 2, base + 2
		}},
		{"not tiered: DeleteBefore mid-segment", func(t *testing.T, l *Log, base int64) (int64, int64) {
			mustDo(t, l.DeleteBefore(base+1))
			return base + 1, base + 1
		}},
		{"never lowered, never raised from the local start", func(t *testing.T, l *Log, base int64) (int64, int64) {
			mustDo(t, l.RaiseLogStartOffset(base/2)) // not below the local start yet: nothing
			mustDo(t, l.DeleteLocalBefore(base))
			mustDo(t, l.RaiseLogStartOffset(base/2))
			mustDo(t, l.RaiseLogStartOffset(base/4))
			return base, base / 2
		}},
		{"restart with the leader's log start", func(t *testing.T, l *Log, base int64) (int64, int64) {
			mustDo(t, l.TruncateFullyAndStartAtWithLogStart(5000, base))
			return 5000, base
		}},
		{"restart drops it", func(t *testing.T, l *Log, base int64) (int64, int64) {
			mustDo(t, l.DeleteLocalBefore(base))
			mustDo(t, l.TruncateFullyAndStartAt(5000))
			return 5000, 5000
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openStore(t, dir, nil)
			el, err := s.CreateLog(tp, testCfg())
			if err != nil {
				t.Fatal(err)
			}
			l := el.(*Log)
			fill(t, l, rand.New(rand.NewSource(1)), 60, 0)
			if len(l.segs) < 3 {
				t.Fatalf("%d segments, want several", len(l.segs))
			}
			local, start := c.act(t, l, l.segs[1].base)
			check := func(when string, l *Log) {
				t.Helper()
				if got := l.StartOffset(); got != local {
					t.Errorf("%s: local start %d, want %d", when, got, local)
				}
				if got := l.LogStartOffset(); got != start {
					t.Errorf("%s: log start %d, want %d", when, got, start)
				}
			}
			check("before reopen", l)
			ckpt := func(when string) {
				t.Helper()
				m, err := readOffsetCheckpoint(filepath.Join(dir, logStartOffsetFile))
				if err != nil {
					t.Fatal(err)
				}
				if m[tp] != start {
					t.Errorf("%s: %s holds %d, want the log start %d", when, logStartOffsetFile, m[tp], start)
				}
			}
			ckpt("written by the change") // durable before any close: a crash keeps it
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			ckpt("after close")
			s = openStore(t, dir, nil)
			defer s.Close()
			el, err = s.OpenLog(tp, testCfg())
			if err != nil {
				t.Fatal(err)
			}
			check("after reopen", el.(*Log))
		})
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
