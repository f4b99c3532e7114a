package replication

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeReplicaQuota is a ReplicaQuota whose state the test sets.
type fakeReplicaQuota struct {
	throttled, exceeded atomic.Bool
	checks              atomic.Int64 // Exceeded calls
	recorded, skipped   atomic.Int64
}

func (q *fakeReplicaQuota) Throttled(topic string, partition int32) bool {
	return q.throttled.Load() && topic == testID.Topic && partition == testID.Partition
}
func (q *fakeReplicaQuota) Exceeded() bool    { q.checks.Add(1); return q.exceeded.Load() }
func (q *fakeReplicaQuota) Record(n int64)    { q.recorded.Add(n) }
func (q *fakeReplicaQuota) NoteSkipped(n int) { q.skipped.Add(int64(n)) }

// TestFetcherFollowerThrottle (Kafka's shouldFollowerThrottle): a
// throttled partition that is not caught up is left out of the follower's
// fetches while its quota is exceeded, fetched again once it is not, and
// its bytes recorded; caught up, it is fetched whatever the quota.
func TestFetcherFollowerThrottle(t *testing.T) {
	c := newTestCluster(t, "memory")
	leader := c.addBroker(1, []epochRun{{0, 5}, {0, 5}}, Options{})
	follower := c.addBroker(2, nil, Options{})
	q := &fakeReplicaQuota{}
	q.throttled.Store(true)
	q.exceeded.Store(true)
	var mu sync.Mutex
	fetchesNaming := 0 // fetches naming the partition
	c.mu.Lock()
	c.fetchers[2] = NewFetcherManager(FetcherOptions{
		BrokerID: 2, Logger: quietLogger, MaxWait: 20 * time.Millisecond, Backoff: 2 * time.Millisecond, Quota: q,
		Send: func(ctx context.Context, to int32, req kmsg.Request) (kmsg.Response, error) {
			if f, ok := req.(*kmsg.FetchRequest); ok {
				for _, rt := range f.Topics {
					if len(rt.Partitions) > 0 {
						mu.Lock()
						fetchesNaming++
						mu.Unlock()
					}
				}
			}
			return c.send(ctx, 2, to, req)
		},
	})
	c.t.Cleanup(c.fetchers[2].Close)
	c.mu.Unlock()
	c.elect(1, 1, 1) // 2 is out of the ISR, with an empty log

	// Exceeded: many rounds pass and none fetches the partition.
	waitFor(t, "throttled rounds", func() bool { return q.checks.Load() >= 20 })
	mu.Lock()
	n := fetchesNaming
	mu.Unlock()
	if n != 0 || follower.LogEndOffset() != 0 {
		t.Fatalf("throttled partition fetched %d times, follower at %d", n, follower.LogEndOffset())
	}
	if q.skipped.Load() == 0 {
		t.Fatal("no skip counted")
	}
	// Not exceeded: it catches up and its bytes are recorded.
	q.exceeded.Store(false)
	waitFor(t, "catch-up", func() bool { return follower.LogEndOffset() == leader.LogEndOffset() })
	if got, want := q.recorded.Load(), leader.Log().Size(); got < want {
		t.Fatalf("recorded %d bytes, the log holds %d", got, want)
	}
	c.waitInSync(1)
	waitFor(t, "the follower to see itself caught up", func() bool { return follower.HighWatermark() == leader.LogEndOffset() })
	// Caught up: exceeded again, new records still replicate.
	q.exceeded.Store(true)
	res, err := leader.Append(ctx, batch(-1, 0, -1, 3), -1) // acks=-1: needs the follower
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "in-sync replication", func() bool { return follower.LogEndOffset() > res.LastOffset })
}
