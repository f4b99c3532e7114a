package replication

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/engine"
)

// fakeRemote is a RemoteLogAux over a fixed remote state, recording what
// it was asked.
type fakeRemote struct {
	aux RemoteAuxState
	mu  sync.Mutex
	got []int64 // the localStart of each call
}

func (r *fakeRemote) RemoteAuxState(ctx context.Context, topic string, partition int32, localStart int64) (RemoteAuxState, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, localStart)
	if localStart != r.aux.NextOffset {
		return RemoteAuxState{}, errors.New("fake: no remote segment ends there")
	}
	return r.aux, nil
}

// tieredSend is the leader's side of a tiered topic over the fake
// transport: a follower fetch below the leader's local log start (and at
// or above remoteStart) is answered OFFSET_MOVED_TO_TIERED_STORAGE, as
// server.movedToTiered does, and ListOffsets -4 the local log start.
func tieredSend(c *testCluster, from int32, remoteStart int64, listed *[]int64) func(ctx context.Context, to int32, req kmsg.Request) (kmsg.Response, error) {
	return func(ctx context.Context, to int32, req kmsg.Request) (kmsg.Response, error) {
		leader := c.part(to)
		switch r := req.(type) {
		case *kmsg.FetchRequest:
			kr, err := c.send(ctx, from, to, req)
			if err != nil {
				return nil, err
			}
			resp := kr.(*kmsg.FetchResponse)
			for i, rt := range r.Topics {
				for j, rp := range rt.Partitions {
					sp := &resp.Topics[i].Partitions[j]
					if sp.ErrorCode == kerr.OffsetOutOfRange.Code && rp.FetchOffset < leader.LogStartOffset() && rp.FetchOffset >= remoteStart {
						sp.ErrorCode = kerr.OffsetMovedToTieredStorage.Code
					}
				}
			}
			return resp, nil
		case *kmsg.ListOffsetsRequest:
			resp := r.ResponseKind().(*kmsg.ListOffsetsResponse)
			for _, rt := range r.Topics {
				st := kmsg.NewListOffsetsResponseTopic()
				st.Topic = rt.Topic
				for _, rp := range rt.Partitions {
					sp := kmsg.NewListOffsetsResponseTopicPartition()
					sp.Partition = rp.Partition
					if rp.Timestamp != listEarliestLocal || r.Version < 8 {
						sp.ErrorCode = kerr.InvalidRequest.Code
					} else {
						c.mu.Lock()
						*listed = append(*listed, leader.LogStartOffset())
						c.mu.Unlock()
						sp.Offset, sp.LeaderEpoch = leader.LogStartOffset(), leader.LeaderEpoch()
					}
					st.Partitions = append(st.Partitions, sp)
				}
				resp.Topics = append(resp.Topics, st)
			}
			return resp, nil
		}
		return c.send(ctx, from, to, req)
	}
}

// addRawBroker is testCluster.addBroker with an empty log that is not
// wrapped (truncLog hides the backend's optional interfaces).
func addRawBroker(c *testCluster, id int32) *Partition {
	c.t.Helper()
	l, err := openStore(c.t, c.backend).CreateLog(testID, engine.LogConfig{})
	if err != nil {
		c.t.Fatal(err)
	}
	p, err := NewPartition(l, Options{Topic: testID.Topic, Partition: testID.Partition, BrokerID: id, Now: c.clock.Now, Logger: quietLogger,
		AlterISR: func(ctx context.Context, topic string, partition int32, s LeaderAndIsr) (int32, error) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.zkVersion++
			return c.zkVersion, nil
		}})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { p.Close() })
	c.mu.Lock()
	c.parts[id], c.logs[id] = p, &truncLog{Log: l}
	c.oflePerBroker[id] = &atomic.Int64{}
	c.mu.Unlock()
	return p
}

// TestFollowerRebuildsFromRemoteTier (KIP-405, Kafka's
// ReplicaFetcherTierStateMachine): a follower that fell below the
// leader's local log start of a tiered partition is answered
// OFFSET_MOVED_TO_TIERED_STORAGE, asks the leader's earliest local offset
// (ListOffsets -4), restores the epoch history and the producer snapshot
// the remote tier keeps for that offset, and fetches from there. Elected
// leader, it knows the idempotent producer that wrote only below the
// local start: a duplicate is answered as one, a gap in sequence refused.
// Before, the follower restarted at the local start with no producer
// state and took both.
func TestFollowerRebuildsFromRemoteTier(t *testing.T) {
	for _, backend := range []string{"segment", "memory"} {
		t.Run("backend="+backend, func(t *testing.T) {
			c := newTestCluster(t, backend)
			leader := addRawBroker(c, 1)
			follower := addRawBroker(c, 2)
			remote, listed := &fakeRemote{}, new([]int64)
			tieredFollower(c, remote, listed)

			// The follower is away while the leader writes offsets 0-7
			// (producer 7: sequences 0-4), tiers them and deletes them
			// locally.
			c.setDown(2, true)
			c.elect(1, 1, 1)
			if _, err := leader.Append(ctx, batch(7, 0, 0, 5), 1); err != nil {
				t.Fatal(err)
			}
			if _, err := leader.Append(ctx, batch(-1, 0, -1, 3), 1); err != nil {
				t.Fatal(err)
			}
			remote.aux = RemoteAuxState{
				NextOffset:       8,
				Epochs:           []engine.EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 1, StartOffset: 0}},
				ProducerSnapshot: encodeSnapshot(leader.producers),
			}
			if _, err := leader.Append(ctx, batch(-1, 0, -1, 2), 1); err != nil {
				t.Fatal(err)
			}
			if err := leader.Log().DeleteBefore(8); err != nil {
				t.Fatal(err)
			}

			c.setDown(2, false)
			waitFor(t, "the follower to catch up from the leader's local start", func() bool {
				return follower.LogEndOffset() == 10
			})
			if got := follower.LogStartOffset(); got != 8 {
				t.Fatalf("follower log start %d, want the leader's local start 8", got)
			}
			c.mu.Lock()
			gotListed := slices.Clone(*listed)
			c.mu.Unlock()
			remote.mu.Lock()
			gotAsked := slices.Clone(remote.got)
			remote.mu.Unlock()
			if len(gotListed) == 0 || gotListed[0] != 8 || len(gotAsked) == 0 || gotAsked[0] != 8 {
				t.Fatalf("ListOffsets -4 answered %v, remote asked for %v; want 8 first", gotListed, gotAsked)
			}
			if got, want := epochsOf(follower), epochsOf(leader); !slices.Equal(got, want) {
				t.Fatalf("follower epochs %v, leader's %v", got, want)
			}

			// The follower leads: producer 7's state came from the remote
			// snapshot.
			c.elect(2, 2, 2)
			res, err := follower.Append(ctx, batch(7, 0, 0, 5), 1)
			if err != nil || res.BaseOffset != 0 {
				t.Fatalf("duplicate of producer 7's first batch: base %d, %v; want the original offset 0", res.BaseOffset, err)
			}
			if _, err := follower.Append(ctx, batch(7, 0, 9, 1), 1); !errors.Is(err, ErrOutOfOrderSequence) {
				t.Fatalf("producer 7 sequence 9 after 4: %v, want ErrOutOfOrderSequence", err)
			}
			if _, err := follower.Append(ctx, batch(7, 0, 5, 1), 1); err != nil {
				t.Fatalf("producer 7 sequence 5: %v", err)
			}
		})
	}
}

// TestFollowerKeepsLeaderLogStartBelowLocal (KIP-405): the leader of a
// tiered partition keeps its log start offset below its local log start
// (records deleted by DeleteRecords while the remote tier still holds
// them). A follower rebuilt from the remote tier takes that log start from
// the leader's OFFSET_MOVED_TO_TIERED_STORAGE answer; a later raise on the
// leader reaches it through the fetch answers' log start, which it
// checkpoints without cutting or restarting its local log; it answers it
// once it leads.
func TestFollowerKeepsLeaderLogStartBelowLocal(t *testing.T) {
	c := newTestCluster(t, "segment")
	leader := addRawBroker(c, 1)
	follower := addRawBroker(c, 2)
	remote, listed := &fakeRemote{}, new([]int64)
	tieredFollower(c, remote, listed)

	c.setDown(2, true)
	c.elect(1, 1, 1)
	for i := 0; i < 4; i++ {
		if _, err := leader.Append(ctx, batch(-1, 0, -1, 2), 1); err != nil {
			t.Fatal(err)
		}
	}
	remote.aux = RemoteAuxState{NextOffset: 6, Epochs: []engine.EpochEntry{{Epoch: 1, StartOffset: 0}}}
	// Local retention of what is remote, then DeleteRecords below the
	// local start: the log start stays below it.
	if err := leader.DeleteLocalBefore(6); err != nil {
		t.Fatal(err)
	}
	if err := leader.RaiseLogStart(2); err != nil {
		t.Fatal(err)
	}
	if got, local := leader.LogStart(), leader.LogStartOffset(); got != 2 || local != 6 {
		t.Fatalf("leader log start %d, local %d; want 2 and 6", got, local)
	}

	c.setDown(2, false)
	waitFor(t, "the follower to rebuild and catch up", func() bool {
		return follower.LogEndOffset() == 8 && follower.LogStartOffset() == 6
	})
	waitFor(t, "the follower to take the leader's log start", func() bool { return follower.LogStart() == 2 })

	// The leader raises its log start, still below both local starts.
	if err := leader.RaiseLogStart(4); err != nil {
		t.Fatal(err)
	}
	if _, err := leader.Append(ctx, batch(-1, 0, -1, 1), 1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the follower to follow the leader's log start to 4", func() bool {
		return follower.LogStart() == 4 && follower.LogEndOffset() == 9
	})
	if got := follower.LogStartOffset(); got != 6 {
		t.Fatalf("follower local log start %d after following a log start below it, want 6 (not cut)", got)
	}
	remote.mu.Lock()
	asked := len(remote.got)
	remote.mu.Unlock()
	if asked != 1 {
		t.Fatalf("follower rebuilt %d times, want once", asked)
	}

	// The follower leads and answers the log start.
	c.elect(2, 2, 2)
	if got := follower.LogStart(); got != 4 {
		t.Fatalf("new leader's log start %d, want 4", got)
	}
}

// lostStartLog is a segment log whose log start offset was lost (as a
// damaged log-start-offset-checkpoint leaves it) and not settled.
type lostStartLog struct {
	engine.Log
	logStarter
}

func (lostStartLog) LogStartUnknown() bool { return true }

// TestUnknownLogStartNotFollowed: a leader whose log lost its log start
// offset (segment.Log.LogStartUnknown: a damaged checkpoint the remote log
// manager has not settled yet) answers its followers' fetches with no log
// start (-1), not its local start, which may lie above records the remote
// tier holds: a follower keeps its own log start below it. An out-of-range
// answer still carries the local start, for a follower to restart at. A
// leader whose log start is known answers it, below its local start.
func TestUnknownLogStartNotFollowed(t *testing.T) {
	for _, lost := range []bool{false, true} {
		t.Run(fmt.Sprintf("lost=%v", lost), func(t *testing.T) {
			l, err := openStore(t, "segment").CreateLog(testID, engine.LogConfig{})
			if err != nil {
				t.Fatal(err)
			}
			var log engine.Log = l
			if lost {
				log = lostStartLog{l, l.(logStarter)}
			}
			p, err := NewPartition(log, Options{Topic: testID.Topic, Partition: testID.Partition, BrokerID: 1, Logger: quietLogger})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			if err := p.MakeLeader(LeaderAndIsr{Leader: 1, LeaderEpoch: 1, ISR: []int32{1}, Replicas: []int32{1, 2}}); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 4; i++ {
				if _, err := p.Append(ctx, batch(-1, 0, -1, 2), 1); err != nil {
					t.Fatal(err)
				}
			}
			if err := p.DeleteLocalBefore(6); err != nil {
				t.Fatal(err)
			}
			if err := p.RaiseLogStart(2); err != nil {
				t.Fatal(err)
			}
			want := int64(2)
			if lost {
				want = -1
			}
			res, err := p.HandleReplicaFetch(2, 1, 8, 1<<20, time.Now())
			if err != nil || res.LogStartOffset != want {
				t.Fatalf("fetch answer: log start %d, %v; want %d", res.LogStartOffset, err, want)
			}
			res.Records.Release()
			res, err = p.HandleReplicaFetch(2, 1, 3, 1<<20, time.Now())
			if !errors.Is(err, engine.ErrOffsetOutOfRange) || res.LogStartOffset != p.LogStart() {
				t.Fatalf("fetch below the local start: log start %d, %v; want %d and out of range", res.LogStartOffset, err, p.LogStart())
			}
		})
	}
}

// tieredFollower gives broker 2 of c a fetcher that rebuilds from remote
// (the leader answering through tieredSend, which records in listed the
// offsets the follower asked the remote tier for).
func tieredFollower(c *testCluster, remote *fakeRemote, listed *[]int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fetchers[2] = NewFetcherManager(FetcherOptions{
		BrokerID: 2, Logger: quietLogger, MaxWait: 20 * time.Millisecond, Backoff: 2 * time.Millisecond,
		Send: tieredSend(c, 2, 0, listed), RemoteLog: remote,
	})
	c.t.Cleanup(c.fetchers[2].Close)
}
