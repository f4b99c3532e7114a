package replication

import (
	"context"
	"fmt"
	"math"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/record"
	"github.com/sluice/sluice/zerocopy"
)

// Transactions (KIP-98) in a partition
//
// A transactional producer's batches (attribute bit 0x10) are appended like
// idempotent ones; the first one since the producer's last marker opens its
// transaction here at that batch's offset (producers.go). The coordinator
// ends it with WriteTxnMarkers: the leader appends a control batch
// (WriteTxnMarker) that closes the transaction, and for an ABORT records
// (producer, first offset, marker offset, LSO) in the log's
// aborted-transaction index (engine.TxnIndex) so that read_committed
// consumers can drop the aborted records.
//
// The last stable offset (Kafka's UnifiedLog.lastStableOffset) is
// min(high watermark, first offset of the earliest unstable transaction),
// where a transaction is unstable while it is open or while its marker is
// not yet below the high watermark (Kafka's ProducerStateManager
// ongoingTxns and unreplicatedTxns). So the LSO moves only when the high
// watermark does (advanceHW), never ahead of it, and never down except
// with the high watermark (truncation). read_committed fetches read up to
// it and park on it (watch.go).
//
// The tracking (txnTracker) is written by the goroutine that owns the
// producer state (the append round's leader, a follower append, a rebuild)
// with hwMu held, and read under hwMu when the high watermark moves. The
// index entry of an abort is written before the tracker forgets the open
// transaction: a reader that sees the LSO past the marker finds the entry.

// TxnMarker is one partition's part of a WriteTxnMarkers request.
type TxnMarker struct {
	ProducerID       int64
	ProducerEpoch    int16
	Commit           bool // false: ABORT
	CoordinatorEpoch int32
}

// txnTracker is what the LSO depends on. REQUIRES: p.hwMu held to write,
// or to read from a goroutine that does not own the producer state.
type txnTracker struct {
	ongoing map[int64]int64 // producer id -> first offset of its open transaction; nil until one opens
	// ended are transactions whose marker the high watermark has not
	// passed yet, in marker order.
	ended []endedTxn
}

type endedTxn struct{ first, marker int64 }

// open returns the open transactions (nil t: none). The map is only read.
func (t *txnTracker) open() map[int64]int64 {
	if t == nil {
		return nil
	}
	return t.ongoing
}

// WriteTxnMarker appends the marker that ends producer m.ProducerID's
// transaction in this partition (a COMMIT or ABORT control batch, as
// Kafka's leader writes it) and waits as an acks=all produce does. It
// returns the marker's offset. Leader only (ErrNotLeader). Errors:
// ErrInvalidProducerEpoch (the marker's epoch is older than the producer's
// here), ErrCoordinatorFenced (its coordinator epoch is older than the last
// marker's), the acks=all errors of Append (ErrNotEnoughReplicas, ...), and
// a failed aborted-transaction index write (the marker is then in the log
// but the LSO stays below it). A marker for a producer with no transaction
// open here is written all the same. Safe for concurrent use.
func (p *Partition) WriteTxnMarker(ctx context.Context, m TxnMarker) (int64, error) {
	typ := record.ControlAbort
	if m.Commit {
		typ = record.ControlCommit
	}
	buf := record.AppendEndTxnMarker(nil, record.MarkerOptions{
		LeaderEpoch: p.leaderEpoch.Load(), ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch,
		Timestamp: p.opts.Now().UnixMilli(),
	}, record.EndTxnMarker{Type: typ, CoordinatorEpoch: m.CoordinatorEpoch})
	res, err := p.appendQueued(buf, -1, &m)
	if err == nil {
		err = p.waitAppended(ctx, &res, res.gen)
	}
	if err != nil {
		return -1, err
	}
	return res.BaseOffset, nil
}

// applyTxnEvents brings the aborted-transaction index (when index; a
// rebuild reads the index it already has) and the LSO tracking up to the
// events, in that order. The caller owns the producer state, which keeps
// the tracker's writers to one goroutine. On an index error the tracker is
// left alone: the LSO stays below the transaction, so read_committed
// consumers stop there rather than read aborted records.
func (p *Partition) applyTxnEvents(evs []txnEvent, index bool) error {
	if index {
		if err := p.indexAborted(evs); err != nil {
			return err
		}
	}
	p.hwMu.Lock()
	if p.txns == nil && len(evs) > 0 {
		p.txns = new(txnTracker)
	}
	for _, ev := range evs {
		if ev.marker < 0 {
			if p.txns.ongoing == nil {
				p.txns.ongoing = make(map[int64]int64)
			}
			p.txns.ongoing[ev.pid] = ev.first
			continue
		}
		delete(p.txns.ongoing, ev.pid)
		p.txns.ended = append(p.txns.ended, endedTxn{first: ev.first, marker: ev.marker})
	}
	p.updateLSOLocked(false, 0)
	p.hwMu.Unlock()
	return nil
}

// indexAborted appends the index entries of the aborts among evs.
func (p *Partition) indexAborted(evs []txnEvent) error {
	if !hasAbort(evs) {
		return nil
	}
	ix, ok := p.log.(engine.TxnIndex)
	if !ok {
		return fmt.Errorf("replication: the %T log keeps no aborted-transaction index", p.log)
	}
	view := make(map[int64]int64, len(p.txns.open())+1)
	for pid, f := range p.txns.open() { // only the owner writes it
		view[pid] = f
	}
	for _, a := range abortedEntries(view, evs) {
		if err := ix.AppendAbortedTxn(a); err != nil {
			return fmt.Errorf("index aborted transaction %+v: %w", a, err)
		}
	}
	return nil
}

func hasAbort(evs []txnEvent) bool {
	for _, ev := range evs {
		if ev.marker >= 0 && ev.abort {
			return true
		}
	}
	return false
}

// abortedEntries plays evs over the open transactions in view (changed)
// and returns the index entries of the aborts. An entry's
// LastStableOffset is Kafka's ProducerStateManager.lastStableOffset for
// it: the first offset of the earliest other open transaction, or the
// marker's offset + 1.
func abortedEntries(view map[int64]int64, evs []txnEvent) []engine.AbortedTxn {
	var out []engine.AbortedTxn
	for _, ev := range evs {
		if ev.marker < 0 {
			view[ev.pid] = ev.first
			continue
		}
		delete(view, ev.pid)
		if !ev.abort {
			continue
		}
		lso := ev.marker + 1
		for _, f := range view {
			lso = min(lso, f)
		}
		out = append(out, engine.AbortedTxn{ProducerID: ev.pid, FirstOffset: ev.first, LastOffset: ev.marker, LastStableOffset: lso})
	}
	return out
}

// repairAbortedIndex appends the entries of aborts found by a rebuild
// from the log whose entry the index lacks: a crash can keep a marker in
// the log and lose its entry (Kafka rebuilds the index in its segment
// recovery with the producer state; the engine cannot, lacking it). Only
// entries past the index's last one are appended, keeping the index in
// marker order; a transaction that began before the rebuild's scan gets
// the first offset the scan saw, which is better than none. Failures are
// logged: the index is a cache of the log here.
func (p *Partition) repairAbortedIndex(evs []txnEvent) {
	if !hasAbort(evs) {
		return
	}
	ix, ok := p.log.(engine.TxnIndex)
	if !ok {
		return
	}
	for _, a := range abortedEntries(make(map[int64]int64), evs) {
		have, err := ix.AbortedTxns(a.LastOffset, math.MaxInt64)
		if err != nil {
			p.opts.Logger.Warn("replication: checking the aborted-transaction index", "topic", p.opts.Topic, "partition", p.index, "err", err)
			return
		}
		found, later := false, false
		for _, h := range have {
			found = found || (h.LastOffset == a.LastOffset && h.ProducerID == a.ProducerID)
			later = later || h.LastOffset > a.LastOffset
		}
		if found || later {
			continue
		}
		p.opts.Logger.Warn("replication: restoring a lost aborted-transaction index entry", "topic", p.opts.Topic, "partition", p.index,
			"producer_id", a.ProducerID, "first_offset", a.FirstOffset, "marker_offset", a.LastOffset)
		if err := ix.AppendAbortedTxn(a); err != nil {
			p.opts.Logger.Warn("replication: restoring an aborted-transaction index entry", "topic", p.opts.Topic, "partition", p.index, "err", err)
			return
		}
	}
}

// updateLSOLocked recomputes the LSO after the high watermark or the
// tracking changed, forgetting ended transactions the high watermark
// passed, and tells read_committed watchers: credited with hwBytes when
// the LSO simply followed the high watermark (priced, ok), woken
// otherwise. REQUIRES: p.hwMu held.
func (p *Partition) updateLSOLocked(priced bool, hwBytes int64) {
	hw := p.hw.Load()
	lso := p.computeLSOLocked()
	old := p.lso.Load()
	followed := p.lsoFollowsHW // the LSO was the HW before this move
	p.lsoFollowsHW = lso == hw
	if lso == old {
		return
	}
	p.lso.Store(lso)
	switch {
	case lso < old:
		// Only with the high watermark, whose move wakes everyone.
	case priced && lso == hw && followed:
		p.lsoWatchers.credit(hwBytes)
	default:
		p.lsoWatchers.wake()
	}
}

// computeLSOLocked forgets the ended transactions the high watermark
// passed and returns the LSO. REQUIRES: p.hwMu held.
func (p *Partition) computeLSOLocked() int64 {
	hw := p.hw.Load()
	t := p.txns
	if t == nil {
		return hw // no transaction was ever seen here
	}
	k := 0
	for _, x := range t.ended {
		if x.marker >= hw {
			t.ended[k] = x
			k++
		}
	}
	clear(t.ended[k:])
	t.ended = t.ended[:k]
	lso := hw
	for _, f := range t.ongoing {
		lso = min(lso, f)
	}
	for _, x := range t.ended {
		lso = min(lso, x.first)
	}
	return lso
}

// resetTxnTracking restarts the LSO tracking from the producer state's
// pending events (a rebuild from the log: the index already has the
// aborts). REQUIRES: the caller owns the producer state.
func (p *Partition) resetTxnTracking() {
	var evs []txnEvent
	if p.producers != nil { // nil: nothing was loaded
		evs = p.producers.events
	}
	p.repairAbortedIndex(evs)
	p.hwMu.Lock()
	p.txns = nil
	p.hwMu.Unlock()
	_ = p.applyTxnEvents(evs, false) // no index write: no error
	if p.producers != nil {
		p.producers.events = p.producers.events[:0]
	}
	p.hwMu.Lock()
	p.lso.Store(p.computeLSOLocked())
	p.lsoFollowsHW = p.lso.Load() == p.hw.Load()
	p.hwMu.Unlock()
}

// LastStableOffset returns the offset below which every record is either
// non-transactional or in a transaction whose marker is committed:
// read_committed fetches read below it (see the note at the top of this
// file).
func (p *Partition) LastStableOffset() int64 { return p.lso.Load() }

// ReadCommitted is Read for read_committed consumers: batches below the
// last stable offset only. The slice must be Released.
func (p *Partition) ReadCommitted(offset int64, maxBytes int) (zerocopy.Slice, error) {
	return p.log.Read(offset, maxBytes, p.lso.Load())
}

// AbortedTransactions returns the aborted transactions overlapping the
// offsets [fetchOffset, upperBound) (Fetch v4+ read_committed answers
// them), nil when none or when the log keeps no index.
func (p *Partition) AbortedTransactions(fetchOffset, upperBound int64) ([]engine.AbortedTxn, error) {
	ix, ok := p.log.(engine.TxnIndex)
	if !ok || upperBound <= fetchOffset {
		return nil, nil
	}
	return ix.AbortedTxns(fetchOffset, upperBound)
}

// ProducerInfo describes one producer of the partition, as
// DescribeProducers answers it.
type ProducerInfo struct {
	ProducerID    int64
	ProducerEpoch int16
	// LastSequence is the last sequence the producer wrote (-1: none
	// kept), LastTimestampMs when it last wrote here.
	LastSequence    int32
	LastTimestampMs int64
	// CoordinatorEpoch of its last marker (-1: none);
	// CurrentTxnStartOffset the first offset of its open transaction
	// (-1: none).
	CoordinatorEpoch      int32
	CurrentTxnStartOffset int64
}

// Producers returns the producers the partition knows (those not
// expired), in no particular order. It waits for the append round in
// progress and holds the next ones off while it reads.
func (p *Partition) Producers() []ProducerInfo {
	var out []ProducerInfo
	p.withProducers(func(ps *producerState) {
		out = make([]ProducerInfo, 0, len(ps.producers))
		for pid, e := range ps.producers {
			pi := ProducerInfo{ProducerID: pid, ProducerEpoch: e.epoch, LastSequence: -1, LastTimestampMs: e.lastMs,
				CoordinatorEpoch: e.coordEpoch, CurrentTxnStartOffset: -1}
			if b, ok := e.last(); ok {
				pi.LastSequence = b.lastSeq
			}
			if e.inTxn {
				pi.CurrentTxnStartOffset = e.txnFirst
			}
			out = append(out, pi)
		}
	})
	return out
}
