package cluster

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice/sluice/metadata"
)

// ControllerStats is what the controller knows of the cluster.
type ControllerStats = metadata.ControllerStats

// controllerStatsWait bounds how long a scrape waits for the event loop to
// recount; a loop busy longer (a slow ZooKeeper) gets the previous counts.
// A variable for tests on loaded machines.
var controllerStatsWait = time.Second

// controllerStats holds the counts for scrapes, computed lazily: counting
// walks every partition, so the event loop only marks the counts dirty
// after each event (one atomic store), and a scrape that finds them dirty
// asks the loop to recount (evControllerStats) and waits for it. The
// counts are computed on the loop, which owns the controller's state, and
// published as a copy, so readers take no lock the loop holds.
type controllerStats struct {
	v atomic.Pointer[ControllerStats]
	// dirty: an event ran since v was computed.
	dirty atomic.Bool
	// computed counts recounts (tests).
	computed atomic.Int64

	mu sync.Mutex
	// recount is closed when the queued evControllerStats has run; nil
	// when none is queued. Concurrent scrapes share one recount.
	recount chan struct{}
}

// ControllerStats returns the controller's counts as of its last event.
// Safe for concurrent use; may wait up to controllerStatsWait for the
// event loop.
func (n *Node) ControllerStats() ControllerStats {
	if !n.isController.Load() {
		return ControllerStats{}
	}
	cs := &n.ctlStats
	if cs.dirty.Load() || cs.v.Load() == nil {
		cs.mu.Lock()
		ch := cs.recount
		if ch == nil {
			ch = make(chan struct{})
			cs.recount = ch
			n.post(event{kind: evControllerStats})
		}
		cs.mu.Unlock()
		t := time.NewTimer(controllerStatsWait)
		select {
		case <-ch:
		case <-t.C:
		case <-n.ctx.Done():
		}
		t.Stop()
	}
	if st := cs.v.Load(); st != nil && n.isController.Load() {
		return *st
	}
	return ControllerStats{}
}

// controllerStatsDirty notes that an event of kind is about to run: the
// counts may change. Runs on the event loop.
func (n *Node) controllerStatsDirty(kind eventKind) {
	if kind != evControllerStats {
		n.ctlStats.dirty.Store(true)
	}
}

// publishControllerStats recounts for scrapes and wakes the scrapes
// waiting. Runs on the event loop (evControllerStats); O(partitions).
func (n *Node) publishControllerStats() {
	cs := &n.ctlStats
	cs.dirty.Store(false) // before counting: an event after this marks it again
	cs.computed.Add(1)
	st := &ControllerStats{}
	if c := n.ctl; c != nil {
		st = &ControllerStats{Active: true, Topics: len(c.topics)}
		for _, t := range c.topics {
			st.Partitions += len(t.replicas)
		}
		for _, ps := range c.states {
			if ps.Leader < 0 || !c.isLive(ps.Leader) {
				st.OfflinePartitions++
			}
		}
	}
	cs.v.Store(st)
	cs.mu.Lock()
	if cs.recount != nil {
		close(cs.recount)
		cs.recount = nil
	}
	cs.mu.Unlock()
}
