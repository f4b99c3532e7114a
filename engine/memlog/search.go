package memlog

import (
	"fmt"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/record"
)

// OffsetForTimestamp returns the first record at or after the start offset
// whose timestamp is >= ts, or for engine.MaxTimestampQuery the record with
// the largest timestamp (the latest on ties). Chunks whose newest timestamp
// is below ts are skipped whole; inside a chunk the batch index is scanned
// by maxTimestamp and only candidate batches are decoded.
func (l *Log) OffsetForTimestamp(ts int64) (offset, timestamp int64, ok bool, err error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return 0, 0, false, l.errClosed()
	}
	if ts == engine.MaxTimestampQuery {
		return l.maxTimestampLocked()
	}
	var it record.Iter
	for _, c := range l.chunks {
		if c.maxTs < ts {
			continue
		}
		for _, e := range c.index {
			if e.maxTs < ts || e.last < l.start {
				continue
			}
			it.Reset(c.batch(e))
			for it.Next() {
				if it.Offset() >= l.start && it.Timestamp() >= ts {
					return it.Offset(), it.Timestamp(), true, nil
				}
			}
			if err := it.Err(); err != nil {
				return 0, 0, false, l.corrupt(e, err)
			}
		}
	}
	return 0, 0, false, nil
}

// maxTimestampLocked answers engine.MaxTimestampQuery: it finds the last
// batch with the largest maxTimestamp, then the last record in it carrying
// the largest timestamp. REQUIRES: l.mu held.
func (l *Log) maxTimestampLocked() (offset, timestamp int64, ok bool, err error) {
	var best *chunk
	bestTs := int64(-1 << 63)
	for i, c := range l.chunks {
		m := c.maxTs
		if i == 0 { // may hold batches below the start offset
			m = -1 << 63
			for _, e := range c.index {
				if e.last >= l.start {
					m = max(m, e.maxTs)
				}
			}
		}
		if m >= bestTs && len(c.index) > 0 {
			best, bestTs = c, m
		}
	}
	if best == nil {
		return 0, 0, false, nil
	}
	var e entry
	for _, x := range best.index {
		if x.maxTs == bestTs && x.last >= l.start {
			e = x
		}
	}
	offset, timestamp = e.last, e.maxTs
	var it record.Iter
	it.Reset(best.batch(e))
	found := false
	for it.Next() {
		if it.Offset() >= l.start && (!found || it.Timestamp() >= timestamp) {
			offset, timestamp, found = it.Offset(), it.Timestamp(), true
		}
	}
	if err := it.Err(); err != nil {
		return 0, 0, false, l.corrupt(e, err)
	}
	return offset, timestamp, true, nil
}

// corrupt wraps an error met decoding a stored batch.
func (l *Log) corrupt(e entry, err error) error {
	return fmt.Errorf("%w: %s/%d batch [%d, %d]: %v", engine.ErrCorruptStore, l.id.Topic, l.id.Partition, e.base, e.last, err)
}
