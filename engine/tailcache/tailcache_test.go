package tailcache

import (
	"bytes"
	"testing"

	"github.com/sluice/sluice/zerocopy"
)

// appendN keeps n appends of size bytes each (byte values from seq) at
// the end of a file of *end bytes, returning what was appended.
func appendN(t *Tail, c *Cache, end *int64, n, size int, seq *byte) []byte {
	var all []byte
	for range n {
		b := make([]byte, size)
		for i := range b {
			b[i] = *seq
			*seq++
		}
		t.Keep(c, b, *end)
		*end += int64(size)
		all = append(all, b...)
	}
	return all
}

func sliceBytes(tb testing.TB, s zerocopy.Slice) []byte {
	tb.Helper()
	b, err := s.AppendTo(nil)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// Slices cover exactly the appended bytes, through buffer switches that
// carry the end of the full buffer over; a reader behind the buffer and a
// large append miss; the budget bounds the buffers installed.
func TestKeepAndSlice(t *testing.T) {
	var c Cache
	c.Init(2 * BufBytes)
	var a, b Tail
	var end int64
	var seq byte
	var file []byte
	for range 40 { // about 30 KiB: two buffer switches
		file = append(file, appendN(&a, &c, &end, 1, 777, &seq)...)
		from := max(end-3000, 0)
		s, ok := a.Slice(from, end)
		if !ok {
			t.Fatalf("the last 3000 bytes of %d are not in the buffer", end)
		}
		if !bytes.Equal(sliceBytes(t, s), file[from:end]) {
			t.Fatalf("bytes [%d, %d) differ from the file's", from, end)
		}
		s.Release()
	}
	if _, ok := a.Slice(0, 100); ok {
		t.Fatal("bytes at the start of a 30 KiB file served from a 16 KiB buffer")
	}
	var bend int64
	appendN(&b, &c, &bend, 1, 100, &seq)
	if _, _, held := c.Stats(); held != 2*BufBytes {
		t.Fatalf("held %d, want %d", held, 2*BufBytes)
	}
	var third Tail
	var tend int64
	appendN(&third, &c, &tend, 1, 100, &seq)
	if third.Has() {
		t.Fatal("a third buffer installed past a budget of two")
	}
	appendN(&a, &c, &end, 1, AppendMax+1, &seq)
	if a.Has() {
		t.Fatal("a large append left the buffer installed")
	}
	b.Drop()
	if _, _, held := c.Stats(); held != 0 {
		t.Fatalf("held %d after every buffer was dropped", held)
	}
	hits, misses, _ := c.Stats()
	if hits != 40 || misses != 1 {
		t.Fatalf("hits %d misses %d, want 40 and 1", hits, misses)
	}
}

// A buffer goes back to the free list only once the last slice of it is
// released: a slice held across many buffer switches keeps its bytes,
// while the buffers nobody holds are reused.
func TestHeldSliceNotReused(t *testing.T) {
	var c Cache
	c.Init(0)
	var tl Tail
	var end int64
	var seq byte
	got := appendN(&tl, &c, &end, 2, 500, &seq)
	held, ok := tl.Slice(0, end)
	if !ok {
		t.Fatal("the tail is not in the buffer")
	}
	first := sharedOf(&tl)
	seen := map[*zerocopy.Shared]int{}
	replaced, switches := false, 0
	prev := first
	for range 300 { // about 20 buffer switches
		appendN(&tl, &c, &end, 1, 700, &seq)
		s, ok := tl.Slice(end-700, end)
		if !ok {
			t.Fatal("the last append is not in the buffer")
		}
		s.Release()
		cur := sharedOf(&tl)
		if cur != prev {
			switches++
			prev = cur
		}
		if cur != first {
			replaced = true
			seen[cur]++
		} else if replaced {
			t.Fatal("a buffer still held by a slice was reused")
		}
	}
	// A switch takes its new buffer before it frees the old one, so two
	// buffers alternate after the held one, however many switches.
	if switches < 10 || len(seen) > 2 {
		t.Errorf("%d distinct buffers over %d switches: freed buffers are not reused", len(seen), switches)
	}
	if !bytes.Equal(sliceBytes(t, held), got) {
		t.Fatal("the held slice's bytes changed")
	}
	held.Release()
}

// The free list keeps at most freeMax buffers: a burst of frees beyond
// it goes to the garbage collector.
func TestFreeListBounded(t *testing.T) {
	var c Cache
	bufs := make([]*zerocopy.Shared, freeMax+10)
	for i := range bufs {
		bufs[i] = c.newBuf()
	}
	for _, sh := range bufs {
		sh.Release()
	}
	if n := len(c.free.bufs); n != freeMax {
		t.Fatalf("%d free buffers, want %d", n, freeMax)
	}
	if sh := c.newBuf(); sh != bufs[freeMax-1] {
		t.Fatal("a new buffer was allocated while free ones were kept")
	}
}

// A Cache left at its zero value (or Init with a negative budget) keeps
// nothing.
func TestOff(t *testing.T) {
	for _, c := range []*Cache{{}, func() *Cache { var c Cache; c.Init(-1); return &c }()} {
		var tl Tail
		var end int64
		var seq byte
		appendN(&tl, c, &end, 3, 100, &seq)
		if tl.Has() {
			t.Fatal("a buffer installed with the cache off")
		}
	}
}

// sharedOf returns the buffer t holds now, nil if none.
func sharedOf(t *Tail) *zerocopy.Shared {
	if r := t.recent.Load(); r != nil {
		return r.sh
	}
	return nil
}
