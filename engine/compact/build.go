package compact

import (
	"fmt"

	"github.com/sluice/sluice/record"
)

// Cleaner holds the scratch buffers of the two passes (a decompressed
// records block, a rebuilt one, the per-record decisions of a batch), so
// that cleaning a log allocates per compressed batch at most, never per
// record. The zero value is ready to use. A Cleaner is not safe for
// concurrent use; each cleaner thread owns one, with its OffsetMap.
type Cleaner struct {
	// aborted: the aborted transactions of the log being cleaned, by
	// producer id (SetAborted).
	aborted map[int64][]AbortedTxn
	// txnOpen: the producers with transactional data batches read by
	// Filter in this round since their last marker (Kafka's
	// CleanedTransactionMetadata ongoing transactions); reset by
	// SetAborted.
	txnOpen map[int64]bool
	raw     []byte // decompressed records of the batch being read
	out     []byte // uncompressed records of a rebuilt compressed batch
	keep    []bool // keep[i]: record i of the batch being filtered survives
	it      rawIter
}

// AbortedTxn is one aborted transaction of the log being cleaned (an
// entry of its aborted-transaction index): the producer's transactional
// batches with offsets in [FirstOffset, LastOffset) were aborted by the
// marker at LastOffset.
type AbortedTxn struct {
	ProducerID, FirstOffset, LastOffset int64
}

// SetAborted tells c the aborted transactions of the log it cleans next
// (every one overlapping what Build and Filter will read; the cleaner
// cleans only below the last stable offset, where every transaction is
// decided). Their records are never a key's latest value in Build and are
// removed by Filter, as Kafka's cleaner discards aborted batches. nil:
// none. txns is not retained.
//
// SetAborted also begins a round for Filter's transaction markers (see
// filterMarker): Filter must then read the round's batches from the log
// start, in offset order.
func (c *Cleaner) SetAborted(txns []AbortedTxn) {
	clear(c.aborted)
	clear(c.txnOpen)
	for _, t := range txns {
		if c.aborted == nil {
			c.aborted = make(map[int64][]AbortedTxn)
		}
		c.aborted[t.ProducerID] = append(c.aborted[t.ProducerID], t)
	}
}

// txnData records a data batch read by Filter: a transactional one
// leaves its producer's transaction with data in the log.
func (c *Cleaner) txnData(b record.Batch) {
	if !b.Transactional() {
		return
	}
	if c.txnOpen == nil {
		c.txnOpen = make(map[int64]bool)
	}
	c.txnOpen[b.ProducerID()] = true
}

// txnMarker records control batch b, holding n records, the first with
// key, read by Filter, and reports whether the marker may be removed (at
// its delete horizon): its transaction left no data batch before it in
// this round (Kafka's onControlBatchRead, for COMMIT and ABORT alike:
// an ABORT whose aborted batches were read in this round is kept, for
// they are removed only now). An emptied control batch is removable; a
// control record that is not a transaction marker is kept.
func (c *Cleaner) txnMarker(b record.Batch, n int32, key []byte) bool {
	if n == 0 {
		return true
	}
	t, err := record.ParseControlKey(key)
	if err != nil || (t != record.ControlAbort && t != record.ControlCommit) {
		return false
	}
	open := c.txnOpen[b.ProducerID()]
	delete(c.txnOpen, b.ProducerID())
	return !open
}

// abortedBatch reports whether b belongs to an aborted transaction.
func (c *Cleaner) abortedBatch(b record.Batch) bool {
	if len(c.aborted) == 0 || !b.Transactional() || b.Control() {
		return false
	}
	for _, t := range c.aborted[b.ProducerID()] {
		if b.BaseOffset() >= t.FirstOffset && b.BaseOffset() < t.LastOffset {
			return true
		}
	}
	return false
}

// Build is (&Cleaner{}).Build, for callers that clean once.
func Build(m *OffsetMap, batches []byte, start int64) (lastOffset int64, full bool, err error) {
	var c Cleaner
	return c.Build(m, batches, start)
}

// Build is the first pass of cleaning (Kafka's buildOffsetMapForSegment):
// it reads batches, whole RecordBatch v2 batches back to back as a log
// segment holds them, and puts the offset of every keyed record at or past
// start into m, in offset order, so that m ends up with the latest offset
// of each key. Call it once per segment of the dirty range, in order, on
// a map cleared before the first.
//
// It stops when m is Full at a key it has not seen, and then returns
// full=true and lastOffset, the offset just before that record: the map is
// complete for [start, lastOffset], Filter keeps everything past it, and
// the next cleaning starts at lastOffset+1 (Kafka cleans "what fits" and
// continues next time). Otherwise lastOffset is m.Latest() after the last
// batch: the map covers every batch read.
//
// Control batches put nothing into the map (transaction markers have no
// key to deduplicate), nor do the batches of aborted transactions
// (SetAborted): an aborted value never hides a committed one. Records below start are read but not mapped: they
// are the already-clean part of the log.
//
// An error wraps ErrCorrupt (or record.ErrCorrupt/ErrTooLarge from
// decompression) and says at which byte of batches; m then holds what was
// read before it and must be cleared before it is used again.
func (c *Cleaner) Build(m *OffsetMap, batches []byte, start int64) (lastOffset int64, full bool, err error) {
	for pos, next := 0, int64(0); pos < len(batches); {
		b, err := nextBatch(batches[pos:], pos, next)
		if err != nil {
			return m.Latest(), false, err
		}
		if b.LastOffset() >= start && !b.Control() && b.RecordCount() > 0 && !c.abortedBatch(b) {
			raw, err := c.records(b, pos)
			if err != nil {
				return m.Latest(), false, err
			}
			it := &c.it
			for it.reset(b, raw); it.next(); {
				off := b.BaseOffset() + it.rec.offDelta
				if it.rec.key == nil || off < start {
					continue
				}
				if !m.Put(it.rec.key, off) {
					m.SetLatest(off - 1)
					return m.Latest(), true, nil
				}
			}
			if err := it.done(); err != nil {
				return m.Latest(), false, fmt.Errorf("%w at byte %d (offset %d): %v", ErrCorrupt, pos, b.BaseOffset(), err)
			}
		}
		if b.LastOffset() >= start {
			m.SetLatest(b.LastOffset())
		}
		pos, next = pos+b.Size(), b.NextOffset()
	}
	return m.Latest(), false, nil
}

// records returns the uncompressed records block of b, decompressing into
// c.raw when needed. The slice is valid until the next call.
func (c *Cleaner) records(b record.Batch, pos int) ([]byte, error) {
	if b.Codec() == record.CodecNone {
		return b.Records(), nil
	}
	raw, err := record.Decompress(b.Codec(), b.Records(), c.raw[:0])
	if err != nil {
		return nil, fmt.Errorf("compact: batch at byte %d (offset %d): %w", pos, b.BaseOffset(), err)
	}
	c.raw = raw
	return raw, nil
}

// rawIter walks the records of an uncompressed records block, checking
// that there are exactly recordCount of them with strictly increasing
// offset deltas within [0, lastOffsetDelta] (gaps allowed: a cleaned batch
// has them).
type rawIter struct {
	raw   []byte
	p     int   // raw[p:] is the next record
	start int   // raw[start:p] is the current record
	left  int32 // records still to read
	lod   int64
	prev  int64 // offset delta of the previous record; -1 before the first
	rec   rawRecord
	err   error
}

func (it *rawIter) reset(b record.Batch, raw []byte) {
	*it = rawIter{raw: raw, left: b.RecordCount(), lod: int64(b.LastOffsetDelta()), prev: -1}
}

// next decodes the next record into it.rec; false at the end or on error.
func (it *rawIter) next() bool {
	if it.err != nil || it.left <= 0 {
		return false
	}
	if err := parseRaw(it.raw[it.p:], &it.rec); err != nil {
		it.err = fmt.Errorf("record at %d: %v", it.p, err)
		return false
	}
	if d := it.rec.offDelta; d <= it.prev || d > it.lod {
		it.err = fmt.Errorf("offset delta %d after %d (lastOffsetDelta %d)", d, it.prev, it.lod)
		return false
	}
	it.prev = it.rec.offDelta
	it.start = it.p
	it.p += it.rec.size
	it.left--
	return true
}

// bytes is the current record's encoding.
func (it *rawIter) bytes() []byte { return it.raw[it.start:it.p] }

// done reports an error met, or records missing or bytes left over.
func (it *rawIter) done() error {
	switch {
	case it.err != nil:
		return it.err
	case it.left != 0:
		return fmt.Errorf("%d records missing", it.left)
	case it.p != len(it.raw):
		return fmt.Errorf("%d bytes after the last record", len(it.raw)-it.p)
	}
	return nil
}
