// Package tailcache keeps a copy of the last bytes appended to each active
// log file whose appends are small, so that a fetch at the tail (a
// consumer keeping up, a follower) copies them from memory instead of
// reading the file with pread(2). Both file backends use it: segment for
// each active segment, pebblelog for each log's data file.
//
// Why: with thousands of active partitions, a produce request carries a
// batch of one or two records for each, and a consumer's fetch reads
// one or two small batches from each. Each of those reads was a pread of
// about 1 KiB, whose cost is the system call, not the bytes: at 10,000
// partitions it was 11% of the segment broker's CPU, 2-3 µs a call on the
// VM this was measured on (issue 33), and 11% of the pebble broker's. A
// large append (more than AppendMax bytes) is not copied: its read is one
// system call for many records, or sendfile, and the copy would only add
// CPU; it drops the file's buffer, whose bytes would no longer reach the
// end.
//
// Memory: at most BufBytes per file, and a Cache's budget (the broker's
// log.segment.tail.cache.bytes) over all of them; a file that finds the
// budget spent is read as before. Whoever owns a Tail drops it when the
// file's bytes change other than by an append (a roll, a truncation, a
// close, a deletion).
//
// Readers: a buffer's bytes below its published length never change
// while it is installed, and a slice handed out holds a reference on it
// (zerocopy.Shared), so a reader may hand it to the socket writer after
// the log's locks are released. An append that does not fit installs
// another buffer; the old one goes back to the cache's free list when the
// last response holding a slice of it is written, and is reused:
// allocating a fresh 16 KiB for every 12 KiB appended put its page faults
// and zeroing on the append path.
package tailcache

import (
	"sync"
	"sync/atomic"

	"github.com/sluice/sluice/zerocopy"
)

const (
	// BufBytes is the size of one file's buffer.
	BufBytes = 16 << 10
	// AppendMax is the largest append that is copied.
	AppendMax = 4 << 10
	// carry is how much of the end of a full buffer a new one starts
	// with, so that a reader a few batches behind the end still finds
	// its bytes right after the switch.
	carry = 4 << 10
	// freeMax bounds the free list (4 MiB). Freed buffers are those
	// replaced while responses held them; at steady state few are free at
	// once, and a burst beyond this goes to the garbage collector.
	freeMax = 256
)

// DefaultBytes is the budget of a store opened without
// engine.Options.TailCacheBytes: 16,384 files' buffers.
const DefaultBytes = 256 << 20

// Cache is a store's budget, counters and free buffers. The zero value
// is off; Init sets the budget.
type Cache struct {
	max  int64        // budget in bytes; 0: off
	held atomic.Int64 // bytes of the buffers installed on Tails
	// free holds freed buffers (BufBytes each) for reuse. Not a
	// sync.Pool: that one empties at every other GC cycle (and drops a
	// quarter of its puts under the race detector), which brought back
	// the page faults of fresh buffers that reuse is for. Its lock is
	// taken once per buffer switch, about every 12 KiB appended to a
	// file.
	free struct {
		sync.Mutex
		bufs []*zerocopy.Shared
	}
	// hits counts reads served from a buffer; misses the reads of a file
	// that a buffer was present for but did not cover (the reader was
	// behind it).
	hits, misses atomic.Int64
}

// Init sets the budget from engine.Options.TailCacheBytes: 0 means
// DefaultBytes, a negative value off. REQUIRES: before any use.
func (c *Cache) Init(optBytes int64) {
	switch {
	case optBytes > 0:
		c.max = optBytes
	case optBytes == 0:
		c.max = DefaultBytes
	}
}

// Stats returns how many reads the cache served, how many reads of a file
// it held bytes for but not the ones asked for, and how many bytes its
// buffers hold now.
func (c *Cache) Stats() (hits, misses, held int64) {
	return c.hits.Load(), c.misses.Load(), c.held.Load()
}

// newBuf returns a free buffer, or a new one.
func (c *Cache) newBuf() *zerocopy.Shared {
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
	return zerocopy.NewShared(make([]byte, BufBytes), c.put)
}

// put takes back a buffer whose last reference was released.
func (c *Cache) put(sh *zerocopy.Shared) {
	c.free.Lock()
	if len(c.free.bufs) < freeMax {
		c.free.bufs = append(c.free.bufs, sh)
	}
	c.free.Unlock()
}

// Tail is one file's buffer, if it has one. The zero value has none.
type Tail struct {
	recent atomic.Pointer[buf]
}

// buf is the copy of the bytes [pos, pos+n) of one file, in sh.B. A buf
// is installed on a Tail once and never again (a buffer that comes back
// from the free list gets a new buf), which is what lets a reader tell
// that the buffer it took a reference on is still the Tail's (Slice).
type buf struct {
	owner *Cache
	pos   int64
	sh    *zerocopy.Shared // its reference is the Tail's
	n     atomic.Int64     // sh.B[:n] is published
}

// Keep copies batches, just written at pos of the file, into t's buffer.
// REQUIRES: the file's writer side (one appender at a time), and that the
// caller publishes the new end (the size readers bound their reads by)
// only after Keep returns.
func (t *Tail) Keep(c *Cache, batches []byte, pos int64) {
	r := t.recent.Load()
	if c.max <= 0 || len(batches) > AppendMax {
		if r != nil {
			t.Drop()
		}
		return
	}
	if r != nil {
		n := r.n.Load()
		if r.pos+n != pos {
			// Not contiguous (cannot happen while drops follow every
			// cut; kept safe): start over.
			t.Drop()
			r = nil
		} else if int(n)+len(batches) <= len(r.sh.B) {
			copy(r.sh.B[n:], batches) // above n: no reader looks there yet
			r.n.Store(n + int64(len(batches)))
			return
		}
	}
	if r == nil {
		if c.held.Add(BufBytes) > c.max {
			c.held.Add(-BufBytes)
			return
		}
	}
	nr := &buf{owner: c, pos: pos, sh: c.newBuf()}
	k := 0
	if r != nil {
		// Replace the full buffer, carrying its last bytes over; the
		// held bytes do not change.
		n := r.n.Load()
		carried := min(n, carry)
		k = copy(nr.sh.B, r.sh.B[n-carried:n])
		nr.pos = r.pos + n - carried
	}
	copy(nr.sh.B[k:], batches)
	nr.n.Store(int64(k + len(batches)))
	t.recent.Store(nr)
	if r != nil {
		r.sh.Release()
	}
}

// Drop gives t's buffer back, if it has one: the file was cut, rolled,
// closed or removed. Readers holding slices of it keep them.
// REQUIRES: the file's writer side (or exclusive access).
func (t *Tail) Drop() {
	if r := t.recent.Swap(nil); r != nil {
		r.owner.held.Add(-BufBytes)
		r.sh.Release()
	}
}

// Has reports whether t holds a buffer.
func (t *Tail) Has() bool { return t.recent.Load() != nil }

// Slice returns the bytes [pos, end) of the file from t's buffer when the
// buffer holds them all. end must not exceed the end the caller loaded
// (Keep's bytes are published before the caller's end).
func (t *Tail) Slice(pos, end int64) (zerocopy.Slice, bool) {
	r := t.recent.Load()
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
	if t.recent.Load() != r {
		// Replaced meanwhile: its buffer may already hold another
		// file's bytes.
		r.sh.Release()
		return zerocopy.Slice{}, false
	}
	r.owner.hits.Add(1)
	return zerocopy.SharedSlice(r.sh, int(pos-r.pos), int(end-pos)), true
}
