package tiered

import (
	"sync"
	"time"

	"github.com/sluice/sluice/engine"
)

// backoff spaces out the remote work of a partition whose store calls
// fail: after n failures in a row the partition's copies, leftover
// cleaning and remote retention wait base*2^(n-1), at most max, before
// they are tried again (local retention, which only deletes segments
// already remote, goes on at every run). Each store call is itself retried
// by the backend (the S3 SDK's retryer); this is the slower loop above it,
// so that a store down for an hour is not called every task interval by
// every partition. Errors of the local log or the metadata do not count:
// they are not the store's. Safe for concurrent use.
type backoff struct {
	base, max time.Duration
	now       func() time.Time // the monotonic clock: real time even when tests fake the manager's

	mu    sync.Mutex
	parts map[TopicIDPartition]backoffState
	sweep map[TopicIDPartition]bool // succeeded after failures: sweep for orphans
}

type backoffState struct {
	failures int
	next     time.Time
}

// newBackoff returns the backoff of a task running every interval: from
// one interval up to 16 of them, but at most 5 minutes.
func newBackoff(interval time.Duration) *backoff {
	base := max(interval, time.Millisecond)
	return &backoff{base: base, max: max(base, min(16*base, 5*time.Minute)), now: time.Now, parts: map[TopicIDPartition]backoffState{}, sweep: map[TopicIDPartition]bool{}}
}

// ready reports whether tp's remote work may run now.
func (b *backoff) ready(tp TopicIDPartition) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	st, ok := b.parts[tp]
	return !ok || !b.now().Before(st.next)
}

// done records the outcome of tp's remote work and returns how long it
// waits before the next try (0 after a success, or an error that is not
// the store's).
func (b *backoff) done(tp TopicIDPartition, err error) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err == nil || !isStorageErr(err) {
		if _, failing := b.parts[tp]; failing && err == nil {
			b.sweep[tp] = true
		}
		delete(b.parts, tp)
		return 0
	}
	st := b.parts[tp]
	st.failures++
	d := b.base
	for i := 1; i < st.failures && d < b.max; i++ {
		d *= 2
	}
	d = min(d, b.max)
	st.next = b.now().Add(d)
	b.parts[tp] = st
	return d
}

// markSweep asks for a sweep of tp's orphans after its next successful
// run: a copy cut short (a crash, a failed step) may have store requests
// still on their way that land after its cleanup listed the objects.
func (b *backoff) markSweep(tp TopicIDPartition) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sweep[tp] = true
}

// takeSweep reports, once, that tp's remote work succeeded after
// failures.
func (b *backoff) takeSweep(tp TopicIDPartition) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	sw := b.sweep[tp]
	delete(b.sweep, tp)
	return sw
}

// forget drops a deleted partition's state.
func (b *backoff) forget(tp TopicIDPartition) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.parts, tp)
	delete(b.sweep, tp)
}

// deleteOrphans deletes, through the backend's OrphanDeleter (when it has
// one), tp's objects whose segment the metadata does not name (all of
// them when all is set: a deleted partition). A store call that timed out
// can still complete once a hung store runs again, after the cleanup of
// its copy listed the objects: such objects are named by no metadata, and
// retention and topic deletion, which delete what the metadata names,
// would never remove them. The remote log manager sweeps a partition
// when its store calls succeed again after failures, and a deleted
// partition's whole prefix. REQUIRES: m.taskMu held.
func (m *Manager) deleteOrphans(tp TopicIDPartition, all bool) error {
	od, ok := m.rsm.(OrphanDeleter)
	if !ok {
		return nil
	}
	keep := func(UUID) bool { return false }
	if !all {
		segs, err := m.meta.Segments(tp)
		if err != nil {
			return err
		}
		ids := make(map[UUID]bool, len(segs))
		for _, s := range segs {
			ids[s.SegmentID] = true
		}
		keep = func(id UUID) bool { return ids[id] }
	}
	n, err := od.DeleteOrphans(tp, keep)
	if n > 0 {
		m.log.Info("tiered: deleted remote objects no metadata names", "partition", tp.String(), "objects", n)
	}
	return err
}

// copyLagOf returns the rolled segments (of segs, oldest first) that lie
// wholly below bound and past remoteEnd, with their bytes: what is
// waiting to be copied (Kafka's RemoteCopyLagBytes/Segments).
func copyLagOf(segs []engine.SegmentInfo, bound, remoteEnd int64) (lag copyLag) {
	for _, s := range segs {
		if s.Next > bound {
			break
		}
		if s.Next-1 < remoteEnd || s.End == s.Base {
			continue
		}
		lag.bytes += s.Bytes
		lag.segments++
	}
	return lag
}

// sleepUnlessStopped waits d, or less when the manager stops (Start's
// stop), and reports whether it may go on: false once it has stopped, so
// that a retry loop outside the task (PartitionDeleted) ends with the
// broker instead of holding its shutdown for its remaining sleeps.
func (m *Manager) sleepUnlessStopped(d time.Duration) bool {
	if m.isStopped() {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return !m.isStopped()
	case <-m.stopped:
		return false
	}
}
