package compact

import (
	"bytes"
	"fmt"
	"math"

	"github.com/sluice/sluice/record"
)

// Rules are what the second pass needs besides the map: the clock, the
// topic's delete.retention.ms, and the producer state that decides which
// emptied batches must stay.
type Rules struct {
	// Now is the cleaning time in ms (Kafka's currentTime of the round).
	// A batch with tombstones that has no delete horizon yet gets
	// Now+DeleteRetentionMs; tombstones in a batch whose horizon is <= Now
	// are removed.
	Now int64
	// DeleteRetentionMs is the topic's delete.retention.ms (>= 0).
	DeleteRetentionMs int64
	// ProducerLast returns, for a producer that is still active in the
	// partition's producer state, the last offset of its last data batch
	// (Kafka's LastRecord.lastDataOffset), or -1 when its state holds no
	// data batch (its last word was a marker); ok false for an expired or
	// unknown producer. The batch ending at that offset is kept, even with
	// no records left, because it carries the producer's last sequence and
	// epoch; for -1, its markers are (they carry the epoch). nil: no
	// producer is active.
	ProducerLast func(producerID int64) (lastDataOffset int64, ok bool)
	// ProducerEpoch returns an active producer's current epoch. For a
	// producer whose ProducerLast is -1, only its markers of that epoch
	// stay emptied (Kafka's isBatchLastRecordOfProducer compares
	// batch.producerEpoch with the producer state's), so the emptied
	// markers of its earlier epochs go. nil: markers of any epoch stay.
	ProducerEpoch func(producerID int64) (epoch int16, ok bool)
	// UpperBound is the end (exclusive) of the cleaning round: the batch
	// whose next offset is UpperBound is kept even with no records left,
	// so that the cleaned log still ends at the same offset (Kafka's
	// upperBoundOffsetOfCleaningRound). 0: none.
	UpperBound int64
}

// Stats counts what one Filter call did.
type Stats struct {
	BatchesRead, BatchesWritten int
	BatchesCopied               int // written byte for byte
	BatchesEmptied              int // written as a header only, for producer state
	RecordsRead, RecordsKept    int64
	KeylessDropped              int64 // Kafka's invalidMessage: no key, below the map's range
	BytesRead, BytesWritten     int64
}

// Filter is (&Cleaner{}).Filter, for callers that clean once.
func Filter(dst []byte, m *OffsetMap, batches []byte, r *Rules) ([]byte, Stats, error) {
	var c Cleaner
	return c.Filter(dst, m, batches, r)
}

// Filter is the second pass of cleaning (Kafka's Cleaner.cleanInto with
// MemoryRecords.filterTo): it reads batches (whole batches back to back,
// the segment being cleaned) and appends to dst the batches that survive,
// each holding only its surviving records, and returns dst.
//
// A record survives when
//
//   - its offset is past m.Latest() (the map does not cover it: a later
//     pass decides), or
//   - it has a key, no later offset for that key is in the map, and it is
//     not a tombstone whose batch's delete horizon is <= r.Now.
//
// Key-less records below m.Latest() are removed: a compacted topic refuses
// them on append, so they predate the policy (Kafka counts them as invalid
// and drops them).
//
// Offsets never change. A batch that keeps some records keeps its
// baseOffset, lastOffsetDelta, baseSequence, producer id and epoch,
// partition leader epoch and attributes, as Kafka's
// buildRetainedRecordsInto does: the surviving records keep their offset
// deltas, so the batch still ends at its original last offset and its
// last sequence (baseSequence+lastOffsetDelta) is still the one the
// producer sent, which is what the producer state rebuilt from the log
// needs. recordCount becomes the number kept, less than lastOffsetDelta+1.
// The timestamps are recomputed as Kafka's MemoryRecordsBuilder does:
// baseTimestamp is the first kept record's timestamp, or the delete horizon
// when the batch has one; maxTimestamp is the largest kept timestamp (the
// batch's own for LogAppendTime); the record timestamp deltas are
// re-encoded against the new base where it moved. A compressed batch is
// re-compressed with its codec (snappy keeps the xerial framing if it had
// it); the CRC is recomputed.
//
// Delete horizon (KIP-534, Kafka 3.1+, RecordBatch v2): the first cleaning
// that keeps a tombstone in a batch without the delete-horizon attribute
// rewrites the batch with the attribute set and baseTimestamp =
// r.Now+r.DeleteRetentionMs. A later cleaning at or after that time
// removes its tombstones. A tombstone therefore lives at least
// delete.retention.ms after the cleaning that first saw it, which gives a
// consumer that read the key's older value time to see the delete.
//
// A batch with every record kept and nothing to stamp is copied byte for
// byte. A batch with no record kept is dropped, unless it is the last data
// batch of an active producer (r.ProducerLast) or ends at r.UpperBound:
// then only its header stays, with recordCount 0, no codec, both
// timestamps the batch's maxTimestamp (Kafka's writeEmptyHeader), so that
// sequence and epoch state survive cleaning.
//
// The records of aborted transactions (Cleaner.SetAborted) are removed,
// as Kafka's cleaner discards aborted batches (the batch may stay empty
// for producer state, as above). Control batches (transaction markers)
// are kept while data of their transaction may remain before them, then
// stamped with a delete horizon and removed after it (filterMarker); this
// needs the round's batches from the log start in offset order, across
// Filter calls, after SetAborted began the round.
//
// On error, dst is returned at its length on entry, with an error wrapping
// ErrCorrupt (or record.ErrCorrupt / ErrTooLarge from decompression).
// Filter does not allocate for uncompressed batches once its buffers have
// grown; a compressed batch that is rewritten allocates its encoder.
func (c *Cleaner) Filter(dst []byte, m *OffsetMap, batches []byte, r *Rules) ([]byte, Stats, error) {
	var st Stats
	entry := len(dst)
	for pos, next := 0, int64(0); pos < len(batches); {
		b, err := nextBatch(batches[pos:], pos, next)
		if err != nil {
			return dst[:entry], st, err
		}
		st.BatchesRead++
		st.BytesRead += int64(b.Size())
		st.RecordsRead += int64(b.RecordCount())
		before := len(dst)
		if dst, err = c.filterBatch(dst, m, b, pos, r, &st); err != nil {
			return dst[:entry], st, err
		}
		if len(dst) > before {
			st.BatchesWritten++
			st.BytesWritten += int64(len(dst) - before)
		}
		pos, next = pos+b.Size(), b.NextOffset()
	}
	return dst, st, nil
}

// filterBatch appends what survives of b to dst.
func (c *Cleaner) filterBatch(dst []byte, m *OffsetMap, b record.Batch, pos int, r *Rules, st *Stats) ([]byte, error) {
	raw, err := c.records(b, pos)
	if err != nil {
		return dst, err
	}
	if b.Control() {
		return c.filterMarker(dst, b, raw, pos, r, st)
	}
	c.txnData(b)
	logAppend := b.LogAppendTime()
	hasHorizon := b.Attributes()&record.DeleteHorizonBit != 0
	horizon := b.BaseTimestamp() // meaningful when hasHorizon

	// Decide each record.
	aborted := c.abortedBatch(b)
	c.keep = c.keep[:0]
	kept, tombstones := int32(0), false
	firstTs, maxTs := int64(record.NoTimestamp), int64(record.NoTimestamp)
	it := &c.it
	for it.reset(b, raw); it.next(); {
		rec := &it.rec
		off := b.BaseOffset() + rec.offDelta
		keep := !aborted
		if keep && off <= m.Latest() {
			if rec.key == nil {
				keep = false
				st.KeylessDropped++
			} else if found, ok := m.Get(rec.key); ok && off < found {
				keep = false
			} else if rec.tombstone && hasHorizon && r.Now >= horizon {
				keep = false
			}
		}
		c.keep = append(c.keep, keep)
		if !keep {
			continue
		}
		ts := b.BaseTimestamp() + rec.tsDelta
		if logAppend {
			ts = b.MaxTimestamp()
		}
		if kept == 0 {
			firstTs = ts
		}
		maxTs = max(maxTs, ts)
		kept++
		tombstones = tombstones || rec.tombstone
	}
	if err := it.done(); err != nil {
		return dst, fmt.Errorf("%w at byte %d (offset %d): %v", ErrCorrupt, pos, b.BaseOffset(), err)
	}
	st.RecordsKept += int64(kept)

	needHorizon := tombstones && !hasHorizon
	switch {
	case kept == 0:
		if !c.retainEmpty(b, r) {
			return dst, nil
		}
		st.BatchesEmptied++
		start := len(dst)
		dst = append(dst, b[:record.HeaderSize]...)
		attrs := b.Attributes() & (record.TimestampTypeBit | record.TransactionalBit | record.ControlBit)
		finishHeader(dst, start, attrs, b.MaxTimestamp(), b.MaxTimestamp(), 0)
		return dst, nil
	case kept == b.RecordCount() && !needHorizon:
		st.BatchesCopied++
		return append(dst, b...), nil
	}

	// Rewrite the batch with the kept records.
	attrs := b.Attributes()
	baseTs := firstTs
	switch {
	case needHorizon:
		attrs |= record.DeleteHorizonBit
		baseTs = satAdd(r.Now, r.DeleteRetentionMs)
	case hasHorizon:
		baseTs = horizon
	}
	if logAppend {
		maxTs = b.MaxTimestamp()
	}
	return c.rewrite(dst, b, raw, attrs, baseTs, maxTs, kept), nil
}

// rewrite appends b with the records c.keep marks, attributes attrs and
// timestamps baseTs and maxTs, re-encoding the records' timestamp deltas
// against baseTs and re-compressing with b's codec. REQUIRES: c.keep holds
// one decision per record of b, kept of them true; raw is b's records.
func (c *Cleaner) rewrite(dst []byte, b record.Batch, raw []byte, attrs int16, baseTs, maxTs int64, kept int32) []byte {
	logAppend := b.LogAppendTime()
	it := &c.it
	start := len(dst)
	dst = append(dst, b[:record.HeaderSize]...)
	out := dst
	if b.Codec() != record.CodecNone {
		out = c.out[:0]
	}
	i := 0
	for it.reset(b, raw); it.next(); i++ {
		if !c.keep[i] {
			continue
		}
		ts := b.BaseTimestamp() + it.rec.tsDelta
		if logAppend {
			ts = b.MaxTimestamp()
		}
		out = appendRecord(out, it.bytes(), &it.rec, ts-baseTs)
	}
	if b.Codec() == record.CodecNone {
		dst = out
	} else {
		c.out = out
		dst = record.CompressRecords(dst, b.Codec(), out, isXerial(b.Records()))
	}
	finishHeader(dst, start, attrs, baseTs, maxTs, kept)
	return dst
}

// filterMarker appends what survives of control batch b (a transaction
// marker) to dst: Kafka's rule (LogCleaner's CleanedTransactionMetadata
// and checkBatchRetention). A marker may go once no data of its
// transaction remains before it: c.txnData recorded, in this pass, which
// producers have transactional batches since their last marker, and the
// marker of a producer with none is removable (an emptied control batch,
// whose transaction is known to be gone, too). A removable marker is
// kept through this cleaning and stamped with a delete horizon
// (r.Now+r.DeleteRetentionMs, as a tombstone's batch is), so that a
// consumer that read the transaction's records has delete.retention.ms to
// read its end; a later cleaning at or after the horizon removes it.
// Whatever the rules, a marker that is an active producer's last word
// (retainEmpty) stays, as an empty batch once its record may go.
func (c *Cleaner) filterMarker(dst []byte, b record.Batch, raw []byte, pos int, r *Rules, st *Stats) ([]byte, error) {
	var key []byte
	n := int32(0)
	for c.it.reset(b, raw); c.it.next(); n++ {
		if n == 0 && c.it.rec.key != nil {
			key = bytes.Clone(c.it.rec.key)
		}
	}
	if err := c.it.done(); err != nil {
		return dst, fmt.Errorf("%w at byte %d (offset %d): %v", ErrCorrupt, pos, b.BaseOffset(), err)
	}
	removable := c.txnMarker(b, n, key)
	hasHorizon := b.Attributes()&record.DeleteHorizonBit != 0
	horizon := b.BaseTimestamp()
	switch {
	case n == 0 || (removable && hasHorizon && r.Now >= horizon):
		if !c.retainEmpty(b, r) {
			return dst, nil
		}
		st.BatchesEmptied++
		start := len(dst)
		dst = append(dst, b[:record.HeaderSize]...)
		attrs := b.Attributes() & (record.TimestampTypeBit | record.TransactionalBit | record.ControlBit | record.DeleteHorizonBit)
		baseTs := b.MaxTimestamp()
		if hasHorizon {
			baseTs = horizon
		}
		finishHeader(dst, start, attrs, baseTs, b.MaxTimestamp(), 0)
		return dst, nil
	case removable && !hasHorizon:
		c.keep = c.keep[:0]
		for range n {
			c.keep = append(c.keep, true)
		}
		st.RecordsKept += int64(n)
		return c.rewrite(dst, b, raw, b.Attributes()|record.DeleteHorizonBit, satAdd(r.Now, r.DeleteRetentionMs), b.MaxTimestamp(), n), nil
	}
	st.BatchesCopied++
	st.RecordsKept += int64(n)
	return append(dst, b...), nil
}

// retainEmpty reports whether b, with no record left, must stay as an
// empty batch (Kafka's BatchRetention.RETAIN_EMPTY): it ends the round,
// or it is an active producer's last data batch, or a marker, of the
// producer's current epoch, of an active producer that has no data batch
// (Kafka's isBatchLastRecordOfProducer: the marker carries the epoch).
// Nothing else stays empty: an earlier retained batch goes once its
// producer wrote a later one, or the round it ended is not this one's.
func (c *Cleaner) retainEmpty(b record.Batch, r *Rules) bool {
	if r.UpperBound > 0 && b.NextOffset() == r.UpperBound {
		return true
	}
	if b.ProducerID() < 0 || r.ProducerLast == nil {
		return false
	}
	last, ok := r.ProducerLast(b.ProducerID())
	switch {
	case !ok:
		return false
	case last >= 0:
		return last == b.LastOffset()
	case !b.Control():
		return false
	case r.ProducerEpoch == nil:
		return true
	}
	epoch, ok := r.ProducerEpoch(b.ProducerID())
	return ok && epoch == b.ProducerEpoch()
}

// xerialMagic starts a snappy block framed as the Java client frames it.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

func isXerial(block []byte) bool { return bytes.HasPrefix(block, xerialMagic) }

// satAdd is a+b for b >= 0, saturating at MaxInt64.
func satAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
