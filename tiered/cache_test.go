package tiered

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sluice/sluice/record"
)

// batches builds n batches of 2 records each, from offset base, each of
// the same size.
func batches(base int64, n int) []byte {
	var b []byte
	for i := 0; i < n; i++ {
		b = record.AppendBatch(b, record.BatchOptions{BaseOffset: base + int64(2*i), ProducerID: -1},
			[]record.BuildRecord{{Value: []byte(fmt.Sprintf("v%04d", 2*i))}, {Value: []byte(fmt.Sprintf("v%04d", 2*i+1))}})
	}
	return b
}

func TestSliceBatches(t *testing.T) {
	b := batches(100, 4) // offsets 100..107, batches at 100, 102, 104, 106
	size := record.Batch(b).Size()
	for _, tc := range []struct {
		name        string
		offset      int64
		maxBytes    int
		wantFirst   int64
		wantBatches int
	}{
		{"from the first", 100, 1 << 20, 100, 4},
		{"inside a batch", 103, 1 << 20, 102, 3},
		{"bounded", 100, 2 * size, 100, 2},
		{"at least one", 104, 1, 104, 1},
		{"last offset", 107, 1 << 20, 106, 1},
		{"past the end", 108, 1 << 20, -1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := sliceBatches(b, tc.offset, tc.maxBytes)
			if len(got) != tc.wantBatches*size {
				t.Fatalf("%d bytes, want %d batches of %d", len(got), tc.wantBatches, size)
			}
			if tc.wantBatches > 0 && record.Batch(got).BaseOffset() != tc.wantFirst {
				t.Fatalf("first batch at %d, want %d", record.Batch(got).BaseOffset(), tc.wantFirst)
			}
		})
	}
}

// TestCacheBounded: chunks and indexes share one byte budget, the least
// recently used go first, a chunk serves any offset it holds, and forget
// drops all of a segment.
func TestCacheBounded(t *testing.T) {
	chunk := batches(0, 4)
	c := newCache(int64(2*len(chunk) + 16))
	a, b, d := UUID{1}, UUID{2}, UUID{3}
	c.putChunk(a, chunk)
	c.putIndex(a, IndexOffset, make([]byte, 16))
	c.putChunk(b, batches(0, 4))
	if got, ok := c.chunk(a, 5, 1<<20); !ok || record.Batch(got).BaseOffset() != 4 {
		t.Fatalf("chunk of a at 5: %v", ok)
	}
	// a was used last: b goes when d comes.
	c.putChunk(d, batches(0, 4))
	if _, ok := c.chunk(b, 0, 1<<20); ok {
		t.Fatal("b kept past the budget")
	}
	if c.bytes() > c.max {
		t.Fatalf("%d bytes held, max %d", c.bytes(), c.max)
	}
	if _, ok := c.chunk(a, 0, 1<<20); !ok {
		t.Fatal("a evicted though used last")
	}
	c.forget(a)
	if _, ok := c.getIndex(a, IndexOffset); ok {
		t.Fatal("a's index kept after forget")
	}
	if _, ok := c.chunk(a, 0, 1<<20); ok {
		t.Fatal("a's chunk kept after forget")
	}
	held := c.bytes()
	c.putChunk(a, make([]byte, c.max+1))
	c.putChunk(a, make([]byte, 40)) // not a batch
	if c.bytes() != held {
		t.Fatal("a chunk over the budget, or not whole batches, was kept")
	}
}

// TestBackoff: store failures double a partition's wait from the task
// interval up to 16 of them; a success or a failure that is not the
// store's resets it.
func TestBackoff(t *testing.T) {
	now := time.Unix(1000, 0)
	b := newBackoff(time.Second)
	b.now = func() time.Time { return now }
	tp := TopicIDPartition{Topic: "t"}
	storeErr := fmt.Errorf("copy: %w", ErrRemoteStorage)
	var waits []time.Duration
	for i := 0; i < 7; i++ {
		waits = append(waits, b.done(tp, storeErr))
	}
	want := []time.Duration{1, 2, 4, 8, 16, 16, 16}
	for i := range want {
		if waits[i] != want[i]*time.Second {
			t.Fatalf("waits %v, want %v seconds", waits, want)
		}
	}
	if b.ready(tp) {
		t.Fatal("ready during the backoff")
	}
	now = now.Add(16 * time.Second)
	if !b.ready(tp) {
		t.Fatal("not ready after the backoff")
	}
	if d := b.done(tp, errors.New("local log closed")); d != 0 || !b.ready(tp) {
		t.Fatalf("a local error backs off %v", d)
	}
	if d := b.done(tp, storeErr); d != time.Second {
		t.Fatalf("after a reset: %v", d)
	}
}
