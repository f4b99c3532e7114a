package server

import (
	"errors"
	"math/bits"
	"runtime"
	"runtime/debug"
	"sync"
	"time"
)

// Request memory: queued.max.request.bytes.
//
// Every byte of a request frame that a connection reads is first acquired
// from one broker-wide memPool and given back when the request has been
// handled (request.putFrame), or when the connection gives up on the frame.
// This is Kafka's MemoryPool (KIP-72) with one difference: Kafka allocates
// the whole frame from its size prefix, so one client announcing 100 MiB
// holds 100 MiB; here a frame's buffer grows as its bytes arrive
// (frameBuf.grow), so a connection holds at most about twice what it has
// actually sent, plus minFrameClass. A connection that cannot get memory
// waits and reads nothing meanwhile (Kafka mutes the channel); the wait
// counts against request.read.timeout.ms like the read itself, so a
// client holding memory with a half-sent frame is cut off and the bytes
// return to the pool.
//
// A large frame trickled in by many connections can fill the pool for up
// to request.read.timeout.ms. So that the small requests every client
// keeps sending (heartbeats, fetches, offset commits, small produces) are
// still read meanwhile, a reserve of the pool is kept for frames that fit
// whole in their first buffer of at most smallFrameMax bytes: only they
// may use it, without queueing behind the large ones.
//
// A request's bytes return when its handler returns. For a Produce with
// acks=all in cluster mode that is after replication (Partition.Append
// waits for the high watermark), where Kafka releases the buffer after
// the local append; the followers' fetches that the wait depends on are
// small frames, which the reserve keeps readable.
//
// Bound: the process holds at most limit bytes of frames being read or
// handled, plus the buffers idle in the class pools (which the GC trims),
// plus a fixed cost per connection (the readBufferSize read buffer and the
// goroutine stacks), which max.connections bounds.

// errPoolWait is why a connection stopped waiting for request memory; the
// caller knows which (deadline, shutdown, connection closed).
var errPoolWait = errors.New("server: gave up waiting for request memory")

// memPool counts request bytes against a limit. Safe for concurrent use.
// Waiters are served first come, first served, so a connection growing a
// large frame is not starved by many small ones.
type memPool struct {
	limit   int64 // <= 0: unbounded (counted, never waits)
	reserve int64 // of limit, for small frames only; 0 when unbounded

	mu       sync.Mutex
	used     int64         // bytes held, reserve included; <= limit when limit > 0
	reserved int64         // bytes held from the reserve; <= reserve
	waiters  []*poolWaiter // FIFO; REQUIRES mu

	// Large frame buffers left to the GC since the last trim (see
	// dropped), when the last was, and whether a trim is scheduled.
	// REQUIRES mu.
	droppedBytes int64
	lastDrop     time.Time
	trimPending  bool
	// sinceGC counts the bytes dropped since the last collection dropped
	// started; collecting is true while one runs. REQUIRES mu.
	sinceGC    int64
	collecting bool
}

type poolWaiter struct {
	n       int64
	ready   chan struct{} // closed once the bytes are granted
	granted bool          // REQUIRES memPool.mu
}

// smallFrameMax is the largest frame that may use the pool's reserve: a
// fetch or produce of a few batches, any heartbeat or commit.
const smallFrameMax = 64 << 10

// newMemPool returns a pool of limit bytes (<= 0: unbounded) that keeps
// an eighth for small frames, less when that would leave no room for a
// frame of maxFrame bytes (socket.request.max.bytes).
func newMemPool(limit, maxFrame int64) *memPool {
	p := &memPool{limit: limit}
	if limit > 0 {
		p.reserve = max(0, min(limit/8, limit-maxFrame))
	}
	return p
}

// acquireSmall takes n <= smallFrameMax bytes for a whole frame: from the
// pool when nobody waits and they fit, else from the reserve, else it
// waits like acquire. fromReserve tells release where they go back.
func (p *memPool) acquireSmall(n int64, deadline time.Time, stop ...<-chan struct{}) (fromReserve bool, err error) {
	p.mu.Lock()
	if len(p.waiters) == 0 && p.fitsLocked(n) {
		p.used += n
		p.mu.Unlock()
		return false, nil
	}
	if p.reserved+n <= p.reserve {
		p.reserved += n
		p.used += n
		p.mu.Unlock()
		return true, nil
	}
	p.mu.Unlock()
	return false, p.acquire(n, deadline, stop...)
}

// releaseReserved gives back n bytes that acquireSmall took from the
// reserve.
func (p *memPool) releaseReserved(n int64) {
	p.mu.Lock()
	p.reserved -= n
	p.mu.Unlock()
	p.release(n)
}

// acquire takes n bytes, waiting while the pool has fewer free (and while
// others wait before it). It returns errPoolWait, holding nothing, when
// deadline passes (zero: none) or any of stop is closed first. n may
// exceed the limit less the reserve only for an unbounded pool; config
// validation and newMemPool keep a frame of socket.request.max.bytes
// within it.
func (p *memPool) acquire(n int64, deadline time.Time, stop ...<-chan struct{}) error {
	p.mu.Lock()
	if len(p.waiters) == 0 && p.fitsLocked(n) {
		p.used += n
		p.mu.Unlock()
		return nil
	}
	w := &poolWaiter{n: n, ready: make(chan struct{})}
	p.waiters = append(p.waiters, w)
	p.mu.Unlock()

	var timeout <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		timeout = t.C
	}
	var s0, s1 <-chan struct{}
	if len(stop) > 0 {
		s0 = stop[0]
	}
	if len(stop) > 1 {
		s1 = stop[1]
	}
	select {
	case <-w.ready:
		return nil
	case <-timeout:
	case <-s0:
	case <-s1:
	}
	p.mu.Lock()
	if w.granted { // granted while we were giving up
		p.mu.Unlock()
		p.release(n)
		return errPoolWait
	}
	for i, x := range p.waiters {
		if x == w {
			p.waiters = append(p.waiters[:i], p.waiters[i+1:]...)
			break
		}
	}
	p.wakeLocked() // the head may have changed
	p.mu.Unlock()
	return errPoolWait
}

// release gives back n bytes acquired earlier and wakes the waiters that
// now fit, in order.
func (p *memPool) release(n int64) {
	if n == 0 {
		return
	}
	p.mu.Lock()
	p.used -= n
	if p.used < 0 {
		p.mu.Unlock()
		panic("server: request memory released twice")
	}
	p.wakeLocked()
	p.mu.Unlock()
}

// wakeLocked grants bytes to waiters from the head while they fit.
// REQUIRES: p.mu held.
func (p *memPool) wakeLocked() {
	for len(p.waiters) > 0 && p.fitsLocked(p.waiters[0].n) {
		w := p.waiters[0]
		p.waiters[0] = nil
		p.waiters = p.waiters[1:]
		p.used += w.n
		w.granted = true
		close(w.ready)
	}
	if len(p.waiters) == 0 {
		p.waiters = nil // let a long queue's backing array go
	}
}

// fitsLocked reports whether n more bytes fit outside the reserve.
// REQUIRES: p.mu held.
func (p *memPool) fitsLocked(n int64) bool {
	return p.limit <= 0 || p.used-p.reserved+n <= p.limit-p.reserve
}

// inUse returns the bytes acquired and not released.
func (p *memPool) inUse() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.used
}

// Giving memory back. A frame buffer the class pools do not take (above
// maxPooledFrame, or one a handler may still reference) is garbage once
// its request is done, and the Go runtime returns such memory to the
// kernel only after a collection finds it, which an idle broker may not
// run for two minutes, and then gradually. So once trimAfter bytes of
// them were dropped and no more for trimQuiet (the burst is over), the
// pool runs two collections (the second empties the class pools' victim
// caches) and debug.FreeOSMemory. Waiting for quiet keeps a broker under
// a steady stream of large requests from doing it every second: there the
// GC runs anyway and the pages would be faulted right back. And every
// trimAfter bytes dropped start a collection (one at a time), so that
// garbage frames do not pile up to the GC's own goal, twice the live
// heap. The large class buffers (trimPooledMin and up) put back in their
// pools count toward a trim too (pooled), without a collection of their
// own. Measured (e2e/memfill_test.go, TestBigFramesRSSReturns, 16
// connections sending two 24 MiB requests each, idle 28 MiB): before,
// RSS peaked at 513 MiB and was 176 MiB a minute later; with both, 410
// MiB and 29 MiB one second after the last request.
//
// Why not a soft memory limit (debug.SetMemoryLimit or GOMEMLIMIT): the
// broker's own heap (partitions, indexes, groups) has no configured
// bound, so any limit derived from queued.max.request.bytes is either
// loose or makes the GC thrash on a large cluster. Operators who know
// their heap can still set GOMEMLIMIT; the Go runtime honours it.
const (
	trimAfter    = 64 << 20
	trimQuiet    = time.Second
	trimMinBytes = 1 << 20 // smaller buffers are not counted
)

// dropped notes a buffer of n bytes left to the GC and schedules a trim
// when enough were.
func (p *memPool) dropped(n int64) {
	if n >= trimMinBytes {
		p.towardTrim(n, true)
	}
}

// pooled notes a large class buffer of n bytes put back in its pool: it
// counts toward the next trim as a dropped buffer does, so that the large
// classes a burst filled go back to the kernel once it is over (the
// trim's collections empty the pools), but it starts no collection: the
// buffer is not garbage, and under a steady stream it is taken again.
func (p *memPool) pooled(n int64) { p.towardTrim(n, false) }

// towardTrim counts n bytes toward the next trim, and when garbage
// toward the next collection, starting either once trimAfter is reached.
func (p *memPool) towardTrim(n int64, garbage bool) {
	p.mu.Lock()
	p.droppedBytes += n
	p.lastDrop = time.Now()
	start := p.droppedBytes >= trimAfter && !p.trimPending
	if start {
		p.trimPending = true
	}
	collect := false
	if garbage {
		p.sinceGC += n
		if collect = p.sinceGC >= trimAfter && !p.collecting; collect {
			p.sinceGC, p.collecting = 0, true
		}
	}
	p.mu.Unlock()
	if start {
		time.AfterFunc(trimQuiet, p.trim)
	}
	if collect {
		go func() {
			runtime.GC()
			p.mu.Lock()
			p.collecting = false
			p.mu.Unlock()
		}()
	}
}

// trim returns freed memory to the kernel once no large buffer was
// dropped for trimQuiet, rescheduling itself until then.
func (p *memPool) trim() {
	p.mu.Lock()
	if wait := trimQuiet - time.Since(p.lastDrop); wait > 0 {
		p.mu.Unlock()
		time.AfterFunc(wait, p.trim)
		return
	}
	p.droppedBytes, p.trimPending = 0, false
	p.mu.Unlock()
	runtime.GC()
	debug.FreeOSMemory()
}

// Frame buffers come in power-of-two classes from minFrameClass to
// maxPooledFrame, each class with its own sync.Pool, so a buffer's
// capacity is exactly what its connection acquired from the memPool and a
// pooled buffer never holds more than it was charged for. Larger frames
// (up to socket.request.max.bytes) grow by doubling too but are neither
// rounded nor pooled.
//
// maxPooledFrame is 64 MiB because producers send frames that large: in
// sluice perf omb over 1,000 partitions (4 franz-go producers) 40% of
// the produce frames were above 8 MiB (median 15 MiB, up to 52 MiB), and
// with 8 MiB as the largest class each of them was read into a fresh
// mapping, copied into a fresh heap buffer and left to the GC, whose
// page faults and zeroing were 15-17% of the broker's CPU, plus a forced
// collection every trimAfter bytes that emptied the class pools too.
const (
	minFrameClass  = 4 << 10  // holds the small requests that come often
	maxPooledFrame = 64 << 20 // larger buffers are left to the GC
	numFrameClass  = 15       // 4 KiB << 14 = 64 MiB
)

// trimPooledMin is the smallest pooled buffer whose return counts toward
// a trim as a dropped one does (memPool.pooled): the large classes, which
// a burst of big requests fills and an idle broker should give back.
const trimPooledMin = 8 << 20

// framePools[i] holds *[]byte of capacity minFrameClass<<i. Produce frames
// are the bulk of a broker's input (about 1 MB each with franz-go's
// defaults); allocating each one afresh cost a zeroed 1 MB allocation per
// request and the GC cycles that follow, about a quarter of the broker's
// CPU per GB produced (BENCHMARKS.md, profile notes).
var framePools [numFrameClass]sync.Pool

// frameClass returns the class of the smallest pooled capacity >= n, or -1
// when n is above maxPooledFrame.
func frameClass(n int) int {
	if n > maxPooledFrame {
		return -1
	}
	if n <= minFrameClass {
		return 0
	}
	return bits.Len(uint(n-1)) - bits.Len(uint(minFrameClass-1))
}

// getClassBuf returns a buffer of capacity minFrameClass<<class.
func getClassBuf(class int) *[]byte {
	if b, ok := framePools[class].Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, minFrameClass<<class)
	return &b
}

// putClassBuf returns b to its class pool; buffers of other capacities
// (unpooled large frames) are dropped for the GC: false.
func putClassBuf(b *[]byte) bool {
	c := frameClass(cap(*b))
	if c < 0 || minFrameClass<<c != cap(*b) {
		return false
	}
	*b = (*b)[:cap(*b)]
	framePools[c].Put(b)
	return true
}

// hugeFrameBytes is the size of a transparent huge page on amd64 and
// arm64 (4 KiB base pages): frameBuf.grow advises a frame's mapping for
// huge pages (adviseHugeFrame) once its charge reaches it.
const hugeFrameBytes = 2 << 20

// frameBuf is one request frame being read: the bytes read so far and
// the charge for them.
//
// A frame that fits the first buffer grow gives it (at most the
// connection's previous frame size, rounded to its class) is read into a
// class buffer of the Go heap: the steady stream of a producer, and every
// small request. A larger one, above smallFrameMax, is read into a
// mapping of its whole size outside the Go heap (mapFrame) while its bytes
// arrive, its charge growing by doubling as before, and copied into a
// heap buffer of the size it was charged (a class buffer, or an exact one
// above maxPooledFrame) once whole (settle); the mapping is unmapped then
// or when the read fails. Why: a frame the client trickles holds only
// the pages it has sent (the mapping is touched as it is written; in huge
// pages once its charge reaches hugeFrameBytes, adviseHugeFrame), with
// no copy each time it doubles, and its memory goes back to the kernel
// the moment the connection gives up, instead of waiting for the GC to
// find it and the scavenger to return it. Before, 40 connections
// trickling 100 MiB frames took the broker from 28 MiB to 366 MiB RSS
// with the default 256 MiB pool, and it stayed there after they closed
// (BENCHMARKS.md, memfill). The mapping never leaves readBody: handlers
// only see heap bytes, which they may keep (recyclable).
type frameBuf struct {
	p        *[]byte // *p is the heap buffer; nil before the first grow and while m is used
	m        []byte  // a large frame's mapping (len: the frame), until settle
	charged  int64   // acquired from the pool: cap(*p), or m's doubling share
	reserved bool    // charged to the pool's reserve (a small frame)
}

// grow makes room for at least one more byte of an n-byte frame whose
// first have bytes are read, with want as a hint for the capacity (the
// connection's previous frame size), acquiring the new capacity from pool
// first. It returns the buffer to read into next (len == min(n, cap)).
func (f *frameBuf) grow(pool *memPool, n, have, want int, deadline time.Time, stop ...<-chan struct{}) ([]byte, error) {
	old := int(f.charged)
	next := max(2*old, minFrameClass, min(want, maxPooledFrame))
	next = min(next, n)
	class := frameClass(next)
	if class >= 0 {
		next = minFrameClass << class
	}
	first := f.p == nil && f.m == nil
	if first && next < n && n > smallFrameMax {
		f.m = mapFrame(n) // nil: read into the heap as below
	}
	if first && next >= n && next <= smallFrameMax {
		var err error
		if f.reserved, err = pool.acquireSmall(int64(next), deadline, stop...); err != nil {
			return nil, err
		}
	} else if err := pool.acquire(int64(next-old), deadline, stop...); err != nil {
		return nil, err
	}
	f.charged += int64(next - old)
	if f.m != nil {
		if old < hugeFrameBytes && f.charged >= hugeFrameBytes {
			adviseHugeFrame(f.m) // the charge just reached a huge page
		}
		return f.m[:min(n, next)], nil
	}
	var nb *[]byte
	if class >= 0 {
		nb = getClassBuf(class)
	} else {
		b := make([]byte, next)
		nb = &b
	}
	if f.p != nil {
		copy(*nb, (*f.p)[:have])
		putClassBuf(f.p)
	}
	f.p = nb
	return (*nb)[:min(n, next)], nil
}

// settle returns the whole n-byte frame in the Go heap: a mapped frame is
// copied into a heap buffer of the capacity it was charged for (or of n
// bytes, which is less) and unmapped.
func (f *frameBuf) settle(n int) []byte {
	if f.m == nil {
		return (*f.p)[:n]
	}
	var nb *[]byte
	if c := frameClass(n); c >= 0 && int64(minFrameClass<<c) == f.charged {
		nb = getClassBuf(c)
	} else {
		b := make([]byte, n)
		nb = &b
	}
	copy(*nb, f.m[:n])
	unmapFrame(f.m)
	f.m, f.p = nil, nb
	return (*nb)[:n]
}

// free gives the buffer and its charge back. keep: the caller may still
// reference the bytes (a request whose handler may retain them), so the
// buffer is left to the GC instead of the class pool.
func (f *frameBuf) free(pool *memPool, keep bool) {
	if f.m != nil { // the read failed: nobody saw the mapping
		unmapFrame(f.m)
		f.m = nil
	}
	if f.charged == 0 {
		return
	}
	if f.reserved {
		pool.releaseReserved(f.charged)
	} else {
		pool.release(f.charged)
	}
	if f.p != nil {
		n := int64(cap(*f.p)) // read before the Put: the pool's next Get owns *f.p
		if keep || !putClassBuf(f.p) {
			pool.dropped(n)
		} else if n >= trimPooledMin {
			pool.pooled(n)
		}
	}
	f.p, f.charged, f.reserved = nil, 0, false
}
