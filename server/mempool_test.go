package server

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"testing"
	"time"
)

// TestMemPoolWaitsInOrder: a waiter that does not fit blocks those behind
// it (first come, first served), a release grants the head, and a waiter
// giving up at its deadline or on stop holds nothing.
func TestMemPoolWaitsInOrder(t *testing.T) {
	p := newMemPool(100, 100)
	if err := p.acquire(60, time.Time{}); err != nil {
		t.Fatal(err)
	}
	order := make(chan int, 2)
	for i, n := range []int64{50, 10} {
		go func() {
			if err := p.acquire(n, time.Time{}); err != nil {
				t.Error(err)
			}
			order <- i
		}()
		// Queue them in this order: wait until the waiter is in the queue.
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			p.mu.Lock()
			queued := len(p.waiters)
			p.mu.Unlock()
			if queued == i+1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("waiter %d never queued", i)
			}
		}
	}
	select {
	case i := <-order:
		t.Fatalf("waiter %d granted while 60 of 100 were held and 50 waited first", i)
	default:
	}
	p.release(10) // 50 free: the head fits, and then nothing else does
	if i := <-order; i != 0 {
		t.Fatalf("waiter %d granted first, want 0", i)
	}
	p.release(10)
	if i := <-order; i != 1 {
		t.Fatalf("waiter %d granted second, want 1", i)
	}
	if got := p.inUse(); got != 100 {
		t.Fatalf("in use %d, want 100", got)
	}
	p.release(40)

	if err := p.acquire(41, time.Now().Add(20*time.Millisecond)); !errors.Is(err, errPoolWait) {
		t.Fatalf("acquire past the limit: %v, want errPoolWait at the deadline", err)
	}
	stop := make(chan struct{})
	close(stop)
	if err := p.acquire(41, time.Time{}, nil, stop); !errors.Is(err, errPoolWait) {
		t.Fatalf("acquire with stop closed: %v", err)
	}
	if got := p.inUse(); got != 60 {
		t.Fatalf("in use %d after giving up, want 60", got)
	}
	p.release(60)
	if got := p.inUse(); got != 0 {
		t.Fatalf("in use %d, want 0", got)
	}
}

// TestFrameBufChargesAsBytesArrive: reading a frame announced as 100 MiB,
// the bytes charged never exceed twice the bytes read plus minFrameClass,
// and a want hint (the previous frame's size) is honoured up front.
func TestFrameBufChargesAsBytesArrive(t *testing.T) {
	p := newMemPool(-1, 0)
	const n = 100 << 20
	var f frameBuf
	have := 0
	for have < 64<<20 {
		buf, err := f.grow(p, n, have, 0, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if p.inUse() != f.charged || f.m == nil && f.charged != int64(cap(*f.p)) {
			t.Fatalf("charged %d, pool %d", f.charged, p.inUse())
		}
		if lim := int64(2*have + minFrameClass); f.charged > lim {
			t.Fatalf("after %d bytes read, %d charged (> %d)", have, f.charged, lim)
		}
		have = len(buf) // as if the window filled
	}
	f.free(p, false)
	if p.inUse() != 0 {
		t.Fatalf("in use %d after free", p.inUse())
	}

	for _, tc := range []struct{ n, want, first int }{
		{n: 100, want: 0, first: minFrameClass},
		{n: 1 << 20, want: 300 << 10, first: 512 << 10},
		{n: 1000, want: 1 << 20, first: minFrameClass}, // never more than the frame
		{n: 100 << 20, want: 100 << 20, first: maxPooledFrame},
	} {
		var f frameBuf
		if _, err := f.grow(p, tc.n, 0, tc.want, time.Time{}); err != nil {
			t.Fatal(err)
		}
		if f.charged != int64(tc.first) {
			t.Errorf("n=%d want=%d: first buffer %d, want %d", tc.n, tc.want, f.charged, tc.first)
		}
		f.free(p, false)
	}
}

// TestFrameBufMapsLargeFrames: a frame larger than its first buffer and
// than smallFrameMax is read into a mapping outside the heap (on Linux),
// without copies as it grows; settle hands out a heap copy charged as
// much as the mapping was, and the mapping is gone; a frame abandoned
// half read gives everything back.
func TestFrameBufMapsLargeFrames(t *testing.T) {
	p := newMemPool(-1, 0)
	for _, n := range []int{100 << 10, 3 << 20, 8 << 20, 9<<20 + 5, 20 << 20} {
		var f frameBuf
		have := 0
		var first []byte
		for have < n {
			buf, err := f.grow(p, n, have, 0, time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			if first == nil {
				first = buf
			}
			if runtime.GOOS == "linux" && (f.m == nil || f.p != nil || &buf[0] != &first[0]) {
				t.Fatalf("n=%d: growing from %d bytes did not stay in one mapping", n, have)
			}
			for i := have; i < len(buf); i++ {
				buf[i] = byte(i)
			}
			have = len(buf)
		}
		charged := f.charged
		body := f.settle(n)
		if f.m != nil || len(body) != n || p.inUse() != charged || int64(cap(body)) > charged {
			t.Fatalf("n=%d: settled into %d bytes (cap %d), mapping %v, pool %d, charged %d",
				n, len(body), cap(body), f.m != nil, p.inUse(), charged)
		}
		for i := range n {
			if body[i] != byte(i) {
				t.Fatalf("n=%d: byte %d is %d after settle", n, i, body[i])
			}
		}
		f.free(p, false)
		if p.inUse() != 0 {
			t.Fatalf("n=%d: %d in use after free", n, p.inUse())
		}

		var half frameBuf // abandoned: the connection gave up
		if _, err := half.grow(p, n, 0, 0, time.Time{}); err != nil {
			t.Fatal(err)
		}
		half.free(p, false)
		if p.inUse() != 0 || half.m != nil {
			t.Fatalf("n=%d: %d in use after freeing a half-read frame", n, p.inUse())
		}
	}
}

// repeatReader returns the same bytes forever.
type repeatReader struct {
	b   []byte
	off int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.b[r.off:])
		n += c
		r.off = (r.off + c) % len(r.b)
	}
	return n, nil
}

// BenchmarkReadFrame reads size-prefixed frames as readLoop does (grow,
// read, release to the class pool), from memory. It must stay at 0
// allocs/op: the read path of a busy connection allocates nothing. The
// mapped cases give every frame as a first one (no size hint), so that a
// frame above smallFrameMax is read into a fresh mapping and settled
// into a class buffer, as a frame larger than its connection's recent
// peak is (adviseHugeFrame).
func BenchmarkReadFrame(b *testing.B) {
	for _, tc := range []struct {
		size   int
		mapped bool
	}{{1 << 10, false}, {64 << 10, false}, {1 << 20, false}, {1 << 20, true}, {16 << 20, true}} {
		size := tc.size
		name := fmt.Sprintf("frame=%dKiB", size>>10)
		if tc.mapped {
			name += "/mapped"
		}
		b.Run(name, func(b *testing.B) {
			fr := binary.BigEndian.AppendUint32(nil, uint32(size))
			fr = append(fr, make([]byte, size)...)
			c := &conn{pool: newMemPool(256<<20, 100<<20), stopped: make(chan struct{}), done: make(chan struct{})}
			rd := bufio.NewReaderSize(&repeatReader{b: fr}, readBufferSize)
			var sz [4]byte
			last := 0
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := io.ReadFull(rd, sz[:]); err != nil {
					b.Fatal(err)
				}
				n := int(binary.BigEndian.Uint32(sz[:]))
				var f frameBuf
				if _, err := c.readBody(rd, &f, &crcScan{off: true}, n, last, time.Time{}); err != nil {
					b.Fatal(err)
				}
				if !tc.mapped {
					last = n
				}
				f.free(c.pool, false)
			}
			if c.pool.inUse() != 0 {
				b.Fatalf("%d bytes still charged", c.pool.inUse())
			}
		})
	}
}

// TestMemPoolReserve: the reserve (an eighth of the limit, less if a
// frame of the largest size would not fit beside it) serves whole small
// frames when the rest of the pool is taken, and nothing else.
func TestMemPoolReserve(t *testing.T) {
	for _, tc := range []struct{ limit, maxFrame, reserve int64 }{
		{1000, 800, 125}, {1000, 950, 50}, {1000, 1000, 0}, {-1, 100, 0},
	} {
		if p := newMemPool(tc.limit, tc.maxFrame); p.reserve != tc.reserve {
			t.Errorf("newMemPool(%d, %d): reserve %d, want %d", tc.limit, tc.maxFrame, p.reserve, tc.reserve)
		}
	}
	p := newMemPool(1000, 800)
	if err := p.acquire(875, time.Time{}); err != nil {
		t.Fatal(err)
	}
	soon := time.Now().Add(20 * time.Millisecond)
	if err := p.acquire(1, soon); !errors.Is(err, errPoolWait) {
		t.Fatalf("a large frame used the reserve: %v", err)
	}
	if res, err := p.acquireSmall(100, time.Time{}); err != nil || !res {
		t.Fatalf("small frame with the pool full: reserve %v, err %v", res, err)
	}
	if _, err := p.acquireSmall(30, time.Now().Add(20*time.Millisecond)); !errors.Is(err, errPoolWait) {
		t.Fatalf("small frame past the reserve: %v", err)
	}
	p.releaseReserved(100)
	p.release(875)
	if res, err := p.acquireSmall(100, time.Time{}); err != nil || res {
		t.Fatalf("small frame with the pool free: reserve %v, err %v", res, err)
	}
	p.release(100)
	if p.inUse() != 0 || p.reserved != 0 {
		t.Fatalf("in use %d, reserved %d", p.inUse(), p.reserved)
	}
}

// TestFrameMappingsBounded: past maxFrameMappings live mappings, large
// frames are read into the heap, and unmapping makes room again.
func TestFrameMappingsBounded(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("frames are mapped on Linux only")
	}
	base := frameMappings.Load()
	var maps [][]byte
	defer func() {
		for _, m := range maps {
			unmapFrame(m)
		}
	}()
	for int(base)+len(maps) < maxFrameMappings {
		m := mapFrame(1 << 20)
		if m == nil {
			t.Fatalf("mapping %d refused", len(maps))
		}
		maps = append(maps, m)
	}
	if m := mapFrame(1 << 20); m != nil {
		unmapFrame(m)
		t.Fatalf("mapping %d granted past maxFrameMappings", maxFrameMappings)
	}
	unmapFrame(maps[0])
	if maps[0] = mapFrame(1 << 20); maps[0] == nil {
		t.Fatal("no mapping after one was unmapped")
	}
}

// TestLargeFramesPooled: a producer's frames of 8-52 MiB, varying from
// request to request, are read straight into pooled class buffers once the
// connection has sent one as large recently (recentPeak), with no mapping
// and no copy; their return to the pool counts toward a trim without
// starting a collection. Before, the largest class was 8 MiB and the first
// buffer was sized by the previous frame alone: every such frame was
// mapped, copied into a fresh heap buffer and dropped.
func TestLargeFramesPooled(t *testing.T) {
	p := newMemPool(-1, 0)
	peak := 0
	mapped := 0
	for i, n := range []int{20 << 20, 14 << 20, 27 << 20, 9 << 20, 16<<20 + 3, 30 << 20} {
		var f frameBuf
		buf, err := f.grow(p, n, 0, peak, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if f.m != nil {
			mapped++
		}
		if i > 0 && n <= peak && (f.m != nil || len(buf) != n) {
			t.Errorf("frame %d of %d bytes after a peak of %d: first buffer %d bytes, mapped %t; want the whole frame in the heap", i, n, peak, len(buf), f.m != nil)
		}
		for have := len(buf); have < n; have = len(buf) {
			if buf, err = f.grow(p, n, have, peak, time.Time{}); err != nil {
				t.Fatal(err)
			}
		}
		f.settle(n)
		f.free(p, false)
		peak = recentPeak(peak, n)
	}
	if mapped > 2 {
		t.Errorf("%d of 6 frames mapped, want at most the first and the 30 MiB one", mapped)
	}
	p.mu.Lock()
	dropped, sinceGC := p.droppedBytes, p.sinceGC
	p.mu.Unlock()
	if dropped == 0 || sinceGC != 0 {
		t.Errorf("after pooling large buffers: %d bytes toward a trim, %d toward a collection; want some and none", dropped, sinceGC)
	}
}
