package replication

import (
	"fmt"
	"math"
	"time"

	"github.com/sluice/sluice/record"
)

// Idempotent producers
//
// Like Kafka's ProducerStateManager, a partition keeps per producer id the
// producer's epoch and the metadata of its last maxProducerBatches batches:
// (firstSeq, lastSeq, firstOffset, lastOffset). That is enough to answer a
// retry of any batch still in flight (a producer has at most 5 in flight per
// partition) with its original offsets, and to reject gaps.
//
// The rules, checked per batch in log order (Kafka's
// ProducerAppendInfo.checkSequence):
//   - producer unknown (never seen, or its state was lost): accepted at any
//     sequence (KIP-360; franz-go and the Java client rely on this after the
//     producer's state expired);
//   - epoch older than the known one: ErrInvalidProducerEpoch;
//   - epoch newer: the sequence restarts, so baseSequence must be 0, else
//     ErrOutOfOrderSequence; the old epoch's batches are forgotten;
//   - same epoch: a batch whose (firstSeq, lastSeq) equals one of the kept
//     batches is a duplicate (answered with its original offsets, nothing
//     written); otherwise baseSequence must be lastSeq+1, wrapping from
//     MaxInt32 to 0, else ErrOutOfOrderSequence.
//
// Expiry (Kafka's producer.id.expiration.ms): a producer that has not
// appended for Options.ProducerIDExpiration is forgotten, so the table does
// not grow with every producer id ever seen. Its next batch is then that
// of an unknown producer (accepted, as above). The table is swept at the
// start of an append round (and once per follower append), at most every
// tenth of the expiration; the time of an entry is when it last appended
// here, or, for state rebuilt from the log, its batch's max timestamp.
//
// State after a restart: NewPartition loads the latest producer snapshot
// (Kafka's .snapshot files, snapshot.go), taken at each segment roll and at
// clean shutdown, and replays the log after it (rebuild.go). A snapshot
// keeps each producer's last batch only, as Kafka's does, so a retry of an
// older batch of the 5 in flight is not recognized after a restart. With
// no usable snapshot (none taken yet, a log without
// engine.SnapshotStore, every one damaged) it rebuilds the state from the
// whole log, as Kafka does: a tail scan would miss a transaction begun
// before it. Snapshots are taken at least every Options.ProducerScanBytes
// appended (32 MiB by default, rebuild.go), so that full scan is rare and
// a restart normally replays at most that much.

// maxProducerBatches is how many batches per producer are kept for
// duplicate detection (Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN).
const maxProducerBatches = 5

// batchMeta is what is kept of one appended idempotent batch.
type batchMeta struct {
	firstSeq, lastSeq       int32
	firstOffset, lastOffset int64
}

// producerEntry is the state of one producer id.
//
// Invariant: batches[(head+i)%maxProducerBatches] for i in [0, n) are the
// producer's last n batches in log order, all of epoch epoch.
type producerEntry struct {
	epoch   int16
	n, head int
	// lastMs is when the producer last appended (ms since the epoch).
	lastMs int64
	// txnFirst is the first offset of the producer's ongoing transaction
	// (Kafka's currentTxnFirstOffset) when inTxn; a transactional batch
	// begins one, a marker ends it.
	txnFirst int64
	inTxn    bool
	// coordEpoch is the coordinator epoch of the producer's last marker
	// here (-1: none); an older one is fenced.
	coordEpoch int32
	batches    [maxProducerBatches]batchMeta
}

func newProducerEntry(epoch int16) *producerEntry {
	return &producerEntry{epoch: epoch, coordEpoch: -1}
}

// last returns the newest batch; ok is false when there is none.
func (e *producerEntry) last() (batchMeta, bool) {
	if e.n == 0 {
		return batchMeta{}, false
	}
	return e.batches[(e.head+e.n-1)%maxProducerBatches], true
}

// push adds a batch, dropping the oldest when full.
func (e *producerEntry) push(m batchMeta) {
	if e.n < maxProducerBatches {
		e.batches[(e.head+e.n)%maxProducerBatches] = m
		e.n++
		return
	}
	e.batches[e.head] = m
	e.head = (e.head + 1) % maxProducerBatches
}

// findDuplicate returns the kept batch with the same sequence range.
func (e *producerEntry) findDuplicate(firstSeq, lastSeq int32) (batchMeta, bool) {
	for i := 0; i < e.n; i++ {
		m := e.batches[(e.head+i)%maxProducerBatches]
		if m.firstSeq == firstSeq && m.lastSeq == lastSeq {
			return m, true
		}
	}
	return batchMeta{}, false
}

// inSequence reports whether next directly follows last, with wrap-around.
func inSequence(last, next int32) bool {
	return next == last+1 || (last == math.MaxInt32 && next == 0)
}

// undoEntry restores one producer's state when a request or round fails.
type undoEntry struct {
	pid     int64
	prev    producerEntry
	existed bool
}

// txnEvent is a transaction beginning (marker < 0) or ending (at the
// marker's offset) in the log, reported by check, checkMarker and load for
// the partition's LSO tracking and aborted-transaction index (txn.go).
type txnEvent struct {
	pid    int64
	first  int64 // the transaction's first offset
	marker int64 // -1: it began; else the offset of the marker that ended it
	abort  bool
}

// stateMark is a point in the round's changes to roll back to.
type stateMark struct{ undo, events int }

// producerState is the idempotent-producer table of a partition. Not safe
// for concurrent use: only the goroutine leading the current append round
// (or NewPartition) touches it; the round handoff orders the accesses.
type producerState struct {
	producers map[int64]*producerEntry // nil until the first entry (put)
	undo      []undoEntry              // changes of the round in progress, oldest first
	// events are the transactions begun and ended by the round in
	// progress (or the follower append, or the rebuild), in log order.
	events []txnEvent
	// expireMs is producer.id.expiration.ms (<= 0: never); nextSweep is
	// when the table is swept next.
	expireMs, nextSweep int64
}

func newProducerState(expire time.Duration) *producerState {
	return &producerState{expireMs: expire.Milliseconds()}
}

// len returns how many producers the table holds (nil s: none).
func (s *producerState) len() int {
	if s == nil {
		return 0
	}
	return len(s.producers)
}

// empty reports whether s holds nothing: no producer, nothing pending
// (nil s: nothing).
func (s *producerState) empty() bool {
	return s == nil || s.producers == nil && len(s.undo) == 0 && len(s.events) == 0 && s.nextSweep == 0
}

// producerTable returns p's producer table, making it on first use: a
// partition keeps none (80 bytes) until it is written to. REQUIRES: the
// caller owns p.producers.
func (p *Partition) producerTable() *producerState {
	if p.producers == nil {
		p.producers = newProducerState(p.opts.ProducerIDExpiration)
	}
	return p.producers
}

// put adds pid's entry, making the table on the first one: most partitions
// never see an idempotent producer, and an empty map costs ~48 bytes.
func (s *producerState) put(pid int64, e *producerEntry) {
	if s.producers == nil {
		s.producers = make(map[int64]*producerEntry)
	}
	s.producers[pid] = e
}

// expire forgets the producers idle for expireMs at nowMs, at most every
// tenth of expireMs. Only between rounds: never while undo entries of a
// round in progress point at entries.
func (s *producerState) expire(nowMs int64) {
	if s.expireMs <= 0 || nowMs < s.nextSweep || len(s.undo) > 0 {
		return
	}
	s.nextSweep = nowMs + max(s.expireMs/10, 1)
	for pid, e := range s.producers {
		// Kafka's isProducerExpired: an open transaction keeps its
		// producer (the coordinator will end it).
		if nowMs-e.lastMs >= s.expireMs && !e.inTxn {
			delete(s.producers, pid)
		}
	}
}

// checkResult says what to do with one request.
type checkResult int

const (
	checkAppend    checkResult = iota // append the batches
	checkDuplicate                    // a retry: answer with dup, write nothing
)

// check runs the sequence checks over the batches of one request, to be
// written at offsets from next on, and records them in the state (with undo
// entries, so commit or rollback decides later). On a duplicate or an error
// the request's own changes are rolled back already; dup holds the original
// offsets of the first duplicate batch.
func (s *producerState) check(batches []byte, next, nowMs int64) (res checkResult, dup batchMeta, err error) {
	s.expire(nowMs)
	mark := s.mark()
	for pos := 0; pos < len(batches); {
		b := record.Batch(batches[pos:])
		pos += b.Size()
		count := int64(b.LastOffsetDelta()) + 1
		first := next
		next += count
		pid := b.ProducerID()
		if pid < 0 {
			continue
		}
		epoch, firstSeq, lastSeq := b.ProducerEpoch(), b.BaseSequence(), b.LastSequence()
		e := s.producers[pid]
		if e != nil && e.epoch == epoch {
			if m, ok := e.findDuplicate(firstSeq, lastSeq); ok {
				s.rollback(mark)
				return checkDuplicate, m, nil
			}
		}
		if err := checkSequence(e, pid, epoch, firstSeq); err != nil {
			s.rollback(mark)
			return checkAppend, batchMeta{}, err
		}
		if e != nil && e.inTxn && !b.Transactional() {
			// Kafka's ProducerAppendInfo.appendDataBatch.
			s.rollback(mark)
			return checkAppend, batchMeta{}, fmt.Errorf("%w: producer %d wrote a non-transactional batch while its transaction from offset %d is open", ErrInvalidTxnState, pid, e.txnFirst)
		}
		e = s.entryForChange(pid, e, epoch)
		s.apply(e, epoch, batchMeta{firstSeq: firstSeq, lastSeq: lastSeq, firstOffset: first, lastOffset: next - 1})
		s.maybeBeginTxn(pid, e, b, first)
		e.lastMs = nowMs
	}
	return checkAppend, batchMeta{}, nil
}

// entryForChange records an undo entry for pid's entry e (nil: unknown,
// then created with epoch) and returns the entry to change.
func (s *producerState) entryForChange(pid int64, e *producerEntry, epoch int16) *producerEntry {
	s.undo = append(s.undo, undoEntry{pid: pid, existed: e != nil})
	if e == nil {
		e = newProducerEntry(epoch)
		s.put(pid, e)
	} else {
		s.undo[len(s.undo)-1].prev = *e
	}
	return e
}

// maybeBeginTxn starts e's transaction at first when b, at first, is the
// first transactional batch since the producer's last marker.
func (s *producerState) maybeBeginTxn(pid int64, e *producerEntry, b record.Batch, first int64) {
	if b.Transactional() && !e.inTxn {
		e.inTxn, e.txnFirst = true, first
		s.events = append(s.events, txnEvent{pid: pid, first: first, marker: -1})
	}
}

// checkMarker checks a transaction marker the leader is about to write at
// offset and records it (with undo, as check): Kafka's
// ProducerAppendInfo.appendEndTxnMarker. An epoch older than the
// producer's is ErrInvalidProducerEpoch, a coordinator epoch older than
// the last marker's ErrCoordinatorFenced. The marker's epoch becomes the
// producer's (a later batch of an older epoch is refused) and ends its
// transaction, if one is open here; a marker for a producer unknown here
// is written all the same.
func (s *producerState) checkMarker(m TxnMarker, offset, nowMs int64) error {
	s.expire(nowMs)
	e := s.producers[m.ProducerID]
	if e != nil && m.ProducerEpoch < e.epoch {
		return fmt.Errorf("%w: marker for producer %d has epoch %d, older than %d", ErrInvalidProducerEpoch, m.ProducerID, m.ProducerEpoch, e.epoch)
	}
	if e != nil && m.CoordinatorEpoch < e.coordEpoch {
		return fmt.Errorf("%w: marker for producer %d has coordinator epoch %d, older than %d", ErrCoordinatorFenced, m.ProducerID, m.CoordinatorEpoch, e.coordEpoch)
	}
	e = s.entryForChange(m.ProducerID, e, m.ProducerEpoch)
	s.endTxn(m.ProducerID, e, m.ProducerEpoch, m.CoordinatorEpoch, !m.Commit, offset)
	e.lastMs = nowMs
	return nil
}

// endTxn applies a marker at offset to e (Kafka's ProducerStateEntry
// update): the epoch (a new one drops the kept batches), the coordinator
// epoch, and the end of the open transaction.
func (s *producerState) endTxn(pid int64, e *producerEntry, epoch int16, coordEpoch int32, abort bool, offset int64) {
	if e.inTxn {
		s.events = append(s.events, txnEvent{pid: pid, first: e.txnFirst, marker: offset, abort: abort})
	}
	e.inTxn = false
	e.coordEpoch = coordEpoch
	if epoch != e.epoch {
		e.epoch, e.n, e.head = epoch, 0, 0
	}
}

// checkSequence applies the rules in the comment at the top of this file.
// e is nil for an unknown producer.
func checkSequence(e *producerEntry, pid int64, epoch int16, firstSeq int32) error {
	switch {
	case e == nil:
		return nil
	case epoch < e.epoch:
		return fmt.Errorf("%w: producer %d epoch %d is older than %d", ErrInvalidProducerEpoch, pid, epoch, e.epoch)
	case epoch > e.epoch:
		if firstSeq != 0 {
			return fmt.Errorf("%w: producer %d new epoch %d must start at sequence 0, got %d", ErrOutOfOrderSequence, pid, epoch, firstSeq)
		}
		return nil
	}
	last, ok := e.last()
	if ok && !inSequence(last.lastSeq, firstSeq) {
		return fmt.Errorf("%w: producer %d epoch %d expected sequence %d, got %d", ErrOutOfOrderSequence, pid, epoch, seqNext(last.lastSeq), firstSeq)
	}
	return nil
}

func seqNext(s int32) int32 {
	if s == math.MaxInt32 {
		return 0
	}
	return s + 1
}

// apply records an appended batch of epoch in e, without checks. A new
// epoch forgets the batches, not the open transaction (Kafka's
// maybeUpdateProducerEpoch).
func (s *producerState) apply(e *producerEntry, epoch int16, m batchMeta) {
	if epoch != e.epoch {
		e.epoch, e.n, e.head = epoch, 0, 0
	}
	e.push(m)
}

// mark returns the current point of the round's changes.
func (s *producerState) mark() stateMark { return stateMark{len(s.undo), len(s.events)} }

// rollback undoes every change recorded after mark, newest first.
func (s *producerState) rollback(m stateMark) {
	s.events = s.events[:m.events]
	mark := m.undo
	for i := len(s.undo) - 1; i >= mark; i-- {
		u := s.undo[i]
		if !u.existed {
			delete(s.producers, u.pid)
			continue
		}
		*s.producers[u.pid] = u.prev
	}
	s.undo = s.undo[:mark]
}

// commit makes the round's changes permanent (the caller took the
// events first).
func (s *producerState) commit() { s.undo, s.events = s.undo[:0], s.events[:0] }

// load records batch b (from the log) without checks: the rebuild after a
// restart (nowMs < 0: the batch's max timestamp dates the entry), or a
// follower's append (nowMs: when; the follower sweeps the table with
// expire once per append, not per batch). Transactions begun and ended
// are added to s.events for the caller. Control batches carry no
// sequence.
func (s *producerState) load(b record.Batch, nowMs int64) {
	if nowMs < 0 {
		nowMs = b.MaxTimestamp()
	}
	pid := b.ProducerID()
	if pid < 0 {
		return
	}
	e := s.producers[pid]
	if b.Control() {
		// A marker: no sequence, but the epoch, the coordinator epoch
		// and the transaction's end. A damaged or emptied control
		// batch (the cleaner may empty one) teaches nothing.
		m, ok, err := record.BatchEndTxnMarker(b)
		if err != nil || !ok {
			return
		}
		if e == nil {
			e = newProducerEntry(b.ProducerEpoch())
			s.put(pid, e)
		}
		s.endTxn(pid, e, max(e.epoch, b.ProducerEpoch()), max(e.coordEpoch, m.CoordinatorEpoch), m.Type == record.ControlAbort, b.BaseOffset())
		e.lastMs = max(e.lastMs, nowMs)
		return
	}
	if e == nil {
		e = newProducerEntry(b.ProducerEpoch())
		s.put(pid, e)
	}
	s.maybeBeginTxn(pid, e, b, b.BaseOffset())
	if b.ProducerEpoch() < e.epoch {
		return
	}
	s.apply(e, b.ProducerEpoch(), batchMeta{
		firstSeq: b.BaseSequence(), lastSeq: b.LastSequence(),
		firstOffset: b.BaseOffset(), lastOffset: b.LastOffset(),
	})
	e.lastMs = max(e.lastMs, nowMs)
}
