package server

// Fetch purgatory: where a fetch with fewer than min_bytes available waits
// (Kafka's DelayedFetch in its DelayedOperationPurgatory). The fetch holds
// one replication.Waiter and one replication.Watch per partition it reads,
// the Watch kept in its fetchTarget so that it is allocated with the
// request. The Watches are linked into their partitions the first time the
// fetch parks and stay linked until it answers: an append, a high-watermark
// move, a truncation, a leadership change or Close on any of them credits or
// wakes the one Waiter, and a woken fetch reads again and parks again
// without allocating or touching the partitions it is not reading. A fetch
// that answers at once never links anything.
//
// The Waiter and the timer come from a pool, so a long poll allocates
// nothing of its own beyond what fill does, however many partitions it
// watches (BenchmarkLongPollWake).

import (
	"sync"
	"time"

	"github.com/sluice/sluice/replication"
)

// parkedFetch is the wait state of one long poll.
type parkedFetch struct {
	w      *replication.Waiter
	timer  *time.Timer // stopped while in the pool
	linked bool        // the targets' Watches are linked
}

var parkedFetches = sync.Pool{New: func() any {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &parkedFetch{w: replication.NewWaiter(), timer: t}
}}

// prepare readies the Watch of every target that can be waited on and
// returns how many there are. Call it before the first read: a change
// between that read and park wakes the fetch.
func (pf *parkedFetch) prepare(targets [][]fetchTarget) int {
	n := 0
	for i := range targets {
		for j := range targets[i] {
			ft := &targets[i][j]
			switch {
			case ft.p == nil || ft.err != nil:
				continue
			case ft.committed:
				ft.watch.PrepareCommitted(ft.p.Partition, pf.w)
			default:
				ft.watch.Prepare(ft.p.Partition, pf.w, ft.replica)
			}
			n++
		}
	}
	return n
}

// park links the prepared Watches (the first time) and arms the Waiter
// for need more bytes; it reports whether to wait (false: enough arrived
// during the read already, read again).
func (pf *parkedFetch) park(targets [][]fetchTarget, need int64) bool {
	if !pf.linked {
		pf.linked = true
		pf.forEachWatch(targets, (*replication.Watch).Link)
	}
	return pf.w.Arm(need)
}

// release unlinks every Watch and returns pf to the pool.
func (pf *parkedFetch) release(targets [][]fetchTarget) {
	if pf.linked {
		pf.forEachWatch(targets, (*replication.Watch).Unlink)
		pf.linked = false
	}
	pf.timer.Stop()
	pf.w.Reset()
	parkedFetches.Put(pf)
}

// forEachWatch calls f on every target's Watch; Link and Unlink skip the
// ones prepare left alone, so a target that failed since cannot leak one.
func (pf *parkedFetch) forEachWatch(targets [][]fetchTarget, f func(*replication.Watch)) {
	for i := range targets {
		for j := range targets[i] {
			f(&targets[i][j].watch)
		}
	}
}
