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
}

type backoffState struct {
	failures int
	next     time.Time
}

// newBackoff returns the backoff of a task running every interval: from
// one interval up to 16 of them, but at most 5 minutes.
func newBackoff(interval time.Duration) *backoff {
	base := max(interval, time.Millisecond)
	return &backoff{base: base, max: max(base, min(16*base, 5*time.Minute)), now: time.Now, parts: map[TopicIDPartition]backoffState{}}
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

// forget drops a deleted partition's state.
func (b *backoff) forget(tp TopicIDPartition) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.parts, tp)
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
