package replication

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/engine"
)

// sessionLeader is a fake leader that keeps one KIP-227 fetch session
// (id 7) for its follower, as the server does: a full Fetch with epoch 0
// creates it, an incremental one is read over the whole session. It
// records every Fetch's session metadata and how many partitions it named.
type sessionLeader struct {
	c *testCluster

	mu      sync.Mutex
	session map[int32]kmsg.FetchRequestTopicPartition // by partition; nil: none
	epoch   int32
	failAt  int // answer the failAt-th Fetch FETCH_SESSION_ID_NOT_FOUND
	seen    []seenFetch
}

type seenFetch struct {
	id, epoch, named int32
}

func (l *sessionLeader) send(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	r, ok := req.(*kmsg.FetchRequest)
	if !ok {
		return l.c.send(ctx, 2, 1, req)
	}
	l.mu.Lock()
	named := int32(0)
	for _, rt := range r.Topics {
		named += int32(len(rt.Partitions))
	}
	l.seen = append(l.seen, seenFetch{r.SessionID, r.SessionEpoch, named})
	if len(l.seen) == l.failAt {
		l.session = nil
		l.mu.Unlock()
		resp := r.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
		return resp, nil
	}
	full := *r
	switch {
	case r.SessionEpoch == 0:
		l.session, l.epoch = map[int32]kmsg.FetchRequestTopicPartition{}, 1
	case l.session == nil || r.SessionID != 7:
		l.mu.Unlock()
		resp := r.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
		return resp, nil
	case r.SessionEpoch != l.epoch:
		l.mu.Unlock()
		resp := r.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = kerr.InvalidFetchSessionEpoch.Code
		return resp, nil
	default:
		l.epoch++
	}
	for _, rt := range r.Topics {
		for _, rp := range rt.Partitions {
			l.session[rp.Partition] = rp
		}
	}
	for _, ft := range r.ForgottenTopics {
		for _, p := range ft.Partitions {
			delete(l.session, p)
		}
	}
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = testID.Topic
	for _, rp := range l.session {
		rt.Partitions = append(rt.Partitions, rp)
	}
	full.Topics = []kmsg.FetchRequestTopic{rt}
	l.mu.Unlock()
	resp, err := l.c.send(ctx, 2, 1, &full)
	if err == nil {
		resp.(*kmsg.FetchResponse).SessionID = 7
	}
	return resp, err
}

func (l *sessionLeader) fetches() []seenFetch {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]seenFetch(nil), l.seen...)
}

// TestFollowerFetchSession: a follower opens a fetch session with its
// leader, then sends incremental Fetches that name its partition only when
// its position moved (idle polls name none), and after a session error
// starts a new session (epoch 0, closing the old id) and keeps
// replicating.
func TestFollowerFetchSession(t *testing.T) {
	c := newTestCluster(t, "memory")
	leader := c.addBroker(1, []epochRun{{0, 3}}, Options{})
	follower := c.addBroker(2, nil, Options{})
	st := c.state(1, 1, 1, 2)
	if err := leader.MakeLeader(st); err != nil {
		t.Fatal(err)
	}
	if err := follower.MakeFollower(st); err != nil {
		t.Fatal(err)
	}
	l := &sessionLeader{c: c, failAt: 6}
	m := NewFetcherManager(FetcherOptions{BrokerID: 2, Logger: quietLogger, MaxWait: 5 * time.Millisecond,
		Backoff: 2 * time.Millisecond,
		Send: func(ctx context.Context, to int32, req kmsg.Request) (kmsg.Response, error) {
			return l.send(ctx, req)
		}})
	t.Cleanup(m.Close)
	m.Add(follower, 1, 1)
	waitFor(t, "the follower to catch up", func() bool { return follower.LogEndOffset() == 3 })
	waitFor(t, "idle polls and the session error", func() bool { return len(l.fetches()) >= 10 })
	if _, err := leader.Append(ctx, batch(-1, 0, -1, 2), 1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the follower to catch up again", func() bool { return follower.LogEndOffset() == 5 })
	m.Remove(follower)

	seen := l.fetches()
	if f := seen[0]; f.id != 0 || f.epoch != 0 || f.named != 1 {
		t.Fatalf("first fetch %+v, want a full one asking for a session", f)
	}
	idle := 0
	for i, f := range seen[1:] {
		prev := seen[i]
		switch {
		case i+1 == l.failAt:
			// After the error: a full fetch closing session 7.
			if f.id != 7 || f.epoch != 0 || f.named != 1 {
				t.Fatalf("fetch %d after the session error: %+v", i+1, f)
			}
		case f.id != 7 || f.epoch != prev.epoch+1:
			t.Fatalf("fetch %d: %+v after %+v", i+1, f, prev)
		case f.named == 0:
			idle++
		}
	}
	if idle == 0 {
		t.Fatalf("no incremental fetch left the unchanged partition out: %+v", seen)
	}
}

// TestFetchSessionForgetsReplacedTopicID: when a partition's topic was
// re-created (a new topic id, same name and index) since the leader's
// session last had it, the next incremental Fetch names it under the new
// id and forgets the old id's partition, which the leader would otherwise
// keep reading and answer with an error, waking every fetch at once.
func TestFetchSessionForgetsReplacedTopicID(t *testing.T) {
	oldID, newID := [16]byte{1}, [16]byte{2}
	p, _ := newPartition(t, openStore(t, "memory"), engine.LogConfig{}, Options{Topic: testID.Topic, TopicID: newID, BrokerID: 2})
	var got *kmsg.FetchRequest
	m := NewFetcherManager(FetcherOptions{BrokerID: 2, Logger: quietLogger, Backoff: time.Millisecond,
		Send: func(ctx context.Context, to int32, req kmsg.Request) (kmsg.Response, error) {
			got = req.(*kmsg.FetchRequest)
			return nil, errors.New("stop here")
		}})
	t.Cleanup(m.Close)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f := &fetcher{m: m, leader: 1, ctx: ctx, cancel: cancel, parts: map[*Partition]*fetchPart{p: {epoch: 1}}}
	k := tp{testID.Topic, testID.Partition}
	f.sess = fetchSession{id: 7, epoch: 3, sent: map[tp]sentPart{k: {topicID: oldID,
		fetchOffset: p.LogEndOffset(), logStart: p.LogStartOffset(), leaderEpoch: 1, maxBytes: m.opts.PartitionMaxBytes}}}
	f.fetchRound()

	if got == nil {
		t.Fatal("no Fetch sent")
	}
	if got.SessionID != 7 || got.SessionEpoch != 3 {
		t.Fatalf("session %d epoch %d, want an incremental Fetch of session 7 at 3", got.SessionID, got.SessionEpoch)
	}
	if len(got.Topics) != 1 || got.Topics[0].TopicID != newID || len(got.Topics[0].Partitions) != 1 ||
		got.Topics[0].Partitions[0].Partition != testID.Partition {
		t.Fatalf("topics %+v, want partition %d under the new id", got.Topics, testID.Partition)
	}
	if len(got.ForgottenTopics) != 1 || got.ForgottenTopics[0].TopicID != oldID ||
		len(got.ForgottenTopics[0].Partitions) != 1 || got.ForgottenTopics[0].Partitions[0] != testID.Partition {
		t.Fatalf("forgotten %+v, want partition %d of the old id", got.ForgottenTopics, testID.Partition)
	}
}
