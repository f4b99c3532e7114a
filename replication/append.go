package replication

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/internal/safe"
	"github.com/sluice/sluice/record"
)

// Coalesced appends (group commit)
//
// Produce requests for one partition arrive on many connections at once. An
// engine append costs a write syscall (and an fsync with flush.messages=1)
// whatever its size, so the partition appends them in rounds: while one
// round runs, later requests queue; the next round concatenates every
// queued request's batches into ONE engine.Log.Append call.
//
// There is no appender goroutine: the request that finds the partition idle
// leads the round that includes it. When its round is done and more
// requests have queued, it hands leadership to the oldest of them (which
// leads the next round with everything queued by then) and returns. So
// every goroutine leads at most one round, the one that holds its own
// request, and latency does not pile up on one caller.
//
// Validation and the producer checks stay per request: batches are validated
// before queueing, and the sequence checks run in queue order as the round
// is assembled, each request seeing the state left by the ones before it.
// A request that fails them gets its own error; the others go on. If the
// engine append of a round with several requests fails (say one batch is
// over max.message.bytes), the round's producer changes are rolled back and
// each request is retried alone, so only the culprit fails.

// appendReq is one queued Append. Pooled: no allocation per request.
type appendReq struct {
	batches []byte
	marker  *TxnMarker // non-nil: batches is this marker's control batch
	res     AppendResult
	err     error
	write   bool // set by appendRound: the batches are in the engine append
	// wake receives exactly one message: true when the request's
	// goroutine must lead the next round, false when res/err are set.
	wake chan bool
}

var reqPool = sync.Pool{New: func() any { return &appendReq{wake: make(chan bool, 1)} }}

// Append appends the record batches of one produce request partition: one or
// more RecordBatch v2 back to back, owned by the caller, which may be
// rewritten in place (baseOffset, partitionLeaderEpoch, and the timestamp
// and CRC for LogAppendTime) and are not retained after Append returns.
//
// acks 0 and 1 return after the local append; -1 returns once the high
// watermark passes the request's last offset, or with ctx.Err() when ctx is
// done first (the records may then still be committed later). With acks -1
// an ISR smaller than min.insync.replicas fails the request before anything
// is appended (ErrNotEnoughReplicas); an ISR that shrinks below it while
// the request waits fails it with ErrNotEnoughReplicasAfterAppend (the
// records stay in the log), and losing leadership while it waits with
// ErrNotLeader. Errors: ErrNotLeader (not the leader),
// record.ErrCorrupt/ErrInvalid/ErrInvalidTimestamp/ErrTooLarge/ErrUnsupported
// (validation, record.ValidateAppend),
// ErrTransactional (a control batch), ErrOutOfOrderSequence,
// ErrInvalidProducerEpoch, ErrInvalidTxnState, ErrClosed, and engine
// errors wrapped. Transactional batches are appended like idempotent ones
// and open the producer's transaction in the partition (txn.go). A duplicate of one of a producer's
// last 5 batches is not an error: Duplicate is set and BaseOffset is the
// original one. Safe for concurrent use.
func (p *Partition) Append(ctx context.Context, batches []byte, acks int16) (AppendResult, error) {
	return p.AppendChecked(ctx, batches, acks, record.Prechecked{})
}

// AppendChecked is Append for batches of which the caller has already
// checked what pre says (record.Prechecked); the partition checks the rest.
func (p *Partition) AppendChecked(ctx context.Context, batches []byte, acks int16, pre record.Prechecked) (AppendResult, error) {
	if err := p.checkClientBatches(batches, pre); err != nil {
		return AppendResult{BaseOffset: -1, LastOffset: -1, LogAppendTime: -1, LogStartOffset: -1}, err
	}
	res, err := p.appendQueued(batches, acks, nil)
	if err != nil || acks != -1 {
		return res, err
	}
	return res, p.waitAppended(ctx, &res, res.gen)
}

// AppendLocal is AppendChecked with acks -1 up to the local append: the
// min.insync.replicas check, validation and the append itself, with the
// same errors. It does not wait for the ISR: when it returns no error it
// has linked w (owned by the caller until g is done) in group g, and the
// partition decides w's outcome (ackwait.go) when the high watermark
// passes the records, leadership is lost, the ISR is too small or the
// partition closes; the request must not be acknowledged before g is done
// and w.Err() is nil, and a caller that stops waiting cancels w. Splitting
// the two lets a connection append its next produce request while this
// one is being replicated (server: pipelined acks=all produce) instead of
// leaving the leader idle for a follower round trip per request. On error
// w is not linked. Safe for concurrent use.
func (p *Partition) AppendLocal(batches []byte, pre record.Prechecked, w *AckWatch, g *AckGroup) (AppendResult, error) {
	if err := p.checkClientBatches(batches, pre); err != nil {
		return AppendResult{BaseOffset: -1, LastOffset: -1, LogAppendTime: -1, LogStartOffset: -1}, err
	}
	res, err := p.appendQueued(batches, -1, nil)
	if err == nil {
		p.watchCommit(w, g, res.LastOffset+1, res.gen)
	}
	return res, err
}

// appendQueued is Append after validation: client batches (marker nil) or
// one marker's control batch (WriteTxnMarker).
// It does not wait for the ISR (waitAppended, AppendLocal).
func (p *Partition) appendQueued(batches []byte, acks int16, marker *TxnMarker) (AppendResult, error) {
	gen := p.gen.Load()
	if !p.isLeader.Load() {
		return AppendResult{BaseOffset: -1, LastOffset: -1, LogAppendTime: -1, LogStartOffset: -1}, ErrNotLeader
	}
	if acks == -1 {
		p.rmu.Lock()
		isr, minISR := len(p.rs.isr), int(p.rs.minISR)
		p.rmu.Unlock()
		if isr < minISR {
			return AppendResult{BaseOffset: -1, LastOffset: -1, LogAppendTime: -1, LogStartOffset: -1},
				fmt.Errorf("%w: %s-%d has %d in-sync replicas, min.insync.replicas is %d", ErrNotEnoughReplicas, p.opts.Topic, p.index, isr, minISR)
		}
	}
	r := reqPool.Get().(*appendReq)
	r.batches, r.marker = batches, marker

	p.qmu.Lock()
	if p.qclosed {
		p.qmu.Unlock()
		r.batches, r.marker = nil, nil
		reqPool.Put(r)
		return AppendResult{BaseOffset: -1, LastOffset: -1, LogAppendTime: -1, LogStartOffset: -1}, ErrClosed
	}
	if p.q == nil {
		p.q = new(appendQueue)
	}
	p.q.queue = append(p.q.queue, r)
	lead := !p.appending
	p.appending = true
	p.qmu.Unlock()

	if !lead {
		lead = <-r.wake
	}
	if lead {
		p.runRound()
		<-r.wake // our own result, sent by the round
	}
	res, err := r.res, r.err
	*r = appendReq{wake: r.wake}
	reqPool.Put(r)
	res.Appended = err == nil && !res.Duplicate
	res.gen = gen
	return res, err
}

// checkClientBatches is the validation done before queueing: every batch
// whole, compressed records included, against the topic's rules
// (record.ValidateAppend); no control batch (Kafka's LogValidator: only
// the broker writes markers) and no transactional batch without a
// producer id. What pre vouches for is not checked again.
func (p *Partition) checkClientBatches(batches []byte, pre record.Prechecked) error {
	r := *p.rules.Load()
	r.Pre = pre
	r.LogAppendTime = p.logAppendTime.Load()
	r.Now = p.opts.Now().UnixMilli()
	if _, _, err := record.ValidateAppend(batches, &r); err != nil {
		return err
	}
	for pos := 0; pos < len(batches); {
		b := record.Batch(batches[pos:])
		if b.Control() || (b.Transactional() && b.ProducerID() < 0) {
			return fmt.Errorf("%w: batch at byte %d has attributes %#x and producer id %d", ErrTransactional, pos, b.Attributes(), b.ProducerID())
		}
		pos += b.Size()
	}
	return nil
}

// waitHW waits until the high watermark reaches hw, as an acks=-1 append
// of the current generation whose last offset is hw-1 (waitAppended).
func (p *Partition) waitHW(ctx context.Context, hw int64) error {
	return p.waitAppended(ctx, &AppendResult{LastOffset: hw - 1}, p.gen.Load())
}

// runRound takes every queued request, appends them in one engine call,
// delivers the results and hands leadership on.
// REQUIRES: the caller leads (p.appending was set on its behalf).
func (p *Partition) runRound() {
	p.qmu.Lock()
	round := p.q.queue // not nil: the caller queued a request
	p.q.queue = p.q.spare[:0]
	closed := p.qclosed
	p.qmu.Unlock()

	if closed {
		for _, r := range round {
			r.err = ErrClosed
		}
	} else if err := p.safeAppendRound(round); err != nil && len(round) > 1 && !errors.Is(err, engine.ErrClosed) && !errors.Is(err, safe.ErrPanic) {
		p.opts.Logger.Warn("replication: coalesced append failed, retrying each request alone",
			"topic", p.opts.Topic, "partition", p.index, "requests", len(round), "err", err)
		// One request may have poisoned the round: the round's producer
		// changes were rolled back, so retry every request alone, checks
		// included (a duplicate may have pointed into the failed round).
		for i := range round {
			_ = p.safeAppendRound(round[i : i+1])
		}
	}

	// Deliver. After the wake a request belongs to its goroutine again.
	for i, r := range round {
		round[i] = nil
		r.batches, r.marker = nil, nil
		r.wake <- false
	}
	p.qmu.Lock()
	p.q.spare = round[:0]
	if len(p.q.queue) > 0 {
		p.q.queue[0].wake <- true // p.appending stays set: the next leader owns it
	} else {
		p.endRoundLocked()
	}
	p.qmu.Unlock()
}

// safeAppendRound is appendRound with a panic (a bug) turned into the
// error of every request of the round, so the requests are answered and
// the partition keeps serving. The partition's state is made to match the
// log again: when the panic came before anything reached the log, the
// round's producer-state changes are undone; when the log end moved (the
// panic came during or after the engine append), the producer state is
// rebuilt from the log, whose batches it must describe (a retry of one is
// then a duplicate), and the byte marks and high watermark are recomputed
// for the new log end. REQUIRES: the caller leads the round.
func (p *Partition) safeAppendRound(round []*appendReq) error {
	before := p.log.EndOffset()
	err := safe.Call(p.opts.Logger, "replication: append round", func() error { return p.appendRound(round) })
	if errors.Is(err, safe.ErrPanic) {
		if end := p.log.EndOffset(); end == before {
			p.producerTable().rollback(stateMark{})
		} else {
			p.rebuildProducerState("a panic in an append round")
			p.lowerHW(end) // resets the byte marks to the log end
			p.rmu.Lock()
			p.maybeAdvanceHWLocked()
			p.rmu.Unlock()
		}
		for _, r := range round {
			r.res = AppendResult{BaseOffset: -1, LastOffset: -1, LogAppendTime: -1, LogStartOffset: -1}
			r.err = fmt.Errorf("replication: %s-%d: %w", p.opts.Topic, p.index, err)
		}
	}
	return err
}

// appendRound checks and appends the requests of one round, setting each
// request's res or err. It returns the engine error when the engine append
// failed (every request that was to be written then holds it), nil
// otherwise. REQUIRES: the caller leads the round.
func (p *Partition) appendRound(round []*appendReq) error {
	if !p.isLeader.Load() {
		for _, r := range round {
			r.res = AppendResult{BaseOffset: -1, LastOffset: -1, LogAppendTime: -1, LogStartOffset: -1}
			r.err = ErrNotLeader
		}
		return nil
	}
	ps := p.producerTable()
	base := p.log.EndOffset()
	next := base
	nowMs := p.opts.Now().UnixMilli()
	var single []byte // the one request's batches when only one writes
	writers := 0
	buf := p.q.roundBuf[:0]
	for _, r := range round {
		r.res = AppendResult{BaseOffset: -1, LastOffset: -1, LogAppendTime: -1, LogStartOffset: -1}
		r.err = nil
		r.write = false
		var res checkResult
		var dup batchMeta
		var err error
		if r.marker != nil {
			err = ps.checkMarker(*r.marker, next, nowMs)
		} else {
			res, dup, err = ps.check(r.batches, next, nowMs)
		}
		switch {
		case err != nil:
			r.err = err
			continue
		case res == checkDuplicate:
			r.res.BaseOffset, r.res.LastOffset, r.res.Duplicate = dup.firstOffset, dup.lastOffset, true
			continue
		}
		r.write = true
		n := countOffsets(r.batches)
		r.res.BaseOffset, r.res.LastOffset = next, next+n-1
		next += n
		writers++
		if writers == 1 {
			single = r.batches
		} else {
			if writers == 2 {
				buf = append(buf, single...)
			}
			buf = append(buf, r.batches...)
		}
	}
	if writers == 0 {
		ps.commit() // no event: a duplicate or a refusal changes nothing
		p.fillStart(round)
		return nil
	}
	data := single
	if writers > 1 {
		data = buf
	}
	// Every request was validated (CRC included) before it was queued.
	opts := engine.AppendOptions{AssignOffsets: true, LeaderEpoch: p.leaderEpoch.Load(), Prevalidated: true}
	if p.logAppendTime.Load() {
		opts.LogAppendTime = p.opts.Now().UnixMilli()
	}
	info, err := p.log.Append(data, opts)
	if cap(buf) <= maxKeptRoundBuf {
		p.q.roundBuf = buf[:0]
	}
	if err == nil && info.FirstOffset != base {
		// Someone appended behind the partition's back; the producer
		// state computed above is wrong. Do not hide it.
		err = fmt.Errorf("replication: log end moved during append (expected first offset %d, got %d)", base, info.FirstOffset)
	}
	if err == nil && p.opts.FlushEveryAppend {
		err = p.log.Flush()
	}
	if err != nil {
		ps.rollback(stateMark{})
		p.lowerHW(p.log.EndOffset()) // what reached the log is unknown: reset the byte marks
		err = fmt.Errorf("replication: append to %s-%d: %w", p.opts.Topic, p.index, err)
		for _, r := range round {
			if r.write {
				r.err = err
			}
		}
		return err
	}
	// Transactions begun and ended: the aborted-transaction index first,
	// then the LSO tracking (txn.go), before the HW can be moved here.
	if len(ps.events) > 0 {
		if terr := p.applyTxnEvents(ps.events, true); terr != nil {
			terr = fmt.Errorf("replication: %s-%d: %w", p.opts.Topic, p.index, terr)
			for _, r := range round {
				if r.write && r.marker != nil {
					r.err = terr
				}
			}
		}
	}
	ps.commit()
	p.noteAppended(int64(len(data)))
	p.maybeSnapshot(false)
	p.appends.Add(1)
	p.appended(next, int64(len(data))) // before the HW passes it: HW moves are priced from its mark
	p.rmu.Lock()
	p.maybeAdvanceHWLocked()
	p.rmu.Unlock()
	p.wakeChanged() // the log end moved (the HW may not have)
	p.fillStart(round)
	if opts.LogAppendTime > 0 {
		for _, r := range round {
			if r.write {
				r.res.LogAppendTime = opts.LogAppendTime
			}
		}
	}
	return nil
}

// appendQueue is a partition's append queue, made when the first append
// is queued (a partition that is never written holds none: 72 bytes).
type appendQueue struct {
	// queue holds the requests waiting for the next round; spare is the
	// previous round's slice, reused. REQUIRES: Partition.qmu.
	queue, spare []*appendReq
	// roundBuf concatenates the batches of a round's requests. Owned by
	// the goroutine leading the current round.
	roundBuf []byte
	// idle is signalled (with qmu) when Partition.appending turns false;
	// nil until someone waits for it (waitIdleLocked), as most
	// partitions never do.
	idle *sync.Cond
}

// maxKeptRoundBuf bounds the concatenation buffer kept between rounds.
const maxKeptRoundBuf = 8 << 20

// fillStart sets LogStartOffset in every successful result: the log start
// offset (LogStart, Kafka's logStartOffset, which a tiered partition keeps
// below its local start), as Kafka's produce response reports it.
func (p *Partition) fillStart(round []*appendReq) {
	start := p.LogStart()
	for _, r := range round {
		if r.err == nil {
			r.res.LogStartOffset = start
		}
	}
}

// countOffsets returns how many offsets the (validated) batches take.
func countOffsets(batches []byte) int64 {
	var n int64
	for pos := 0; pos < len(batches); {
		b := record.Batch(batches[pos:])
		n += int64(b.LastOffsetDelta()) + 1
		pos += b.Size()
	}
	return n
}
