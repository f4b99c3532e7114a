package tiered

import (
	"container/list"
	"sync"

	"github.com/sluice/sluice/record"
)

// cache keeps, in memory, what remote fetches read recently: the offset
// indexes of remote segments and chunks of their logs (runs of whole
// batches a read fetched), the least recently used dropped first once the
// bytes held pass max (remote.log.index.file.cache.total.size.bytes). An
// index larger than max is not kept; nor is a chunk.
//
// A chunk is what one remote read returned: a second consumer reading the
// same offsets (or a consumer whose fetch gave up waiting for the read,
// remote.fetch.max.wait.ms, and fetches again) is served from memory
// without a GET. Cached bytes are shared and never written.
//
// Safe for concurrent use.
type cache struct {
	mu     sync.Mutex
	max    int64
	held   int64
	lru    *list.List // of *cacheEntry, most recent first
	index  map[cacheKey]*list.Element
	chunks map[UUID][]*list.Element // a segment's chunks, unordered
}

// cacheKey names one cached index of a segment.
type cacheKey struct {
	id UUID
	t  IndexType
}

// cacheEntry is an index (chunk false; IndexOffset or IndexTransaction)
// or a chunk of a segment's log whose batches hold offsets [base, last].
type cacheEntry struct {
	id         UUID
	t          IndexType
	chunk      bool
	base, last int64
	b          []byte
}

func newCache(max int64) *cache {
	return &cache{max: max, lru: list.New(), index: map[cacheKey]*list.Element{}, chunks: map[UUID][]*list.Element{}}
}

// getIndex returns the cached index t of segment id.
func (c *cache) getIndex(id UUID, t IndexType) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.index[cacheKey{id, t}]; e != nil {
		c.lru.MoveToFront(e)
		return e.Value.(*cacheEntry).b, true
	}
	return nil, false
}

// putIndex caches index t of segment id.
func (c *cache) putIndex(id UUID, t IndexType, idx []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := cacheKey{id, t}
	if c.index[k] != nil || int64(len(idx)) > c.max {
		return
	}
	c.index[k] = c.lru.PushFront(&cacheEntry{id: id, t: t, b: idx})
	c.held += int64(len(idx))
	c.evictLocked()
}

// chunk returns cached batches of segment id from the one holding offset
// on, whole batches up to maxBytes (at least one).
func (c *cache) chunk(id UUID, offset int64, maxBytes int) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.chunks[id] {
		ce := e.Value.(*cacheEntry)
		if offset < ce.base || offset > ce.last {
			continue
		}
		c.lru.MoveToFront(e)
		return sliceBatches(ce.b, offset, maxBytes), true
	}
	return nil, false
}

// putChunk caches b, whole batches of segment id.
func (c *cache) putChunk(id UUID, b []byte) {
	if int64(len(b)) > c.max {
		return
	}
	base, last, ok := chunkRange(b)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.chunks[id] {
		if ce := e.Value.(*cacheEntry); ce.base <= base && last <= ce.last {
			return // held already
		}
	}
	e := c.lru.PushFront(&cacheEntry{id: id, chunk: true, base: base, last: last, b: b})
	c.chunks[id] = append(c.chunks[id], e)
	c.held += int64(len(b))
	c.evictLocked()
}

// chunkRange returns the first and last offsets of b's batches; ok is
// false unless b is one or more whole batches.
func chunkRange(b []byte) (base, last int64, ok bool) {
	for len(b) > 0 {
		if len(b) < record.HeaderSize {
			return 0, 0, false
		}
		n := record.Batch(b).Size()
		if n < record.HeaderSize || n > len(b) {
			return 0, 0, false
		}
		if !ok {
			base, ok = record.Batch(b).BaseOffset(), true
		}
		last = record.Batch(b[:n]).LastOffset()
		b = b[n:]
	}
	return base, last, ok
}

// forget drops everything cached of a deleted segment.
func (c *cache) forget(id UUID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range []IndexType{IndexOffset, IndexTransaction} {
		if e := c.index[cacheKey{id, t}]; e != nil {
			c.removeLocked(e)
		}
	}
	for len(c.chunks[id]) > 0 {
		c.removeLocked(c.chunks[id][0])
	}
}

// REQUIRES: c.mu held.
func (c *cache) evictLocked() {
	for c.held > c.max {
		c.removeLocked(c.lru.Back())
	}
}

// REQUIRES: c.mu held.
func (c *cache) removeLocked(e *list.Element) {
	ce := e.Value.(*cacheEntry)
	c.lru.Remove(e)
	c.held -= int64(len(ce.b))
	if !ce.chunk {
		delete(c.index, cacheKey{ce.id, ce.t})
		return
	}
	cs := c.chunks[ce.id]
	for i, x := range cs {
		if x == e {
			cs = append(cs[:i], cs[i+1:]...)
			break
		}
	}
	if len(cs) == 0 {
		delete(c.chunks, ce.id)
	} else {
		c.chunks[ce.id] = cs
	}
}

// bytes returns what the cache holds.
func (c *cache) bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held
}

// sliceBatches returns the batches of b from the one holding offset on,
// whole, up to maxBytes but at least one (KIP-74); nil when no batch of b
// reaches offset.
func sliceBatches(b []byte, offset int64, maxBytes int) []byte {
	for len(b) >= record.HeaderSize {
		n := record.Batch(b).Size()
		if n < record.HeaderSize || n > len(b) {
			return nil
		}
		if record.Batch(b[:n]).LastOffset() >= offset {
			break
		}
		b = b[n:]
	}
	end := 0
	for end+record.HeaderSize <= len(b) {
		n := record.Batch(b[end:]).Size()
		if n < record.HeaderSize || end+n > len(b) || (end > 0 && end+n > maxBytes) {
			break
		}
		end += n
	}
	return b[:end]
}

// DropCache empties the cache of remote indexes and chunks (benchmarks of
// cold reads; an operator's cache flush).
func (m *Manager) DropCache() {
	c := m.reader.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.lru.Len() > 0 {
		c.removeLocked(c.lru.Back())
	}
}
