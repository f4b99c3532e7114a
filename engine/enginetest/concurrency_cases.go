package enginetest

import (
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice/sluice/engine"
)

func concurrencyCases() []testCase {
	return []testCase{
		{"ConcurrentReadersDuringAppends", testConcurrentReaders},
	}
}

// testConcurrentReaders runs readers while one writer appends (run it with
// -race). Each reader checks what the engine.Log doc promises: a read sees
// only whole, valid batches with dense offsets starting at the batch that
// holds the requested offset, and an offset below an EndOffset the reader
// has observed is readable (the end is published after the data). One
// reader tails the log; the others read random offsets below the end.
// The seed is printed so a failure can be replayed.
func testConcurrentReaders(t *testing.T, h *harness) {
	l := h.create(engine.LogConfig{SegmentBytes: 4096})
	const appends = 300
	seed := rand.Int63()
	t.Logf("seed %d", seed)

	var done atomic.Bool
	var appended atomic.Int64 // appends completed by the writer
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	fail := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}

	wg.Add(1)
	go func() { // the writer
		defer wg.Done()
		defer done.Store(true)
		r := rand.New(rand.NewSource(seed))
		for i := 0; i < appends; i++ {
			n := 1 + r.Intn(2)
			var buf []byte
			for j := 0; j < n; j++ {
				buf = append(buf, MakeBatch(1+r.Intn(4), baseTs+int64(i), r.Intn(300), byte(i))...)
			}
			if _, err := l.Append(buf, leader(int32(i/100))); err != nil {
				fail(fmt.Errorf("append %d: %w", i, err))
				return
			}
			appended.Add(1)
		}
	}()

	reader := func(id int, tail bool) {
		defer wg.Done()
		r := rand.New(rand.NewSource(seed + int64(id)))
		pos := int64(0)
		// Reads are bounded by maxReads; waiting for the writer (which is
		// itself bounded) sleeps briefly so that on a small machine the
		// readers do not starve it.
		const maxReads = 200_000
		for reads := 0; reads < maxReads; {
			finished := done.Load()
			end := l.EndOffset()
			off := pos
			if !tail && end > 0 {
				off = r.Int63n(end)
			}
			if off >= end {
				if finished {
					return
				}
				time.Sleep(50 * time.Microsecond)
				continue
			}
			reads++
			s, err := l.Read(off, 1+r.Intn(8192), -1)
			if err != nil {
				fail(fmt.Errorf("reader %d: Read(%d) below observed end %d: %w", id, off, end, err))
				return
			}
			data, err := s.AppendTo(nil)
			s.Release()
			if err != nil {
				fail(fmt.Errorf("reader %d: slice read: %w", id, err))
				return
			}
			bs, err := checkWhole(data, off)
			if err != nil {
				fail(fmt.Errorf("reader %d: Read(%d): %w", id, off, err))
				return
			}
			if len(bs) == 0 {
				fail(fmt.Errorf("reader %d: Read(%d) below observed end %d returned nothing", id, off, end))
				return
			}
			if tail {
				pos = bs[len(bs)-1].last + 1
			} else if finished {
				return
			}
		}
		fail(fmt.Errorf("reader %d: gave up after %d reads at %d (end %d, writer done %v after %d of %d appends)", id, maxReads, pos, l.EndOffset(), done.Load(), appended.Load(), appends))
	}
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go reader(i, i == 0)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	data := scan(t, l, 0)
	checkDense(t, "final scan", parseBatches(t, "final scan", data), 0)
}

// checkWhole checks data holds whole valid dense batches from offset.
func checkWhole(data []byte, offset int64) ([]batchInfo, error) {
	bs, err := batchesOf(data)
	if err != nil {
		return nil, err
	}
	return bs, denseFrom(bs, offset)
}
