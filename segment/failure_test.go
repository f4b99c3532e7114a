package segment

import (
	"bytes"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/internal/fsutil"
)

// TestFailureIsSticky injects one I/O failure through errorFS (each
// injection fires once, so the disk "recovers" at once) and checks that
// the log stays failed:
//
//   - every later Append and Flush, and Truncate, TruncateFullyAndStartAt,
//     DeleteBefore and ApplyRetention, return an error that errors.Is the
//     first one a caller saw, which wraps the injected error;
//   - reads still return exactly what was acknowledged (appends that
//     returned nil), and the end offset does not move;
//   - closing the log or the store returns the failure, and the store
//     writes no clean-shutdown marker;
//   - reopening (a new store on the directory, or the same store opening
//     the log again) recovers it with every acknowledged batch, nothing
//     else, and appends work again.
func TestFailureIsSticky(t *testing.T) {
	cases := []struct {
		name string
		// fail injects a failure and makes the log hit it; it returns
		// the first error a caller saw and the batches it appended
		// that must stay readable (acknowledged ones, and one written
		// whole before a failed fsync).
		fail func(t *testing.T, l *Log, fs *errorFS, rng *rand.Rand) (error, [][]byte)
	}{
		{"write torn", func(t *testing.T, l *Log, fs *errorFS, rng *rand.Rand) (error, [][]byte) {
			fs.inject(opWrite)
			_, err := l.Append(mkBatch(rng, 3, 7000, 100), engine.AppendOptions{AssignOffsets: true})
			return err, nil
		}},
		{"write torn in a later piece of a large append", func(t *testing.T, l *Log, fs *errorFS, rng *rand.Rand) (error, [][]byte) {
			// Two batches of 0.6 WriteChunk in one append (each
			// within max.message.bytes) go to the file in two
			// pwrites: the first lands whole, the second tears;
			// nothing of the append may stay readable or survive
			// recovery.
			fs.injectAfter(opWrite, 1)
			b := append(mkBatch(rng, 3, 7000, fsutil.WriteChunk/5), mkBatch(rng, 3, 7003, fsutil.WriteChunk/5)...)
			if len(b) <= fsutil.WriteChunk {
				t.Fatalf("append of %d bytes fits one pwrite", len(b))
			}
			_, err := l.Append(b, engine.AppendOptions{AssignOffsets: true})
			return err, nil
		}},
		{"write torn and truncating back fails", func(t *testing.T, l *Log, fs *errorFS, rng *rand.Rand) (error, [][]byte) {
			// The torn half batch stays in the file, past the
			// committed size: readers must not see it, recovery
			// must cut it.
			fs.inject(opWrite)
			fs.inject(opTruncate)
			_, err := l.Append(mkBatch(rng, 3, 7000, 100), engine.AppendOptions{AssignOffsets: true})
			return err, nil
		}},
		{"fsync in Flush", func(t *testing.T, l *Log, fs *errorFS, rng *rand.Rand) (error, [][]byte) {
			fs.inject(opSync)
			return l.Flush(), nil
		}},
		{"fsync with flush.messages", func(t *testing.T, l *Log, fs *errorFS, rng *rand.Rand) (error, [][]byte) {
			cfg := testCfg()
			cfg.FlushMessages = 1
			if err := l.SetConfig(cfg); err != nil {
				t.Fatal(err)
			}
			fs.inject(opSync)
			// The batch is written and published before the fsync
			// fails: Append reports the failure, but the batch is
			// readable, as in Kafka, and whole on disk, so it stays.
			b := mkBatch(rng, 1, 7000, 10)
			_, err := l.Append(b, engine.AppendOptions{AssignOffsets: true})
			return err, [][]byte{b}
		}},
		{"fsync after a roll, in the background", func(t *testing.T, l *Log, fs *errorFS, rng *rand.Rand) (error, [][]byte) {
			fs.inject(opSync)
			var acked [][]byte
			for segs := len(l.segs); ; {
				acked = append(acked, fill(t, l, rng, 1, 1)...)
				l.mu.RLock()
				rolled := len(l.segs) > segs
				l.mu.RUnlock()
				if rolled {
					break
				}
			}
			l.bg.Wait() // the roll's flush hit the injected failure
			_, err := l.Append(mkBatch(rng, 1, 7000, 10), engine.AppendOptions{AssignOffsets: true})
			return err, acked
		}},
	}
	for _, tc := range cases {
		for _, how := range []string{"store", "log", "store-after-log-close"} {
			t.Run(tc.name+"/reopen="+how, func(t *testing.T) {
				fs := newErrorFS()
				dir := t.TempDir()
				st, err := OpenFS(engine.Options{Dir: dir, Logger: quietLogger(t)}, fs)
				if err != nil {
					t.Fatal(err)
				}
				defer st.Close()
				el, err := st.CreateLog(tp, testCfg())
				if err != nil {
					t.Fatal(err)
				}
				l := el.(*Log)
				rng := rand.New(rand.NewSource(1))
				acked := fill(t, l, rng, 20, 1)
				// No background flush of a roll may take the
				// injection, and one batch past the recovery point
				// needs an fsync (the flush may have covered all).
				l.bg.Wait()
				acked = append(acked, fill(t, l, rng, 1, 1)...)
				if l.RecoveryPoint() >= l.EndOffset() {
					t.Fatalf("recovery point %d at the end %d: nothing to fsync", l.RecoveryPoint(), l.EndOffset())
				}

				if err := l.Failure(); err != nil {
					t.Fatalf("Failure before any: %v", err)
				}
				first, more := tc.fail(t, l, fs, rng)
				acked = append(acked, more...)
				injected := fs.injected()
				if len(injected) == 0 {
					t.Fatal("no failure was injected")
				}
				if !errors.Is(first, injected[0]) {
					t.Fatalf("first error %v does not wrap the injected %v", first, injected[0])
				}
				if err := l.Failure(); !errors.Is(err, first) {
					t.Fatalf("Failure() = %v, want the first failure %v", err, first)
				}
				want := bytes.Join(acked, nil)
				end := l.EndOffset()

				after := func(op string, err error) {
					t.Helper()
					if !errors.Is(err, first) {
						t.Errorf("%s after the failure: %v, want the first failure %v", op, err, first)
					}
				}
				for range 3 {
					_, err := l.Append(mkBatch(rng, 1, 9000, 20), engine.AppendOptions{AssignOffsets: true})
					after("Append", err)
					after("Flush", l.Flush())
				}
				after("Truncate", l.Truncate(l.StartOffset()+1))
				after("TruncateFullyAndStartAt", l.TruncateFullyAndStartAt(0))
				after("DeleteBefore", l.DeleteBefore(l.StartOffset()+1))
				_, err = l.ApplyRetention(time.Now())
				after("ApplyRetention", err)
				if l.EndOffset() != end {
					t.Fatalf("EndOffset moved from %d to %d on a failed log", end, l.EndOffset())
				}
				if got := readAll(t, l); !bytes.Equal(got, want) {
					t.Fatalf("reads after the failure: %d bytes, want the %d acknowledged", len(got), len(want))
				}

				switch how {
				case "store", "store-after-log-close":
					if how == "store-after-log-close" {
						// A failed log closed on its own still keeps
						// the store unclean.
						after("Log.Close", l.Close())
						if err := st.Close(); err != nil {
							t.Fatal(err)
						}
					} else {
						after("Store.Close", st.Close())
					}
					if _, err := os.Stat(filepath.Join(dir, cleanShutdownFile)); !errors.Is(err, os.ErrNotExist) {
						t.Fatalf("clean-shutdown marker after a failed log: %v", err)
					}
					st2, l2 := reopen(t, dir)
					defer st2.Close()
					checkLog(t, l2, acked)
				case "log":
					after("Log.Close", l.Close())
					l2, err := st.OpenLog(tp, testCfg())
					if err != nil {
						t.Fatal(err)
					}
					checkLog(t, l2, acked)
					if err := st.Close(); err != nil {
						t.Fatalf("Store.Close after the log recovered: %v", err)
					}
					if _, err := os.Stat(filepath.Join(dir, cleanShutdownFile)); err != nil {
						t.Fatalf("no clean-shutdown marker once the failed log recovered: %v", err)
					}
				}
			})
		}
	}
}
