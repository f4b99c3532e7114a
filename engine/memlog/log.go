package memlog

import (
	"fmt"
	"sync"
	"time"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/record"
	"github.com/sluice/sluice/zerocopy"
)

// Log is one in-memory partition log. Safe for concurrent use.
//
// Locking: writeMu serializes every mutation (Append, Truncate, DeleteBefore,
// ApplyRetention, SetConfig, Close). A mutation prepares its new state
// holding only writeMu, then publishes it under mu.Lock; readers hold
// mu.RLock. So fields below mu may be read holding either lock, and are
// written holding both.
type Log struct {
	id  engine.PartitionID
	now func() time.Time

	writeMu sync.Mutex
	mu      sync.RWMutex
	cfg     engine.LogConfig // with defaults filled
	// chunks cover the offset space densely: chunks[i].next ==
	// chunks[i+1].base, chunks[0].base <= start, chunks[len-1].next ==
	// end. The batches inside may have gaps.
	chunks []*chunk
	start  int64 // log start offset
	end    int64 // log end offset; chunks[len-1].next when non-empty
	size   int64 // sum of chunk.bytes
	epochs *engine.EpochCache
	closed bool
	// checkpoint is the cleaner checkpoint (engine.Compactable).
	checkpoint int64
	// replacing: a SegmentWriter is open. REQUIRES: writeMu.
	replacing bool
	// aborted is the aborted-transaction index (engine.TxnIndex), in
	// append order (increasing LastOffset). Entries go with the chunk
	// holding their marker: cut by Truncate, dropped with the chunk.
	aborted []engine.AbortedTxn
	// snapshots are the engine.SnapshotStore snapshots by offset; they
	// outlive Close as the batches do. REQUIRES: mu to read or write.
	snapshots map[int64][]byte
}

func newLog(id engine.PartitionID, cfg engine.LogConfig, now func() time.Time) *Log {
	return &Log{id: id, now: now, cfg: cfg.WithDefaults(), epochs: engine.NewEpochCache(nil)}
}

// reopen makes a closed log usable again with cfg; an open log keeps going
// with cfg applied.
func (l *Log) reopen(cfg engine.LogConfig) {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = false
	l.cfg = cfg.WithDefaults()
}

// drop closes the log and frees its batches (DeleteLog).
func (l *Log) drop() {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	l.chunks = nil
	l.size = 0
}

func (l *Log) errClosed() error {
	return fmt.Errorf("%w: log %s/%d", engine.ErrClosed, l.id.Topic, l.id.Partition)
}

// Append validates batches with engine.PrepareAppend and copies them into
// the log; all or none. batches is not retained.
func (l *Log) Append(batches []byte, opts engine.AppendOptions) (engine.AppendInfo, error) {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	if l.closed {
		return engine.AppendInfo{}, l.errClosed()
	}
	cfg := l.cfg
	info, err := engine.PrepareAppend(batches, l.end, opts, cfg.MaxBatchBytes)
	if err != nil {
		return engine.AppendInfo{}, fmt.Errorf("memlog: append to %s/%d: %w", l.id.Topic, l.id.Partition, err)
	}
	now := l.now()

	// Build the new tail holding only writeMu. tail is a copy of the last
	// chunk's fields, on the stack; its buf and index grow into their spare
	// capacity, which readers never look at (they stop at the published
	// lengths), or into new arrays. It is copied back into the published
	// chunk under mu, so an append that does not roll allocates nothing
	// (copying the chunk to the heap instead cost one allocation per
	// Append).
	var tail chunk
	n := len(l.chunks)
	if n > 0 {
		tail = *l.chunks[n-1]
	}
	var cur *chunk // the newest chunk this append opened; nil: none yet
	var added []*chunk
	for pos := 0; pos < len(batches); {
		b := record.Batch(batches[pos:])
		size := b.Size()
		b = b[:size]
		pos += size
		c := cur
		if c == nil && n > 0 {
			c = &tail
		}
		if c == nil || c.rolls(size, now, cfg) {
			// The new chunk starts where the one before ends (at
			// the log end when there is none), so that chunks
			// cover the offsets densely even when a follower's
			// batch starts past it.
			base := l.end
			if c != nil {
				base = c.next
			}
			cur = &chunk{base: base, maxTs: -1, created: now}
			added = append(added, cur)
			c = cur
		}
		c.push(b, now, cfg.SegmentBytes)
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	if n > 0 {
		*l.chunks[n-1] = tail
	}
	l.chunks = append(l.chunks, added...)
	l.size += int64(len(batches))
	l.end = info.LastOffset + 1
	for pos := 0; pos < len(batches); {
		b := record.Batch(batches[pos:])
		l.epochs.Assign(b.LeaderEpoch(), b.BaseOffset())
		pos += b.Size()
	}
	return info, nil
}

// Read returns whole batches from the one holding offset (or the first
// after it when offset lies in a gap of a compacted log), as documented on
// engine.Log. The slice aliases the log's memory without a copy; those
// bytes are immutable, so it stays valid after Truncate, retention or
// DeleteLog. A read never spans two chunks, as a segment read never spans
// two segments, nor two blocks of a chunk. Release is a no-op but must
// still be called by contract.
func (l *Log) Read(offset int64, maxBytes int, upTo int64) (zerocopy.Slice, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return zerocopy.Slice{}, l.errClosed()
	}
	if offset < l.start || offset > l.end {
		return zerocopy.Slice{}, fmt.Errorf("%w: offset %d, log %s/%d holds [%d, %d)",
			engine.ErrOffsetOutOfRange, offset, l.id.Topic, l.id.Partition, l.start, l.end)
	}
	if offset == l.end || (upTo >= 0 && offset >= upTo) {
		return zerocopy.Slice{}, nil
	}
	// The batch holding offset, or the first one after it when offset
	// lies in a gap, possibly in a later chunk.
	ci := l.chunkForLocked(offset)
	c := l.chunks[ci]
	i := entryFor(c.index, offset)
	for i == len(c.index) {
		if ci++; ci == len(l.chunks) {
			return zerocopy.Slice{}, nil // a gap up to the log end
		}
		c, i = l.chunks[ci], 0
	}
	first := c.index[i]
	if upTo >= 0 && first.last >= upTo {
		return zerocopy.Slice{}, nil
	}
	end := first.end
	for _, e := range c.index[i+1:] {
		if e.blk != first.blk || (upTo >= 0 && e.last >= upTo) || e.end-first.pos > maxBytes {
			break
		}
		end = e.end
	}
	return zerocopy.BytesSlice(c.blocks[first.blk][first.pos:end:end]), nil
}

// chunkForLocked returns the index of the chunk holding offset.
// REQUIRES: l.mu held; start <= offset < end.
func (l *Log) chunkForLocked(offset int64) int {
	lo, hi := 0, len(l.chunks)-1
	for lo < hi { // first chunk whose next > offset
		m := int(uint(lo+hi) >> 1)
		if l.chunks[m].next > offset {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}

// entryFor returns the index of the batch holding offset, or of the first
// batch after it when offset lies in a gap: the first entry whose last
// offset is >= offset (len(index) when none is).
func entryFor(index []entry, offset int64) int {
	lo, hi := 0, len(index)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if index[m].last >= offset {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}

// StartOffset returns the log start offset.
func (l *Log) StartOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.start
}

// EndOffset returns the offset the next appended record gets.
func (l *Log) EndOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.end
}

// Size returns the bytes of the batches held, including batches below the
// start offset that share a chunk with it (as in a segment).
func (l *Log) Size() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.size
}

// LeaderEpochs returns a copy of the leader epoch history.
func (l *Log) LeaderEpochs() []engine.EpochEntry {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.epochs.Entries()
}

// SetConfig applies cfg (defaults filled) to later appends and retention.
func (l *Log) SetConfig(cfg engine.LogConfig) error {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	if l.closed {
		return l.errClosed()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cfg = cfg.WithDefaults()
	return nil
}

// Flush does nothing: memory is as durable as a memory log gets.
func (l *Log) Flush() error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return l.errClosed()
	}
	return nil
}

// Close closes the log; later calls fail with engine.ErrClosed until the
// store's OpenLog reopens it. Closing twice is a no-op.
func (l *Log) Close() error {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	return nil
}
