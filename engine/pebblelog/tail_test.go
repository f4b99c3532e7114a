package pebblelog

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/record"
)

// bothReads reads offset from the tail index and through the iterator,
// as Read does, and returns both answers' bytes (tailOK: the index
// answered; mem: from the tail cache's copy, not the file).
func bothReads(t *testing.T, l *Log, offset int64, maxBytes int, upTo int64) (tail []byte, tailOK, mem bool, iter []byte) {
	t.Helper()
	l.mu.RLock()
	end, size, d := l.end, l.size, l.df
	l.mu.RUnlock()
	if d == nil {
		return nil, false, false, nil
	}
	zf, _, err := d.acquire(false)
	if err != nil {
		t.Fatal(err)
	}
	defer zf.Release()
	ts, ok := l.readTail(d, zf, offset, maxBytes, upTo)
	if ok {
		_, _, _, isFile := ts.File()
		mem = ts.Len() > 0 && !isFile
		if tail, err = ts.AppendTo(nil); err != nil {
			t.Fatal(err)
		}
		ts.Release()
	}
	is, _, err := l.read(d, zf, offset, maxBytes, upTo, end, size)
	if err != nil {
		t.Fatal(err)
	}
	if iter, err = is.AppendTo(nil); err != nil {
		t.Fatal(err)
	}
	is.Release()
	return tail, ok, mem, iter
}

// TestTailReadsMatchIterator: over random appends (with offset gaps, as a
// follower of a compacted leader writes), truncations, retention and
// restarts, every read the tail index answers returns the bytes the
// iterator's path returns, for every offset of the log, several read
// sizes and upTo bounds; and the index answers reads at the tail, most
// of them from the tail cache's copy of the file's last bytes, which
// truncations and retention drop.
func TestTailReadsMatchIterator(t *testing.T) {
	s := open(t, t.TempDir())
	defer s.Close()
	el, err := s.CreateLog(pid, engine.LogConfig{SegmentBytes: 600})
	if err != nil {
		t.Fatal(err)
	}
	l := el.(*Log)
	rng := rand.New(rand.NewPCG(33, 1))
	var bases []int64 // the batches' base offsets, ascending
	hits, memHits, reads := 0, 0, 0
	for step := 0; step < 400; step++ {
		switch op := rng.IntN(20); {
		case op < 14: // append 1-3 batches, sometimes past a gap
			var bs []byte
			next := l.EndOffset()
			for range 1 + rng.IntN(3) {
				if rng.IntN(4) == 0 {
					next += int64(1 + rng.IntN(5))
				}
				n := 1 + rng.IntN(3)
				b := batch(n, 1000+next, "v")
				record.Batch(b).SetBaseOffset(next)
				bases = append(bases, next)
				bs = append(bs, b...)
				next += int64(n)
			}
			if _, err := l.Append(bs, engine.AppendOptions{}); err != nil {
				t.Fatalf("step %d: append: %v", step, err)
			}
		case op < 16 && len(bases) > 0: // truncate at a batch's base
			k := rng.IntN(len(bases))
			if bases[k] < l.StartOffset() {
				continue
			}
			if err := l.Truncate(bases[k]); err != nil {
				t.Fatalf("step %d: truncate to %d: %v", step, bases[k], err)
			}
			bases = bases[:k]
		case op < 19 && len(bases) > 0: // retention
			to := bases[rng.IntN(len(bases))]
			if err := l.DeleteBefore(to); err != nil {
				t.Fatalf("step %d: delete before %d: %v", step, to, err)
			}
		case op == 19: // restart somewhere past the end
			at := l.EndOffset() + int64(rng.IntN(10))
			if err := l.TruncateFullyAndStartAt(at); err != nil {
				t.Fatal(err)
			}
			bases = bases[:0]
		}
		for off := l.StartOffset(); off < l.EndOffset(); off++ {
			for _, maxBytes := range []int{1, 250, 1 << 20} {
				for _, upTo := range []int64{-1, off + 1 + int64(rng.IntN(8))} {
					tail, ok, mem, iter := bothReads(t, l, off, maxBytes, upTo)
					reads++
					if !ok {
						continue
					}
					hits++
					if mem {
						memHits++
					}
					if !bytes.Equal(tail, iter) {
						t.Fatalf("step %d: read at %d (max %d, upTo %d): tail index %d bytes, iterator %d", step, off, maxBytes, upTo, len(tail), len(iter))
					}
				}
			}
		}
	}
	if hits < reads/4 || memHits < hits/2 {
		t.Fatalf("the tail index answered %d of %d reads, %d from memory", hits, reads, memHits)
	}
	t.Logf("the tail index answered %d of %d reads, %d from memory", hits, reads, memHits)
}
