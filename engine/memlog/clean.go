package memlog

import (
	"errors"
	"fmt"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/record"
)

// InactiveSegments implements engine.Compactable: every chunk but the last
// (the active one), oldest first.
func (l *Log) InactiveSegments() []engine.SegmentInfo {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if len(l.chunks) < 2 {
		return nil
	}
	out := make([]engine.SegmentInfo, 0, len(l.chunks)-1)
	for _, c := range l.chunks[:len(l.chunks)-1] {
		s := engine.SegmentInfo{
			Base: c.base, Next: c.next, End: c.base, Bytes: c.bytes,
			FirstBatchTimestamp: -1, LargestTimestamp: c.maxTs,
		}
		if n := len(c.index); n > 0 {
			s.End = c.index[n-1].last + 1
			s.FirstBatchTimestamp = c.index[0].maxTs
		}
		out = append(out, s)
	}
	return out
}

// ReplaceSegments implements engine.Compactable: from and to must be the
// base of an inactive chunk and the next of a later (or the same) inactive
// chunk. The writer copies what it is given into a new chunk; Commit swaps
// it for the chunks [from, to) if they are still the very chunks they were
// now (compared by identity: every mutation that changes a chunk other
// than the active one replaces it), or returns engine.ErrCleanConflict.
func (l *Log) ReplaceSegments(from, to int64) (engine.SegmentWriter, error) {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	if l.closed {
		return nil, l.errClosed()
	}
	if l.replacing {
		return nil, fmt.Errorf("memlog: %s/%d: a segment replacement is already open", l.id.Topic, l.id.Partition)
	}
	i, j, ok := l.groupLocked(from, to)
	if !ok {
		return nil, fmt.Errorf("%w: %s/%d: [%d, %d) is not a run of inactive chunks", engine.ErrCleanConflict,
			l.id.Topic, l.id.Partition, from, to)
	}
	l.replacing = true
	var limit int64
	for _, c := range l.chunks[i:j] {
		limit += c.bytes
	}
	return &chunkWriter{
		limit:      limit,
		l:          l,
		old:        append([]*chunk(nil), l.chunks[i:j]...),
		next:       from,
		checkpoint: -1,
		c:          &chunk{base: from, next: to, maxTs: -1, created: l.chunks[i].created, lastWrite: l.chunks[j-1].lastWrite},
	}, nil
}

// groupLocked returns the chunks [i, j) covering exactly [from, to), none
// of them the active one. REQUIRES: l.writeMu or l.mu held.
func (l *Log) groupLocked(from, to int64) (i, j int, ok bool) {
	n := len(l.chunks) - 1 // the active chunk is never replaced
	for i < n && l.chunks[i].base < from {
		i++
	}
	if i == n || l.chunks[i].base != from {
		return 0, 0, false
	}
	j = i
	for j < n && l.chunks[j].next < to {
		j++
	}
	if j == n || l.chunks[j].next != to {
		return 0, 0, false
	}
	return i, j + 1, true
}

// CleanerCheckpoint implements engine.Compactable.
func (l *Log) CleanerCheckpoint() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.checkpoint
}

// SetCleanerCheckpoint implements engine.Compactable. It is kept with the
// log, so it lives as long as the log does (see the package doc).
func (l *Log) SetCleanerCheckpoint(offset int64) error {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	if l.closed {
		return l.errClosed()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.checkpoint = offset
	return nil
}

// chunkWriter is the engine.SegmentWriter of a memory log: it builds the
// replacement chunk, unpublished, until Commit.
type chunkWriter struct {
	l   *Log
	old []*chunk // the chunks to replace, as ReplaceSegments saw them
	c   *chunk   // the replacement
	// limit bounds the replacement's block sizes: the bytes of the
	// chunks it replaces, which it cannot pass.
	limit int64
	next  int64 // the lowest offset the next batch may have
	// checkpoint >= 0: Commit sets the cleaner checkpoint to it.
	checkpoint int64
	err        error // sticky
	done       bool  // committed or aborted
}

// errWriterDone is returned by a chunkWriter used after Commit or Abort.
var errWriterDone = errors.New("memlog: segment writer already committed or aborted")

// Write copies whole batches, which must lie in the replaced range in
// increasing order, into the replacement chunk.
func (w *chunkWriter) Write(batches []byte) error {
	if w.done {
		return errWriterDone
	}
	if w.err != nil {
		return w.err
	}
	for pos := 0; pos < len(batches); {
		size, ok := record.PeekSize(batches[pos:])
		if !ok || size < record.HeaderSize || size > len(batches)-pos {
			w.err = fmt.Errorf("memlog: %s/%d: cleaned batch at byte %d is torn", w.l.id.Topic, w.l.id.Partition, pos)
			return w.err
		}
		b := record.Batch(batches[pos : pos+size])
		if b.BaseOffset() < w.next || b.LastOffset() >= w.c.next || b.LastOffset() < b.BaseOffset() {
			w.err = fmt.Errorf("memlog: %s/%d: cleaned batch [%d, %d] outside [%d, %d)", w.l.id.Topic, w.l.id.Partition,
				b.BaseOffset(), b.LastOffset(), w.next, w.c.next)
			return w.err
		}
		// push moves the chunk's next and lastWrite: keep them.
		next, lastWrite := w.c.next, w.c.lastWrite
		w.c.push(b, lastWrite, w.limit)
		w.c.next, w.c.lastWrite = next, lastWrite
		w.next = b.LastOffset() + 1
		pos += size
	}
	return nil
}

// Commit publishes the replacement chunk in place of the old ones.
func (w *chunkWriter) Commit() error {
	if w.done {
		return errWriterDone
	}
	if w.err != nil {
		return w.err
	}
	l := w.l
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	w.done = true
	l.replacing = false
	if l.closed {
		return l.errClosed()
	}
	i, j, ok := l.groupLocked(w.c.base, w.c.next)
	if ok && j-i == len(w.old) {
		for k, c := range w.old {
			ok = ok && l.chunks[i+k] == c
		}
	}
	if !ok {
		return fmt.Errorf("%w: %s/%d: chunks [%d, %d) changed", engine.ErrCleanConflict, l.id.Topic, l.id.Partition, w.c.base, w.c.next)
	}
	w.c.room = nil // an inactive chunk is never appended to
	var freed int64
	for _, c := range w.old {
		freed += c.bytes
	}
	chunks := make([]*chunk, 0, len(l.chunks)-len(w.old)+1)
	chunks = append(chunks, l.chunks[:i]...)
	chunks = append(chunks, w.c)
	chunks = append(chunks, l.chunks[j:]...)

	l.mu.Lock()
	defer l.mu.Unlock()
	l.chunks = chunks
	l.size += w.c.bytes - freed
	if w.checkpoint >= 0 {
		l.checkpoint = w.checkpoint
	}
	return nil
}

// SetCheckpoint implements engine.SegmentWriter.
func (w *chunkWriter) SetCheckpoint(offset int64) { w.checkpoint = offset }

// Abort drops the replacement; after Commit it does nothing.
func (w *chunkWriter) Abort() {
	if w.done {
		return
	}
	w.done = true
	w.l.writeMu.Lock()
	w.l.replacing = false
	w.l.writeMu.Unlock()
	w.c = nil
}

var _ engine.Compactable = (*Log)(nil)
