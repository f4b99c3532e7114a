package pebblelog

import (
	"errors"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/record"
)

// InactiveSegments implements engine.Compactable: every segment but the
// last (the active one), oldest first. End and FirstBatchTimestamp are not
// in the segment summaries: two seeks in the batch index per segment find
// them. A read error is logged and ends the list there (the cleaner then
// sees less to clean, and the next round asks again).
func (l *Log) InactiveSegments() []engine.SegmentInfo {
	l.s.life.RLock()
	defer l.s.life.RUnlock()
	l.mu.RLock()
	closed, segs := l.closed, l.segs
	l.mu.RUnlock()
	if closed || len(segs) < 2 {
		return nil
	}
	segs = segs[:len(segs)-1]
	it, err := l.s.db.NewIter(&pebble.IterOptions{
		LowerBound: newLogKey(tagBatchIdx, l.n, 0),
		UpperBound: logKeyEnd(tagBatchIdx, l.n),
	})
	if err != nil {
		l.s.logger.Error("pebblelog: inactive segments", "dir", l.s.dir, "topic", l.id.Topic, "partition", l.id.Partition, "err", err)
		return nil
	}
	defer it.Close()
	var key [logKeyLen]byte
	out := make([]engine.SegmentInfo, 0, len(segs))
	for _, seg := range segs {
		info := engine.SegmentInfo{
			Base: seg.base, Next: seg.next, End: seg.base, Bytes: seg.bytes,
			FirstBatchTimestamp: -1, LargestTimestamp: seg.maxTs,
		}
		if seg.bytes > 0 {
			first, ok, err := l.summaryAt(it, it.SeekGE(logKey(key[:], tagBatchIdx, l.n, seg.base)))
			if err == nil && ok && first.base < seg.next {
				info.FirstBatchTimestamp = first.maxTs
			}
			var last batchSummary
			if err == nil {
				last, ok, err = l.summaryAt(it, it.SeekLT(logKey(key[:], tagBatchIdx, l.n, seg.next)))
			}
			if err != nil {
				l.s.logger.Error("pebblelog: inactive segments", "dir", l.s.dir, "topic", l.id.Topic, "partition", l.id.Partition, "err", err)
				return out
			}
			if ok && last.base >= seg.base {
				info.End = last.last + 1
			}
		}
		out = append(out, info)
	}
	return out
}

// summaryAt decodes the batch index entry it is positioned on, if valid.
func (l *Log) summaryAt(it *pebble.Iterator, valid bool) (batchSummary, bool, error) {
	if !valid {
		return batchSummary{}, false, it.Error()
	}
	v, err := it.ValueAndErr()
	if err != nil {
		return batchSummary{}, false, err
	}
	bs, err := decodeBatchSummary(it.Key(), v)
	return bs, err == nil, err
}

// ReplaceSegments implements engine.Compactable: from and to must be the
// base of an inactive segment and the next of a later (or the same)
// inactive segment. The writer builds one Pebble batch that range-deletes
// the batches, batch index entries and segment summaries of [from, to)
// and puts the index entries of the batches it is given and one segment
// summary covering [from, to). Commit, if the segments are still the very
// ones they were now (by segment.gen; else engine.ErrCleanConflict),
// appends the batches to the data file, fdatasyncs it, applies the Pebble
// batch with their pointers, synced, and then punches the replaced
// batches' bytes out of the file. Until Commit the batches live in memory:
// a group is at most segment.bytes (the cleaner's grouping).
func (l *Log) ReplaceSegments(from, to int64) (engine.SegmentWriter, error) {
	l.s.life.RLock()
	defer l.s.life.RUnlock()
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	if l.closed {
		return nil, l.errClosed()
	}
	if l.replacing {
		return nil, fmt.Errorf("pebblelog: %s/%d: a segment replacement is already open", l.id.Topic, l.id.Partition)
	}
	i, j, ok := groupOf(l.segs, from, to)
	if !ok {
		return nil, fmt.Errorf("%w: %s/%d: [%d, %d) is not a run of inactive segments", engine.ErrCleanConflict,
			l.id.Topic, l.id.Partition, from, to)
	}
	w := &segmentWriter{
		l:          l,
		pb:         l.s.db.NewBatch(),
		next:       from,
		checkpoint: -1,
		seg: segment{
			base: from, next: to, maxTs: -1,
			createdMs: l.segs[i].createdMs, writeMs: l.segs[j-1].writeMs,
		},
	}
	for _, s := range l.segs[i:j] {
		w.gens = append(w.gens, s.gen)
		w.seg.writeMs = max(w.seg.writeMs, s.writeMs)
	}
	// The deletes go first: a Pebble batch applies its operations in
	// order, so the puts that follow win over them.
	for _, tag := range []byte{tagSegment, tagBatchIdx, tagBatch} {
		_ = w.pb.DeleteRange(newLogKey(tag, l.n, from), newLogKey(tag, l.n, to), nil)
	}
	l.replacing = true
	return w, nil
}

// groupOf returns the segments [i, j) covering exactly [from, to), none of
// them the last (active) one.
func groupOf(segs []segment, from, to int64) (i, j int, ok bool) {
	n := len(segs) - 1
	for i < n && segs[i].base < from {
		i++
	}
	if i >= n || segs[i].base != from {
		return 0, 0, false
	}
	j = i
	for j < n && segs[j].next < to {
		j++
	}
	if j == n || segs[j].next != to {
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

// SetCleanerCheckpoint implements engine.Compactable: a synced write of
// the log's metaCleaner key.
func (l *Log) SetCleanerCheckpoint(offset int64) error {
	l.s.life.RLock()
	defer l.s.life.RUnlock()
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	if l.closed {
		return l.errClosed()
	}
	if offset < 0 {
		return fmt.Errorf("pebblelog: %s/%d: cleaner checkpoint %d below 0", l.id.Topic, l.id.Partition, offset)
	}
	if err := l.s.db.Set(metaKey(l.n, metaCleaner), appendU64(nil, uint64(offset)), pebble.Sync); err != nil {
		return fmt.Errorf("pebblelog: %s: cleaner checkpoint of %s/%d: %w", l.s.dir, l.id.Topic, l.id.Partition, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.checkpoint = offset
	return nil
}

// segmentWriter is the engine.SegmentWriter of a pebble log.
type segmentWriter struct {
	l    *Log
	pb   *pebble.Batch // nil once committed or aborted
	gens []uint64      // the replaced segments' gens, as ReplaceSegments saw them
	seg  segment       // the replacement's summary
	next int64         // the lowest offset the next batch may have
	data []byte        // the batches written, for the data file at Commit
	err  error         // sticky
	// checkpoint >= 0: Commit sets the cleaner checkpoint to it, in the
	// same Pebble batch.
	checkpoint int64
}

// SetCheckpoint implements engine.SegmentWriter.
func (w *segmentWriter) SetCheckpoint(offset int64) { w.checkpoint = offset }

// errWriterDone is returned by a segmentWriter used after Commit or Abort.
var errWriterDone = errors.New("pebblelog: segment writer already committed or aborted")

// Write adds whole batches, which must lie in the replaced range in
// increasing order, and their index entries to the Pebble batch.
func (w *segmentWriter) Write(batches []byte) error {
	if w.pb == nil {
		return errWriterDone
	}
	if w.err != nil {
		return w.err
	}
	l := w.l
	var key [logKeyLen]byte
	var sum [batchSummaryLen]byte
	w.data = slices.Grow(w.data, len(batches))
	for pos := 0; pos < len(batches); {
		size, ok := record.PeekSize(batches[pos:])
		if !ok || size < record.HeaderSize || size > len(batches)-pos {
			w.err = fmt.Errorf("pebblelog: %s/%d: cleaned batch at byte %d is torn", l.id.Topic, l.id.Partition, pos)
			return w.err
		}
		b := record.Batch(batches[pos : pos+size])
		base := b.BaseOffset()
		if base < w.next || b.LastOffset() >= w.seg.next || b.LastOffset() < base {
			w.err = fmt.Errorf("pebblelog: %s/%d: cleaned batch [%d, %d] outside [%d, %d)", l.id.Topic, l.id.Partition,
				base, b.LastOffset(), w.next, w.seg.next)
			return w.err
		}
		w.data = append(w.data, b...)
		_ = w.pb.Set(logKey(key[:], tagBatchIdx, l.n, base), encodeBatchSummary(sum[:], b.LastOffsetDelta(), size, b.MaxTimestamp()), nil)
		w.seg.bytes += int64(size)
		w.seg.maxTs = max(w.seg.maxTs, b.MaxTimestamp())
		w.next = b.NextOffset()
		pos += size
	}
	return nil
}

// Commit applies the Pebble batch, synced, and publishes the replacement.
func (w *segmentWriter) Commit() error {
	if w.pb == nil {
		return errWriterDone
	}
	if w.err != nil {
		return w.err
	}
	l := w.l
	l.s.life.RLock()
	defer l.s.life.RUnlock()
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	pb := w.pb
	w.pb = nil
	defer pb.Close()
	l.replacing = false
	if l.closed {
		return l.errClosed()
	}
	i, j, ok := groupOf(l.segs, w.seg.base, w.seg.next)
	if ok && j-i == len(w.gens) {
		for k, g := range w.gens {
			ok = ok && l.segs[i+k].gen == g
		}
	} else {
		ok = false
	}
	if !ok {
		return fmt.Errorf("%w: %s/%d: segments [%d, %d) changed", engine.ErrCleanConflict, l.id.Topic, l.id.Partition, w.seg.base, w.seg.next)
	}
	_ = pb.Set(newLogKey(tagSegment, l.n, w.seg.base), w.seg.encode(make([]byte, segSummaryLen)), nil)
	checkpoint := l.checkpoint
	if w.checkpoint >= 0 {
		checkpoint = w.checkpoint
		_ = pb.Set(metaKey(l.n, metaCleaner), appendU64(nil, uint64(checkpoint)), nil)
	}
	punch, err := l.pointerRanges(w.seg.base, w.seg.next)
	if err != nil {
		return err
	}
	if err := l.writeCleaned(pb, w.data); err != nil {
		return fmt.Errorf("pebblelog: %s: replace segments [%d, %d) of %s/%d: %w", l.s.dir, w.seg.base, w.seg.next, l.id.Topic, l.id.Partition, err)
	}
	if err := l.s.commitSynced(pb); err != nil {
		return fmt.Errorf("pebblelog: %s: replace segments [%d, %d) of %s/%d: %w", l.s.dir, w.seg.base, w.seg.next, l.id.Topic, l.id.Partition, err)
	}
	defer l.punch(punch)
	w.seg.gen = l.newGen()
	segs := make([]segment, 0, len(l.segs)-(j-i)+1)
	segs = append(segs, l.segs[:i]...)
	segs = append(segs, w.seg)
	segs = append(segs, l.segs[j:]...)
	l.publish(l.start, l.end, segs, l.epochs, checkpoint)
	return nil
}

// writeCleaned appends the cleaned batches to the data file, fdatasyncs it
// and adds their pointers, the new append position and the flushed one (the
// whole file is durable now) to pb. The cleaned batches lie past every
// batch appended after them in the file, which is why the file is made
// durable here (recovery.go relies on it). REQUIRES: s.life and
// l.writeMu held.
func (l *Log) writeCleaned(pb *pebble.Batch, data []byte) error {
	if len(data) == 0 {
		return nil
	}
	pos, err := l.writeLocked(data)
	if err != nil {
		return err
	}
	d := l.df
	p, err := d.sync()
	if err != nil {
		return err
	}
	var key [logKeyLen]byte
	var ptr [pointerLen]byte
	for off := 0; off < len(data); {
		b := record.Batch(data[off:])
		size := b.Size()
		_ = pb.Set(logKey(key[:], tagBatch, l.n, b.BaseOffset()), encodePointer(ptr[:], pos+int64(off), size, b.LastOffsetDelta()), nil)
		off += size
	}
	_ = pb.Set(metaKey(l.n, metaPos), appendU64(nil, uint64(d.pos.Load())), nil)
	setFlushed(pb, l.n, p)
	return nil
}

// Abort discards the Pebble batch; after Commit it does nothing.
func (w *segmentWriter) Abort() {
	if w.pb == nil {
		return
	}
	w.pb.Close()
	w.pb = nil
	w.l.writeMu.Lock()
	w.l.replacing = false
	w.l.writeMu.Unlock()
}

var _ engine.Compactable = (*Log)(nil)
