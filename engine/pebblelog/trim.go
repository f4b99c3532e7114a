package pebblelog

import (
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/sluice/sluice/engine"
)

// Truncate removes every batch with an offset >= offset, with range deletes
// and a recomputed summary for the segment cut in two, in one synced Pebble
// batch. offset must be a batch's base offset or lie in a gap between
// batches, or at/after EndOffset (a no-op), or at/below StartOffset, which
// empties the log and restarts it at offset with no epoch history (Kafka's
// truncateFullyAndStartAt). An offset inside a batch, or negative, fails
// with engine.ErrOffsetOutOfRange and changes nothing. A cleaner
// checkpoint above offset comes down to it in the same batch, as Kafka's
// LogCleanerManager.maybeTruncateCheckpoint.
func (l *Log) Truncate(offset int64) error {
	l.s.life.RLock()
	defer l.s.life.RUnlock()
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	if l.closed {
		return l.errClosed()
	}
	return l.truncateLocked(offset)
}

// truncateLocked is Truncate. REQUIRES: s.life and l.writeMu held.
func (l *Log) truncateLocked(offset int64) error {
	if offset >= l.end {
		return nil
	}
	if offset < 0 {
		return fmt.Errorf("%w: truncate %s/%d to %d", engine.ErrOffsetOutOfRange, l.id.Topic, l.id.Partition, offset)
	}
	if offset <= l.start {
		return l.restartAtLocked(offset)
	}
	i := segmentFor(l.segs, offset)
	seg := l.segs[i]
	bs, found, err := l.batchAt(offset)
	if err != nil {
		return err
	}
	if found && bs.base < offset && bs.last >= offset {
		return fmt.Errorf("%w: truncate %s/%d to %d: inside batch [%d, %d]",
			engine.ErrOffsetOutOfRange, l.id.Topic, l.id.Partition, offset, bs.base, bs.last)
	}
	punch, err := l.pointerRanges(offset, l.end)
	if err != nil {
		return err
	}
	pb := l.s.db.NewBatch()
	defer pb.Close()
	l.deleteFrom(pb, offset)
	segs := l.segs[:i:i]
	if seg.base < offset {
		cut, err := l.summarize(seg, offset)
		if err != nil {
			return err
		}
		cut.gen = l.newGen()
		segs = append(segs, cut)
		_ = pb.Set(newLogKey(tagSegment, l.n, cut.base), cut.encode(make([]byte, segSummaryLen)), nil)
	}
	epochs := engine.NewEpochCache(l.epochs.Entries())
	if epochs.TruncateFromEnd(offset) {
		_ = pb.Set(metaKey(l.n, metaEpochs), encodeEpochs(epochs.Entries()), nil)
	}
	checkpoint := min(l.checkpoint, offset)
	if checkpoint != l.checkpoint {
		_ = pb.Set(metaKey(l.n, metaCleaner), appendU64(nil, uint64(checkpoint)), nil)
	}
	l.setPos(pb)
	if err := l.s.commitSynced(pb); err != nil {
		return fmt.Errorf("pebblelog: %s: truncate %s/%d: %w", l.s.dir, l.id.Topic, l.id.Partition, err)
	}
	l.publish(l.start, offset, segs, epochs, checkpoint)
	l.punch(punch)
	return nil
}

// TruncateFullyAndStartAt implements engine.FullTruncater: one synced
// Pebble batch range-deletes every batch, index entry and segment summary
// of the log, sets its start offset to offset (which may lie anywhere at
// or above 0) and deletes its epoch history. The log end offset is the
// start offset when no segment is left, so a reopen finds the log at
// offset.
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	l.s.life.RLock()
	defer l.s.life.RUnlock()
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	if l.closed {
		return l.errClosed()
	}
	if offset < 0 {
		return fmt.Errorf("%w: restart %s/%d at %d", engine.ErrOffsetOutOfRange, l.id.Topic, l.id.Partition, offset)
	}
	return l.restartAtLocked(offset)
}

// restartAtLocked empties the log and restarts it at offset with no epoch
// history, for TruncateFullyAndStartAt and for Truncate at or below the
// start offset. REQUIRES: s.life and l.writeMu held; offset >= 0.
func (l *Log) restartAtLocked(offset int64) error {
	pb := l.s.db.NewBatch()
	defer pb.Close()
	l.deleteFrom(pb, 0)
	_ = pb.DeleteRange(newLogKey(tagSnapshot, l.n, 0), logKeyEnd(tagSnapshot, l.n), nil)
	_ = pb.Set(metaKey(l.n, metaStart), appendU64(nil, uint64(offset)), nil)
	_ = pb.Delete(metaKey(l.n, metaEpochs), nil)
	_ = pb.Delete(metaKey(l.n, metaCleaner), nil)
	l.setPos(pb)
	if err := l.s.commitSynced(pb); err != nil {
		return fmt.Errorf("pebblelog: %s: restart %s/%d at %d: %w", l.s.dir, l.id.Topic, l.id.Partition, offset, err)
	}
	l.publish(offset, offset, nil, engine.NewEpochCache(nil), 0)
	if l.df != nil {
		// Every byte below the append position belonged to a batch
		// deleted now, or to none.
		l.df.punch(0, l.df.pos.Load())
	}
	return nil
}

// setPos adds the data file's append position to pb, so that a synced trim
// carries it (recovery.go). REQUIRES: l.writeMu held.
func (l *Log) setPos(pb *pebble.Batch) {
	if l.df != nil {
		_ = pb.Set(metaKey(l.n, metaPos), appendU64(nil, uint64(l.df.pos.Load())), nil)
	}
}

// pointerRanges returns the data file ranges of the batch pointers with
// base offset in [from, to), adjacent ranges merged. REQUIRES: s.life held.
func (l *Log) pointerRanges(from, to int64) ([][2]int64, error) {
	if l.df == nil || from >= to {
		return nil, nil
	}
	it, err := l.s.db.NewIter(&pebble.IterOptions{
		LowerBound: newLogKey(tagBatch, l.n, from),
		UpperBound: newLogKey(tagBatch, l.n, to),
	})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out [][2]int64
	for ok := it.First(); ok; ok = it.Next() {
		p, isPtr, _ := decodePointer(it.Value())
		if !isPtr {
			continue
		}
		if k := len(out); k > 0 && out[k-1][1] == p.pos {
			out[k-1][1] += int64(p.size)
		} else {
			out = append(out, [2]int64{p.pos, p.pos + int64(p.size)})
		}
	}
	return out, it.Error()
}

// punch punches ranges out of the data file (deferred while readers hold
// it), after the commit that unindexed them. REQUIRES: l.writeMu held.
func (l *Log) punch(ranges [][2]int64) {
	for _, r := range ranges {
		l.df.punch(r[0], r[1]-r[0])
	}
}

// deleteFrom adds range deletes of every batch, batch index entry, aborted
// transaction and segment summary at or above offset to pb.
func (l *Log) deleteFrom(pb *pebble.Batch, offset int64) {
	for _, tag := range []byte{tagSegment, tagBatchIdx, tagBatch, tagAborted} {
		_ = pb.DeleteRange(newLogKey(tag, l.n, offset), logKeyEnd(tag, l.n), nil)
	}
}

// deleteBelow adds range deletes of every batch, batch index entry, aborted
// transaction and segment summary below offset to pb.
func (l *Log) deleteBelow(pb *pebble.Batch, offset int64) {
	for _, tag := range []byte{tagSegment, tagBatchIdx, tagBatch, tagAborted} {
		_ = pb.DeleteRange(newLogKey(tag, l.n, 0), newLogKey(tag, l.n, offset), nil)
	}
}

// publish installs a new state after a committed trim.
// REQUIRES: l.writeMu held.
func (l *Log) publish(start, end int64, segs []segment, epochs *engine.EpochCache, checkpoint int64) {
	var size int64
	for _, s := range segs {
		size += s.bytes
	}
	l.recent.Drop() // the bytes it holds may be unindexed now: give it back
	l.mu.Lock()
	defer l.mu.Unlock()
	l.start, l.end, l.segs, l.size, l.epochs = start, end, segs, size, epochs
	if l.tail != nil {
		l.tail.reset() // before the caller punches what it unindexed
	}
	moved := l.startPub.Load() != start
	l.startPub.Store(start)
	l.endPub.Store(end)
	l.checkpoint = checkpoint
	if moved {
		engine.StartMoved()
	}
}

// segmentFor returns the index of the segment holding offset: the first
// whose next is above it. REQUIRES: segs non-empty.
func segmentFor(segs []segment, offset int64) int {
	lo, hi := 0, len(segs)-1
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if segs[m].next > offset {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}

// batchAt returns the index entry of the last batch whose base is at or
// below offset: the batch holding offset, or the one before the gap that
// holds it. found is false when there is none (a gap from the log start).
// REQUIRES: s.life held; start <= offset < end.
func (l *Log) batchAt(offset int64) (bs batchSummary, found bool, err error) {
	it, err := l.s.db.NewIter(&pebble.IterOptions{
		LowerBound: newLogKey(tagBatchIdx, l.n, 0),
		UpperBound: logKeyEnd(tagBatchIdx, l.n),
	})
	if err != nil {
		return batchSummary{}, false, err
	}
	defer it.Close()
	if !it.SeekLT(newLogKey(tagBatchIdx, l.n, offset+1)) {
		return batchSummary{}, false, it.Error()
	}
	v, err := it.ValueAndErr()
	if err != nil {
		return batchSummary{}, false, err
	}
	bs, err = decodeBatchSummary(it.Key(), v)
	return bs, err == nil, err
}

// summarize recomputes the summary of seg cut short at end, from its batch
// index entries. REQUIRES: s.life held.
func (l *Log) summarize(seg segment, end int64) (segment, error) {
	seg.next, seg.bytes, seg.maxTs = end, 0, -1
	err := l.scanIndex(seg.base, end, func(bs batchSummary) bool {
		seg.bytes += int64(bs.size)
		seg.maxTs = max(seg.maxTs, bs.maxTs)
		return true
	})
	return seg, err
}

// scanIndex calls fn for each batch index entry with base in [from, to),
// ascending, until fn returns false. REQUIRES: s.life held.
func (l *Log) scanIndex(from, to int64, fn func(batchSummary) bool) error {
	it, err := l.s.db.NewIter(&pebble.IterOptions{
		LowerBound: newLogKey(tagBatchIdx, l.n, from),
		UpperBound: newLogKey(tagBatchIdx, l.n, to),
	})
	if err != nil {
		return err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return err
		}
		bs, err := decodeBatchSummary(it.Key(), v)
		if err != nil {
			return err
		}
		if !fn(bs) {
			break
		}
	}
	return it.Error()
}

// DeleteBefore advances the start offset to offset and deletes the
// segments wholly below it (batches below offset in the segment holding it
// stay until retention takes that segment, as with segment files).
// Offsets above EndOffset give engine.ErrOffsetOutOfRange; offsets at or
// below StartOffset are a no-op.
func (l *Log) DeleteBefore(offset int64) error {
	l.s.life.RLock()
	defer l.s.life.RUnlock()
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
	return l.advanceStart(offset)
}

// advanceStart moves the start offset to start and deletes the segments
// that end at or before it, in one synced Pebble batch.
// REQUIRES: s.life and l.writeMu held; l.start < start <= l.end.
func (l *Log) advanceStart(start int64) error {
	k := 0
	for k < len(l.segs) && l.segs[k].next <= start {
		k++
	}
	var punch [][2]int64
	var err error
	if k == len(l.segs) {
		punch, err = l.pointerRanges(0, l.end)
	} else if k > 0 {
		punch, err = l.pointerRanges(0, l.segs[k].base)
	}
	if err != nil {
		return err
	}
	pb := l.s.db.NewBatch()
	defer pb.Close()
	if k == len(l.segs) {
		l.deleteFrom(pb, 0)
	} else if k > 0 {
		l.deleteBelow(pb, l.segs[k].base)
	}
	_ = pb.Set(metaKey(l.n, metaStart), appendU64(nil, uint64(start)), nil)
	epochs := engine.NewEpochCache(l.epochs.Entries())
	if epochs.TruncateFromStart(start) {
		_ = pb.Set(metaKey(l.n, metaEpochs), encodeEpochs(epochs.Entries()), nil)
	}
	l.setPos(pb)
	if err := l.s.commitSynced(pb); err != nil {
		return fmt.Errorf("pebblelog: %s: advance start of %s/%d to %d: %w", l.s.dir, l.id.Topic, l.id.Partition, start, err)
	}
	l.publish(start, l.end, append([]segment(nil), l.segs[k:]...), epochs, l.checkpoint)
	l.punch(punch)
	return nil
}

// ApplyRetention deletes the oldest segments whose newest timestamp is
// older than RetentionMs, then the oldest while the log stays at or above
// RetentionBytes without them, never the newest segment, as Kafka does. It
// returns the new start offset.
func (l *Log) ApplyRetention(now time.Time) (int64, error) {
	l.s.life.RLock()
	defer l.s.life.RUnlock()
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	if l.closed {
		return 0, l.errClosed()
	}
	n := engine.RetentionCut(l.cfg.Get(), now, len(l.segs), func(i int) (int64, int64) {
		return l.segs[i].retentionTime(), l.segs[i].bytes
	})
	if n == 0 {
		return l.start, nil
	}
	if err := l.advanceStart(max(l.start, l.segs[n].base)); err != nil {
		return 0, err
	}
	return l.start, nil
}
