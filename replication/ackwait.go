package replication

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Acks=-1 waits (Kafka's DelayedProduce in its produce purgatory).
//
// An acks=-1 append is answered once the high watermark passes its last
// offset. Its outcome is decided by the partition at the moment something
// that matters happens, not when someone gets round to looking: a waiter
// that only looked later (a pipelined request whose response is queued
// behind another's wait) could find the partition turned follower, the
// records truncated and the follower's HW past their offsets, and
// acknowledge records that are no longer in the log; or find the ISR
// shrunk after the HW had passed, and fail records the ISR had.
//
// So AppendLocal links an AckWatch on the partition with the append (as
// Kafka's tryCompleteElseWatch does after its local append), and the code
// that moves what the outcome depends on decides it, with p.hwMu held:
//
//   - the HW moves (advanceHW): NONE once HW >= target, or
//     NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR is then smaller than
//     min.insync.replicas (Kafka's checkEnoughReplicasReachOffset);
//   - leadership is lost (MakeFollower bumps the generation, then
//     notifies): NOT_LEADER, whatever the HW says from then on;
//   - the ISR or min.insync.replicas changes so that the ISR is too small
//     while the HW is short of target: NOT_ENOUGH_REPLICAS_AFTER_APPEND
//     (earlier than Kafka, which waits for the HW or the timeout; the
//     answer is the same);
//   - Close: ErrClosed.
//
// The waiting request times out or is dropped by cancelling its watches
// (AckWatch.Cancel): a watch not yet decided is decided with that error.
// Decided watches are unlinked at once, so a partition holds only the
// undecided ones: at most one per acks=-1 request partition in flight.
//
// A request over several partitions waits on one AckGroup, which its
// watches count down: one wake-up when the last is decided, no goroutine
// per partition.

// An AckGroup is one request's wait for its acks=-1 watches. Reset arms it
// holding one count of its own, each AppendLocal that links a watch adds
// one, Seal drops the owner's: the group is done when every linked watch
// is decided and Seal was called. Safe for concurrent use; Reset only when
// no watch of the group is linked.
type AckGroup struct {
	// wake receives (without blocking; capacity 1) when the group is
	// done. It may be shared by the groups of one waiter (a connection),
	// which then re-checks Done.
	wake    chan struct{}
	pending atomic.Int32 // undecided watches, plus 1 until Seal
	done    atomic.Bool  // pending reached 0; at is set
	at      time.Time    // when it was done; written before done is set
}

// NewAckGroup returns a reset group that signals wake (nil: a channel of
// its own) when done.
func NewAckGroup(wake chan struct{}) *AckGroup {
	g := &AckGroup{}
	g.Reset(wake)
	return g
}

// Reset readies g for a new request, signalling wake (nil: keep the
// channel it has, or make one). A wake-up left in a channel of its own is
// dropped. REQUIRES: no watch of g is linked.
func (g *AckGroup) Reset(wake chan struct{}) {
	if wake == nil {
		if g.wake == nil {
			g.wake = make(chan struct{}, 1)
		}
		select {
		case <-g.wake:
		default:
		}
	} else {
		g.wake = wake
	}
	g.pending.Store(1)
	g.done.Store(false)
	g.at = time.Time{}
}

// Seal tells g that no more watches will be added: it is done once those
// added are decided (at once when there are none).
func (g *AckGroup) Seal() { g.release() }

func (g *AckGroup) add() { g.pending.Add(1) }

func (g *AckGroup) release() {
	if g.pending.Add(-1) == 0 {
		g.at = time.Now()
		g.done.Store(true)
		select {
		case g.wake <- struct{}{}:
		default:
		}
	}
}

// Done reports whether every watch of the sealed group is decided: their
// Err may then be read.
func (g *AckGroup) Done() bool { return g.done.Load() }

// DecidedAt is when the group was done (zero before).
func (g *AckGroup) DecidedAt() time.Time {
	if !g.done.Load() {
		return time.Time{}
	}
	return g.at
}

// Wait waits until g is done (nil) or ctx is (ctx.Err(); then Cancel the
// watches still undecided). REQUIRES: g sealed.
func (g *AckGroup) Wait(ctx context.Context) error {
	for !g.done.Load() {
		select {
		case <-g.wake:
		case <-ctx.Done():
			if g.done.Load() {
				return nil
			}
			return ctx.Err()
		}
	}
	return nil
}

// An AckWatch is one partition's part of an acks=-1 request's wait: linked
// on the partition by AppendLocal, decided by the partition (see above),
// or by Cancel. The zero AckWatch is unlinked; it is owned by the request,
// which must not reuse or free it before its group is done.
type AckWatch struct {
	g      *AckGroup
	p      *Partition
	target int64  // the HW that commits the request: its last offset + 1
	gen    uint64 // p.gen at the append
	err    error  // the outcome, once decided

	// Guarded by p.hwMu while linked.
	prev, next *AckWatch
	linked     bool
}

// Err returns the watch's outcome: nil when the ISR has the records. Read
// it once its group is done (or after Cancel).
func (w *AckWatch) Err() error { return w.err }

// Cancel decides w with err (the request timed out or its connection
// went away) unless the partition already decided it; the records stay in
// the log. After Cancel the partition no longer refers to w. Calling it
// on an unlinked watch does nothing.
func (w *AckWatch) Cancel(err error) {
	p := w.p
	if p == nil {
		return
	}
	p.hwMu.Lock()
	if w.linked {
		p.decideAckLocked(w, err)
	}
	p.hwMu.Unlock()
}

// watchCommit links w, in group g, for an acks=-1 append made in
// generation gen whose last offset is target-1, deciding it at once if its
// outcome is already known.
func (p *Partition) watchCommit(w *AckWatch, g *AckGroup, target int64, gen uint64) {
	*w = AckWatch{g: g, p: p, target: target, gen: gen}
	g.add()
	p.hwMu.Lock()
	if done, err := p.ackOutcomeLocked(w); done {
		w.err = err
		g.release()
	} else {
		w.next = p.acks.head
		if w.next != nil {
			w.next.prev = w
		}
		p.acks.head = w
		p.acks.n++
		w.linked = true
	}
	p.hwMu.Unlock()
}

// ackOutcomeLocked decides w if its outcome is known. The HW is read
// before the generation: if the generation is still w's, the partition
// led throughout, so that HW is the leader's and the records are in the
// log. REQUIRES: p.hwMu held (the HW does not move).
func (p *Partition) ackOutcomeLocked(w *AckWatch) (bool, error) {
	hw := p.hw.Load()
	switch {
	case p.gen.Load() != w.gen || !p.isLeader.Load():
		return true, ErrNotLeader
	case hw < w.target && p.closed:
		return true, ErrClosed
	}
	// Kafka's checkEnoughReplicasReachOffset: an ISR below
	// min.insync.replicas fails the request whether or not the HW passed
	// it; otherwise the HW passing it is success.
	if short, isr, minISR := p.isrShortNow(); short {
		return true, fmt.Errorf("%w: %s-%d has %d in-sync replicas, min.insync.replicas is %d", ErrNotEnoughReplicasAfterAppend, p.opts.Topic, p.index, isr, minISR)
	}
	return hw >= w.target, nil
}

// isrShortNow reports whether the ISR is smaller than min.insync.replicas,
// from the mirror kept under p.rmu (noteISRLocked), so that it can be read
// with p.hwMu held.
func (p *Partition) isrShortNow() (bool, int, int) {
	v := p.isrSizes.Load()
	isr, minISR := int(v>>32), int(int32(v))
	return isr < minISR, isr, minISR
}

// noteISRLocked mirrors the ISR size and min.insync.replicas for
// ackOutcomeLocked. Call it after changing either, before the HW can move
// or waiters are notified. REQUIRES: p.rmu held.
func (p *Partition) noteISRLocked() {
	p.isrSizes.Store(int64(len(p.rs.isr))<<32 | int64(uint32(p.rs.minISR)))
}

// decideAckLocked records err as w's outcome, unlinks it and counts it
// down in its group. REQUIRES: p.hwMu held, w linked on p.
func (p *Partition) decideAckLocked(w *AckWatch, err error) {
	w.err = err
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		p.acks.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	}
	w.prev, w.next, w.linked = nil, nil, false
	p.acks.n--
	w.g.release()
}

// settleAcksLocked decides every linked watch whose outcome is known.
// REQUIRES: p.hwMu held.
func (p *Partition) settleAcksLocked() {
	for w := p.acks.head; w != nil; {
		next := w.next
		if done, err := p.ackOutcomeLocked(w); done {
			p.decideAckLocked(w, err)
		}
		w = next
	}
}

// AckWatchers returns how many acks=-1 watches wait on p (Kafka's produce
// purgatory size, per partition), for tests.
func (p *Partition) AckWatchers() int {
	p.hwMu.Lock()
	defer p.hwMu.Unlock()
	return p.acks.n
}

// ackList is a partition's list of linked AckWatches.
type ackList struct {
	head *AckWatch
	n    int
}

// ackSingle is the group and watch of one Append or marker waiting alone.
type ackSingle struct {
	g AckGroup
	w AckWatch
}

var ackSinglePool = sync.Pool{New: func() any { return &ackSingle{} }}

// WaitCommitted waits for the records of res, the result of an Append
// with acks 0 or 1 made by this caller, as that Append would have with acks
// -1: until the high watermark passes them, with ErrNotLeader when
// leadership was lost since the append (even if a later leader's records
// took their offsets and the HW passed them), ErrNotEnoughReplicasAfterAppend
// when the ISR is below min.insync.replicas, ErrClosed, or ctx's error.
// For callers that must not hold their own lock across the wait (the
// transactional offset commit of package offsets).
func (p *Partition) WaitCommitted(ctx context.Context, res AppendResult) error {
	return p.waitAppended(ctx, &res, res.gen)
}

// waitAppended waits for res (an acks=-1 append made in generation gen)
// like a pipelined request, in the caller's goroutine: linked at once,
// decided by the partition, or ended by ctx.
func (p *Partition) waitAppended(ctx context.Context, res *AppendResult, gen uint64) error {
	s := ackSinglePool.Get().(*ackSingle)
	s.g.Reset(nil)
	start := time.Now()
	p.watchCommit(&s.w, &s.g, res.LastOffset+1, gen)
	s.g.Seal()
	if err := s.g.Wait(ctx); err != nil {
		s.w.Cancel(err)
	}
	err := s.w.err
	res.Waited += time.Since(start)
	s.w = AckWatch{}
	ackSinglePool.Put(s)
	return err
}
