package segment

import (
	"sync"
	"sync/atomic"

	"github.com/sluice/sluice/zerocopy"
)

// The tail cache keeps a copy of the last bytes appended to each active
// segment whose appends are small, so that a fetch at the tail (a
// consumer keeping up, a follower) copies them from memory instead of
// reading the .log with pread(2).
//
// Why: with thousands of active partitions, a produce request carries a
// batch of one or two records for each, and a consumer's fetch reads
// one or two small batches from each. Each of those reads was a pread of
// about 1 KiB, whose cost is the system call, not the bytes: at 10,000
// partitions it was 11% of the broker's CPU, 2-3 µs a call on the VM
// this was measured on (issue 33). A large append (more than
// tailAppendMax bytes) is not copied: its read is one system call for
// many records, or sendfile, and the copy would only add CPU; it drops
// the segment's cache, whose bytes would no longer reach the end.
//
// Memory: at most tailBufBytes per active segment, and the store's
// budget (log.segment.tail.cache.bytes) over all of them; a segment that
// finds the budget spent reads its file as before. Rolls, truncations,
// closes and deletions give the buffer back.
//
// Readers: a buffer's bytes below its published length n never change
// while it is installed, and a slice handed out holds a reference on it
// (zerocopy.Shared), so a reader may hand it to the socket writer after
// the log's locks are released. An append that does not fit installs
// another buffer; the old one goes back to the store's free list when the last
// response holding a slice of it is written, and is reused: allocating a
// fresh 16 KiB for every 12 KiB appended put its page faults and zeroing
// on the append path.

const (
	// tailBufBytes is the size of one segment's buffer.
	tailBufBytes = 16 << 10
	// tailAppendMax is the largest append that is copied.
	tailAppendMax = 4 << 10
	// tailCarry is how much of the end of a full buffer a new one starts
	// with, so that a reader a few batches behind the end still finds
	// its bytes right after the switch.
	tailCarry = 4 << 10
	// tailFreeMax bounds the free list (4 MiB). Freed buffers are those
	// replaced while responses held them; at steady state few are free at
	// once, and a burst beyond this goes to the garbage collector.
	tailFreeMax = 256
)

// DefaultTailCacheBytes is the tail cache budget of a store opened without
// engine.Options.TailCacheBytes: 16,384 active segments' buffers.
const DefaultTailCacheBytes = 256 << 20

// tailCache is a store's budget, counters and free buffers.
type tailCache struct {
	max  int64        // budget in bytes; 0: off
	held atomic.Int64 // bytes of the buffers installed on segments
	// free holds freed buffers (tailBufBytes each) for reuse. Not a
	// sync.Pool: that one empties at every other GC cycle (and drops a
	// quarter of its puts under the race detector), which brought back
	// the page faults of fresh buffers that reuse is for. Its lock is
	// taken once per buffer switch, about every 12 KiB appended to a
	// segment.
	free struct {
		sync.Mutex
		bufs []*zerocopy.Shared
	}
	// hits counts reads served from a buffer; misses the reads of an
	// active segment's file that a buffer was present for but did not
	// cover (the reader was behind it).
	hits, misses atomic.Int64
}

// tailBuf is the copy of the bytes [pos, pos+n) of one segment, in sh.B.
// A tailBuf is installed on a segment once and never again (a buffer that
// comes back from the free list gets a new tailBuf), which is what lets a
// reader tell that the buffer it took a reference on is still the
// segment's (recentSlice).
type tailBuf struct {
	owner *tailCache
	pos   int64
	sh    *zerocopy.Shared // its reference is the segment's
	n     atomic.Int64     // sh.B[:n] is published
}

// newBuf returns a free buffer, or a new one.
func (c *tailCache) newBuf() *zerocopy.Shared {
	c.free.Lock()
	if n := len(c.free.bufs); n > 0 {
		sh := c.free.bufs[n-1]
		c.free.bufs[n-1] = nil
		c.free.bufs = c.free.bufs[:n-1]
		c.free.Unlock()
		sh.Reuse()
		return sh
	}
	c.free.Unlock()
	return zerocopy.NewShared(make([]byte, tailBufBytes), c.put)
}

// put takes back a buffer whose last reference was released.
func (c *tailCache) put(sh *zerocopy.Shared) {
	c.free.Lock()
	if len(c.free.bufs) < tailFreeMax {
		c.free.bufs = append(c.free.bufs, sh)
	}
	c.free.Unlock()
}

// keep copies batches, just written at pos of s (the active segment),
// into s's buffer. REQUIRES: the log's appendMu.
func (c *tailCache) keep(s *segment, batches []byte, pos int64) {
	r := s.recent.Load()
	if c.max <= 0 || len(batches) > tailAppendMax {
		if r != nil {
			s.dropRecent()
		}
		return
	}
	if r != nil {
		n := r.n.Load()
		if r.pos+n != pos {
			// Not contiguous (cannot happen while drops follow every
			// cut; kept safe): start over.
			s.dropRecent()
			r = nil
		} else if int(n)+len(batches) <= len(r.sh.B) {
			copy(r.sh.B[n:], batches) // above n: no reader looks there yet
			r.n.Store(n + int64(len(batches)))
			return
		}
	}
	if r == nil {
		if c.held.Add(tailBufBytes) > c.max {
			c.held.Add(-tailBufBytes)
			return
		}
	}
	nr := &tailBuf{owner: c, pos: pos, sh: c.newBuf()}
	k := 0
	if r != nil {
		// Replace the full buffer, carrying its last bytes over; the
		// held bytes do not change.
		n := r.n.Load()
		carry := min(n, tailCarry)
		k = copy(nr.sh.B, r.sh.B[n-carry:n])
		nr.pos = r.pos + n - carry
	}
	copy(nr.sh.B[k:], batches)
	nr.n.Store(int64(k + len(batches)))
	s.recent.Store(nr)
	if r != nil {
		r.sh.Release()
	}
}

// dropRecent gives s's buffer back, if it has one: the segment was cut,
// rolled, closed or removed. Readers holding slices of it keep them.
// REQUIRES: the writer's side (the log's appendMu, or exclusive access).
func (s *segment) dropRecent() {
	if r := s.recent.Swap(nil); r != nil {
		r.owner.held.Add(-tailBufBytes)
		r.sh.Release()
	}
}

// recentSlice returns the bytes [pos, end) of s from its buffer when the
// buffer holds them all. end must not exceed the size the caller loaded
// (the appender publishes the buffer's bytes before the size).
func (s *segment) recentSlice(pos, end int64) (zerocopy.Slice, bool) {
	r := s.recent.Load()
	if r == nil {
		return zerocopy.Slice{}, false
	}
	if pos < r.pos || end > r.pos+r.n.Load() {
		r.owner.misses.Add(1)
		return zerocopy.Slice{}, false
	}
	if !r.sh.TryAcquire() {
		return zerocopy.Slice{}, false // replaced and freed meanwhile
	}
	if s.recent.Load() != r {
		// Replaced meanwhile: its buffer may already hold another
		// segment's bytes.
		r.sh.Release()
		return zerocopy.Slice{}, false
	}
	r.owner.hits.Add(1)
	return zerocopy.SharedSlice(r.sh, int(pos-r.pos), int(end-pos)), true
}
