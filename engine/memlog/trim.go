package memlog

import (
	"fmt"
	"time"

	"github.com/sluice/sluice/engine"
)

// Truncate removes every batch with an offset >= offset. offset must be a
// batch's base offset or lie in a gap between batches, or at/after
// EndOffset (a no-op), or at/below StartOffset, which empties the log and
// restarts it at offset as Kafka's truncateFullyAndStartAt does. Any other
// offset, inside a batch or negative, fails with engine.ErrOffsetOutOfRange
// and changes nothing. A cleaner checkpoint above offset comes down to it,
// as Kafka's LogCleanerManager.maybeTruncateCheckpoint.
//
// The chunk cut in two gets no room in its last block, so that the next
// append goes to a new block: bytes a reader holds are never overwritten,
// and batches stay back to back in their block. The chunk stays even when
// no batch is left in it, so that chunks still cover [base, end).
func (l *Log) Truncate(offset int64) error {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	if l.closed {
		return l.errClosed()
	}
	if offset >= l.end {
		return nil
	}
	if offset < 0 {
		return fmt.Errorf("%w: truncate %s/%d to %d", engine.ErrOffsetOutOfRange, l.id.Topic, l.id.Partition, offset)
	}
	if offset <= l.start {
		l.restartAt(offset)
		return nil
	}
	ci := l.chunkForLocked(offset)
	c := l.chunks[ci]
	ei := entryFor(c.index, offset)
	if ei < len(c.index) {
		if e := c.index[ei]; e.base < offset {
			return fmt.Errorf("%w: truncate %s/%d to %d: inside batch [%d, %d]",
				engine.ErrOffsetOutOfRange, l.id.Topic, l.id.Partition, offset, e.base, e.last)
		}
	}
	chunks := l.chunks[:ci:ci]
	if c.base < offset {
		cut := *c
		cut.index = c.index[:ei:ei]
		nblk := 0
		if ei > 0 {
			nblk = cut.index[ei-1].blk + 1
		}
		cut.blocks = c.blocks[:nblk:nblk]
		cut.room = nil
		cut.next = offset
		cut.maxTs = -1
		cut.bytes, cut.capacity = 0, 0
		for _, e := range cut.index {
			cut.maxTs = max(cut.maxTs, e.maxTs)
			cut.bytes += int64(e.end - e.pos)
		}
		for _, blk := range cut.blocks {
			cut.capacity += int64(len(blk))
		}
		chunks = append(chunks, &cut)
	}
	var size int64
	for _, c := range chunks {
		size += c.bytes
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	l.chunks, l.size, l.end = chunks, size, offset
	l.epochs.TruncateFromEnd(offset)
	l.keepAbortedLocked(func(t engine.AbortedTxn) bool { return t.LastOffset < offset })
	l.checkpoint = min(l.checkpoint, offset)
	return nil
}

// TruncateFullyAndStartAt implements engine.FullTruncater: it drops every
// chunk and restarts the log empty at offset, which may lie anywhere at or
// above 0, with no epoch history.
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	if l.closed {
		return l.errClosed()
	}
	if offset < 0 {
		return fmt.Errorf("%w: restart %s/%d at %d", engine.ErrOffsetOutOfRange, l.id.Topic, l.id.Partition, offset)
	}
	l.restartAt(offset)
	return nil
}

// restartAt empties the log and starts it at offset. Readers keep the
// chunks they hold. REQUIRES: l.writeMu held.
func (l *Log) restartAt(offset int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.chunks, l.size = nil, 0
	l.start, l.end = offset, offset
	engine.StartMoved()
	l.epochs = engine.NewEpochCache(nil)
	l.checkpoint = 0
	l.aborted = nil
	l.snapshots = nil
}

// DeleteBefore advances the start offset to offset and drops the chunks
// wholly below it at once. Offsets above EndOffset give
// engine.ErrOffsetOutOfRange; offsets at or below StartOffset are a no-op.
func (l *Log) DeleteBefore(offset int64) error {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	if l.closed {
		return l.errClosed()
	}
	if offset > l.end {
		return fmt.Errorf("%w: delete %s/%d before %d: log end is %d",
			engine.ErrOffsetOutOfRange, l.id.Topic, l.id.Partition, offset, l.end)
	}
	if offset <= l.start {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.setStartLocked(offset)
	return nil
}

// setStartLocked moves the start offset up to start and drops the chunks
// that end at or before it. REQUIRES: l.writeMu and l.mu held;
// l.start < start <= l.end.
func (l *Log) setStartLocked(start int64) {
	n := 0
	for n < len(l.chunks) && l.chunks[n].next <= start {
		l.size -= l.chunks[n].bytes
		n++
	}
	// Copy rather than reslice so the dropped chunks can be collected.
	l.chunks = append([]*chunk(nil), l.chunks[n:]...)
	l.start = start
	engine.StartMoved()
	l.epochs.TruncateFromStart(start)
	if len(l.chunks) > 0 {
		first := l.chunks[0].base
		l.keepAbortedLocked(func(t engine.AbortedTxn) bool { return t.LastOffset >= first })
	} else {
		l.aborted = nil
	}
}

// ApplyRetention drops the oldest chunks whose newest timestamp is older
// than RetentionMs, then the oldest while the log stays at or above
// RetentionBytes without them, never the newest chunk, as Kafka's
// deleteRetentionMsBreachedSegments and deleteRetentionSizeBreachedSegments
// do. It returns the new start offset.
func (l *Log) ApplyRetention(now time.Time) (int64, error) {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	if l.closed {
		return 0, l.errClosed()
	}
	n := engine.RetentionCut(l.cfg, now, len(l.chunks), func(i int) (int64, int64) {
		return l.chunks[i].retentionTime(), l.chunks[i].bytes
	})
	if n == 0 {
		return l.start, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.setStartLocked(max(l.start, l.chunks[n].base))
	return l.start, nil
}
