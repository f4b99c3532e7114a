package pebblelog

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/record"
)

// OffsetForTimestamp returns the first record at or after the start offset
// whose timestamp is >= ts, or for engine.MaxTimestampQuery the record with
// the largest timestamp (the latest on ties).
//
// Time lookups scan: segments whose maxTs is below ts are skipped from the
// in-memory summaries, then the batch index entries (16-byte values, no
// batch bytes) of the remaining segments are walked to the first batch with
// maxTimestamp >= ts, and only that batch is read and decoded. ListOffsets
// by time is rare next to produce and fetch, so a dense on-disk index beats
// keeping a time index in memory for every partition.
func (l *Log) OffsetForTimestamp(ts int64) (offset, timestamp int64, ok bool, err error) {
	// writeMu keeps truncation and retention from deleting the batches the
	// summaries name while the lookup runs; lookups are short and rare.
	l.s.life.RLock()
	defer l.s.life.RUnlock()
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	closed, start, segs := l.closed, l.start, l.segs
	if closed {
		return 0, 0, false, l.errClosed()
	}
	if ts == engine.MaxTimestampQuery {
		return l.maxTimestamp(segs, start)
	}
	for _, seg := range segs {
		if seg.maxTs < ts || seg.next <= start {
			continue
		}
		var hit *batchSummary
		err := l.scanIndex(seg.base, seg.next, func(bs batchSummary) bool {
			if bs.maxTs >= ts && bs.last >= start {
				hit = &bs
				return false
			}
			return true
		})
		if err != nil || hit == nil {
			if err != nil {
				return 0, 0, false, err
			}
			continue
		}
		found := false
		err = l.records(hit.base, func(it *record.Iter) bool {
			if it.Offset() >= start && it.Timestamp() >= ts {
				offset, timestamp, found = it.Offset(), it.Timestamp(), true
				return false
			}
			return true
		})
		if err != nil || found {
			return offset, timestamp, found, err
		}
		// The batch's maxTimestamp claimed a record that is not there (or
		// it lies below start): keep looking from the next batch.
		if off, t, ok, err := l.firstFrom(hit.last+1, seg.next, ts, start); err != nil || ok {
			return off, t, ok, err
		}
	}
	return 0, 0, false, nil
}

// firstFrom is the slow path of OffsetForTimestamp inside one segment:
// decode every batch with maxTimestamp >= ts from offset from.
func (l *Log) firstFrom(from, to, ts, start int64) (offset, timestamp int64, ok bool, err error) {
	var cands []int64
	if err := l.scanIndex(from, to, func(bs batchSummary) bool {
		if bs.maxTs >= ts {
			cands = append(cands, bs.base)
		}
		return true
	}); err != nil {
		return 0, 0, false, err
	}
	for _, base := range cands {
		err = l.records(base, func(it *record.Iter) bool {
			if it.Offset() >= start && it.Timestamp() >= ts {
				offset, timestamp, ok = it.Offset(), it.Timestamp(), true
				return false
			}
			return true
		})
		if err != nil || ok {
			return offset, timestamp, ok, err
		}
	}
	return 0, 0, false, nil
}

// maxTimestamp answers engine.MaxTimestampQuery: the last segment with the
// largest maxTimestamp, the last batch in it with that maxTimestamp, then
// the last record in that batch with the largest timestamp.
func (l *Log) maxTimestamp(segs []segment, start int64) (offset, timestamp int64, ok bool, err error) {
	best := -1
	bestTs := int64(-1 << 63)
	for i, seg := range segs {
		if seg.next <= start {
			continue
		}
		m := seg.maxTs
		if seg.base < start { // holds batches below start: ask the index
			m = -1 << 63
			if err := l.scanIndex(seg.base, seg.next, func(bs batchSummary) bool {
				if bs.last >= start {
					m = max(m, bs.maxTs)
				}
				return true
			}); err != nil {
				return 0, 0, false, err
			}
		}
		if m >= bestTs {
			best, bestTs = i, m
		}
	}
	if best < 0 {
		return 0, 0, false, nil
	}
	var hit batchSummary
	if err := l.scanIndex(segs[best].base, segs[best].next, func(bs batchSummary) bool {
		if bs.maxTs == bestTs && bs.last >= start {
			hit = bs
		}
		return true
	}); err != nil {
		return 0, 0, false, err
	}
	offset, timestamp = hit.last, hit.maxTs
	found := false
	err = l.records(hit.base, func(it *record.Iter) bool {
		if it.Offset() >= start && (!found || it.Timestamp() >= timestamp) {
			offset, timestamp, found = it.Offset(), it.Timestamp(), true
		}
		return true
	})
	return offset, timestamp, err == nil, err
}

// records reads the batch at base and calls fn for each of its records
// until fn returns false. REQUIRES: s.life held.
func (l *Log) records(base int64, fn func(*record.Iter) bool) error {
	v, closer, err := l.s.db.Get(newLogKey(tagBatch, l.n, base))
	if errors.Is(err, pebble.ErrNotFound) {
		return l.corrupt("batch index names %d, no batch there", base)
	}
	if err != nil {
		return err
	}
	defer closer.Close()
	if p, isPtr, bad := decodePointer(v); bad {
		return l.corrupt("batch pointer at %d: %x", base, v)
	} else if isPtr {
		if v, err = l.readBatch(base, p); err != nil {
			return err
		}
	}
	if _, err := record.ValidateStored(v); err != nil { // cleaned batches may have lost records
		return fmt.Errorf("%w: %v", l.corrupt("batch at %d", base), err)
	}
	var it record.Iter
	it.Reset(record.Batch(v))
	for it.Next() {
		if !fn(&it) {
			return nil
		}
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("%w: %v", l.corrupt("batch at %d", base), err)
	}
	return nil
}

// readBatch reads the batch a pointer names into a new buffer.
// REQUIRES: s.life held.
func (l *Log) readBatch(base int64, p batchPointer) ([]byte, error) {
	l.mu.RLock()
	d := l.df
	l.mu.RUnlock()
	if d == nil {
		return nil, l.corrupt("batch pointer at %d, no data file", base)
	}
	zf, f, err := d.acquire(false)
	if err != nil {
		return nil, fmt.Errorf("%w: pebblelog: %s: read %s/%d: %w", engine.ErrStorage, l.s.dir, l.id.Topic, l.id.Partition, err)
	}
	defer zf.Release()
	// Checked before allocating: a damaged size must not allocate up
	// to 1 GiB. acquire raised d.size to the file's size.
	if fsize := d.size.Load(); p.pos+int64(p.size) > fsize {
		return nil, l.corrupt("batch at %d: index names bytes [%d, %d) of %s, which holds %d",
			base, p.pos, p.pos+int64(p.size), d.path, fsize)
	}
	buf := make([]byte, p.size)
	if _, err := f.ReadAt(buf, p.pos); err != nil {
		return nil, l.corrupt("batch at %d: read %s [%d, %d): %v", base, d.path, p.pos, p.pos+int64(p.size), err)
	}
	return buf, nil
}
