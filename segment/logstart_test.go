package segment

import (
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice/sluice/engine"
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
			s, l := filledLog(t, dir, tieredCfg(), 1)
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
			s, l = reopenCfg(t, dir, tieredCfg())
			defer s.Close()
			check("after reopen", l)
		})
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestLogStartHostileCheckpoint: a log-start-offset-checkpoint that is
// torn, of another version, with a huge or wrong count, a negative
// offset or junk never panics the store and never invents a log start:
// the tiered log below opens at its first segment, its log start unknown
// (LogStartUnknown) and answered as the local start, and no checkpoint
// written before its owner settles it (ResolveLogStartOffset) turns the
// unknown start into the local one. Once settled it is checkpointed and
// read back.
func TestLogStartHostileCheckpoint(t *testing.T) {
	cases := map[string]string{
		"torn":            "0\n2\ntopic 3 1\nother 0 ",
		"torn header":     "0\n",
		"empty":           "",
		"bad version":     "7\n1\ntopic 3 1\n",
		"huge count":      "0\n99999999999999999999\ntopic 3 1\n",
		"count too big":   "0\n1000000\ntopic 3 1\n",
		"negative count":  "0\n-1\n",
		"negative":        "0\n1\ntopic 3 -5\n",
		"junk":            "\x00\xff\x13garbage\n\n\n",
		"bad partition":   "0\n1\ntopic x 1\n",
		"too many fields": "0\n1\ntopic 3 1 9\n",
	}
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			s, l := filledLog(t, dir, tieredCfg(), 2)
			base := l.segs[1].base
			mustDo(t, l.DeleteLocalBefore(base))
			mustDo(t, l.RaiseLogStartOffset(base/2))
			mustDo(t, s.Close())
			mustDo(t, os.WriteFile(filepath.Join(dir, logStartOffsetFile), []byte(content), 0o644))

			s, l = reopenCfg(t, dir, tieredCfg())
			if l.StartOffset() != base || l.LogStartOffset() != base || !l.LogStartUnknown() {
				t.Fatalf("after a damaged checkpoint: local start %d, log start %d, unknown %v; want %d, %d, true",
					l.StartOffset(), l.LogStartOffset(), l.LogStartUnknown(), base, base)
			}
			// Another log's change rewrites the checkpoint: the unknown
			// start is left out, not written as the local start.
			other, err := s.CreateLog(engine.PartitionID{Topic: "other", Partition: 0}, tieredCfg())
			if err != nil {
				t.Fatal(err)
			}
			fill(t, other, rand.New(rand.NewSource(3)), 3, 0)
			mustDo(t, other.DeleteBefore(1))
			mustDo(t, s.Close())
			s, l = reopenCfg(t, dir, tieredCfg())
			if !l.LogStartUnknown() || l.StartOffset() != base {
				t.Fatalf("after a reopen: unknown %v, local start %d; want still unknown at %d", l.LogStartUnknown(), l.StartOffset(), base)
			}
			mustDo(t, l.ResolveLogStartOffset(3))
			mustDo(t, l.ResolveLogStartOffset(1)) // settled: no change
			mustDo(t, s.Close())
			s, l = reopenCfg(t, dir, tieredCfg())
			defer s.Close()
			if l.LogStartOffset() != 3 || l.LogStartUnknown() || l.StartOffset() != base {
				t.Fatalf("settled at 3: log start %d (unknown %v), local start %d", l.LogStartOffset(), l.LogStartUnknown(), l.StartOffset())
			}
		})
	}
}
