package replication

import (
	"errors"
	"math/rand"
	"sync"
	"testing"
	"time"

	"github.com/sluice/sluice/engine"
)

// TestCloseDuringRound closes the partition while a round is in the engine
// and requests wait behind it: the running round completes, the queued
// requests fail with ErrClosed, and Close returns once all are released.
func TestCloseDuringRound(t *testing.T) {
	forEachBackend(t, func(t *testing.T, backend string) {
		p, cl := newPartition(t, openStore(t, backend), engine.LogConfig{}, Options{})
		more := [][]byte{batch(-1, 0, -1, 1), batch(1, 0, 0, 1), batch(-1, 0, -1, 2)}
		results, errs, release := holdRound(t, p, cl, batch(-1, 0, -1, 3), more)
		closed := make(chan error, 1)
		go func() { closed <- p.Close() }()
		waitFor(t, "Close to stop new appends", func() bool {
			p.qmu.Lock()
			defer p.qmu.Unlock()
			return p.qclosed
		})
		release()
		if err := <-closed; err != nil {
			t.Fatal(err)
		}
		if errs[0] != nil || results[0].LastOffset != 2 {
			t.Fatalf("held request: %+v %v", results[0], errs[0])
		}
		for i := 1; i < len(errs); i++ {
			if !errors.Is(errs[i], ErrClosed) {
				t.Fatalf("queued request %d: %v, want ErrClosed", i, errs[i])
			}
		}
		if cl.appends.Load() != 1 {
			t.Fatalf("%d engine appends, want 1", cl.appends.Load())
		}
	})
}

// TestConcurrentProducers runs producers that append concurrently, some
// idempotent with retries of their previous batch mixed in, and checks that
// every accepted request got distinct offsets, that retries were answered
// as duplicates with the original offsets, and that the log is dense.
func TestConcurrentProducers(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	forEachBackend(t, func(t *testing.T, backend string) {
		p, cl := newPartition(t, openStore(t, backend), engine.LogConfig{}, Options{})
		const producers, requests = 6, 60
		type got struct{ first, last int64 }
		var mu sync.Mutex
		owner := map[int64]int{} // offset -> producer
		var wg sync.WaitGroup
		for g := 0; g < producers; g++ {
			rng := rand.New(rand.NewSource(seed + int64(g)))
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				pid := int64(g) // producer 0 is not idempotent
				if g == 0 {
					pid = -1
				}
				var seq int32
				var prev []byte
				var prevRes got
				for i := 0; i < requests; i++ {
					if prev != nil && rng.Intn(4) == 0 {
						res, err := p.Append(ctx, append([]byte(nil), prev...), -1)
						if err != nil || !res.Duplicate || res.BaseOffset != prevRes.first || res.LastOffset != prevRes.last {
							t.Errorf("producer %d retry: %+v %v, want duplicate of %+v", g, res, err, prevRes)
							return
						}
						continue
					}
					n := 1 + rng.Intn(5)
					b := batch(pid, 0, seq, n)
					if pid >= 0 {
						seq += int32(n)
					}
					res, err := p.Append(ctx, append([]byte(nil), b...), 1)
					if err != nil || res.Duplicate || res.LastOffset-res.BaseOffset != int64(n-1) {
						t.Errorf("producer %d: %+v %v", g, res, err)
						return
					}
					if pid >= 0 {
						prev, prevRes = b, got{res.BaseOffset, res.LastOffset}
					}
					mu.Lock()
					for o := res.BaseOffset; o <= res.LastOffset; o++ {
						if h, dup := owner[o]; dup {
							t.Errorf("offset %d given to producers %d and %d", o, h, g)
						}
						owner[o] = g
					}
					mu.Unlock()
				}
			}(g)
		}
		wg.Wait()
		next := int64(0)
		for _, b := range readAll(t, p) {
			if b.BaseOffset() != next {
				t.Fatalf("log not dense at %d (want %d)", b.BaseOffset(), next)
			}
			next = b.NextOffset()
		}
		if next != int64(len(owner)) || p.HighWatermark() != next {
			t.Fatalf("end %d, HW %d, %d offsets handed out", next, p.HighWatermark(), len(owner))
		}
		t.Logf("%d engine appends", cl.appends.Load())
	})
}
