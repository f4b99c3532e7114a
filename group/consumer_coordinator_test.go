package group

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/group/consumer"
)

// fakeTopics is a TopicSource tests change under a lock.
type fakeTopics struct {
	mu     sync.Mutex
	topics map[string]TopicInfo
}

func newFakeTopics(parts map[string]int32) *fakeTopics {
	f := &fakeTopics{topics: map[string]TopicInfo{}}
	for name, n := range parts {
		f.set(name, n)
	}
	return f
}

func (f *fakeTopics) set(name string, n int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var id [16]byte
	copy(id[:], name)
	f.topics[name] = TopicInfo{Name: name, ID: id, Partitions: n}
}

func (f *fakeTopics) Topic(name string) (TopicInfo, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ti, ok := f.topics[name]
	return ti, ok
}

func (f *fakeTopics) TopicNames() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for n := range f.topics {
		out = append(out, n)
	}
	return out
}

// cgHeartbeat sends one ConsumerGroupHeartbeat v1.
func (e *env) cgHeartbeat(group, member string, epoch int32, topics []string, owned []kmsg.ConsumerGroupHeartbeatRequestTopic, rebalanceMs int32) *kmsg.ConsumerGroupHeartbeatResponse {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch = group, member, epoch
	req.SubscribedTopicNames, req.Topics = topics, owned
	req.RebalanceTimeoutMillis = -1
	if epoch == 0 {
		req.RebalanceTimeoutMillis = rebalanceMs
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	}
	return do[*kmsg.ConsumerGroupHeartbeatResponse](e, req)
}

func ownedOfResp(a *kmsg.ConsumerGroupHeartbeatResponseAssignment) []kmsg.ConsumerGroupHeartbeatRequestTopic {
	out := []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if a != nil {
		for _, t := range a.Topics {
			out = append(out, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: t.TopicID, Partitions: t.Partitions})
		}
	}
	return out
}

func partsOf(o []kmsg.ConsumerGroupHeartbeatRequestTopic) int {
	n := 0
	for _, t := range o {
		n += len(t.Partitions)
	}
	return n
}

func newConsumerEnv(t *testing.T, topics *fakeTopics, tweak func(*Options)) *env {
	return newEnv(t, func(o *Options) {
		o.Topics = topics
		o.ConsumerSessionTimeout = 45 * time.Second
		if tweak != nil {
			tweak(o)
		}
	})
}

// TestConsumerRebalanceTimeout: a member that does not revoke what the new
// target takes from it within its rebalance timeout is removed, though it
// keeps heartbeating; the other member then gets everything.
func TestConsumerRebalanceTimeout(t *testing.T) {
	e := newConsumerEnv(t, newFakeTopics(map[string]int32{"t": 4}), nil)
	a := e.cgHeartbeat("g", "a", 0, []string{"t"}, nil, 5000)
	if a.ErrorCode != 0 || partsOf(ownedOfResp(a.Assignment)) != 4 {
		t.Fatalf("join a: %d, %d partitions", a.ErrorCode, partsOf(ownedOfResp(a.Assignment)))
	}
	aOwned := ownedOfResp(a.Assignment)
	b := e.cgHeartbeat("g", "b", 0, []string{"t"}, nil, 5000)
	if b.ErrorCode != 0 || partsOf(ownedOfResp(b.Assignment)) != 0 {
		t.Fatalf("join b: %d, %d partitions (a still holds them)", b.ErrorCode, partsOf(ownedOfResp(b.Assignment)))
	}
	// a learns it must give up two partitions, and never does.
	r := e.cgHeartbeat("g", "a", a.MemberEpoch, nil, aOwned, 0)
	if r.ErrorCode != 0 || r.MemberEpoch != a.MemberEpoch || partsOf(ownedOfResp(r.Assignment)) != 2 {
		t.Fatalf("a asked to revoke: %d epoch %d, %d partitions", r.ErrorCode, r.MemberEpoch, partsOf(ownedOfResp(r.Assignment)))
	}
	for range 6 {
		e.clock.Advance(time.Second)
		if r := e.cgHeartbeat("g", "a", a.MemberEpoch, nil, aOwned, 0); r.ErrorCode != 0 {
			if r.ErrorCode != kerr.UnknownMemberID.Code {
				t.Fatalf("a after its rebalance timeout: %d", r.ErrorCode)
			}
			break
		}
	}
	if r := e.cgHeartbeat("g", "a", a.MemberEpoch, nil, aOwned, 0); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("a past its rebalance timeout: code %d, want UNKNOWN_MEMBER_ID", r.ErrorCode)
	}
	rb := e.cgHeartbeat("g", "b", b.MemberEpoch, nil, []kmsg.ConsumerGroupHeartbeatRequestTopic{}, 0)
	if rb.ErrorCode != 0 || partsOf(ownedOfResp(rb.Assignment)) != 4 {
		t.Fatalf("b after a was removed: %d, %d partitions", rb.ErrorCode, partsOf(ownedOfResp(rb.Assignment)))
	}
}

// TestConsumerSessionTimeout: a silent member is removed when its session
// times out, not before; the group epoch moves.
func TestConsumerSessionTimeout(t *testing.T) {
	e := newConsumerEnv(t, newFakeTopics(map[string]int32{"t": 2}), func(o *Options) { o.ConsumerSessionTimeout = 10 * time.Second })
	a := e.cgHeartbeat("g", "a", 0, []string{"t"}, nil, 5000)
	if a.ErrorCode != 0 {
		t.Fatalf("join: %d", a.ErrorCode)
	}
	describe := func() kmsg.ConsumerGroupDescribeResponseGroup {
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Version = 1
		req.Groups = []string{"g"}
		return do[*kmsg.ConsumerGroupDescribeResponse](e, req).Groups[0]
	}
	e.clock.Advance(9 * time.Second)
	if d := describe(); len(d.Members) != 1 {
		t.Fatalf("%d members before the session timeout", len(d.Members))
	}
	e.clock.Advance(2 * time.Second)
	d := describe()
	if len(d.Members) != 0 || d.State != "Empty" || d.Epoch != a.MemberEpoch+1 {
		t.Fatalf("after the session timeout: %d members, state %s, epoch %d", len(d.Members), d.State, d.Epoch)
	}
}

// TestConsumerPersistFailure: when the records of a heartbeat cannot be
// appended, the answer is the append's error and the group is unchanged.
func TestConsumerPersistFailure(t *testing.T) {
	var fail sync.Mutex
	failing := false
	e := newConsumerEnv(t, newFakeTopics(map[string]int32{"t": 2}), func(o *Options) {
		o.PersistConsumer = func(ctx context.Context, g string, recs []consumer.Record) error {
			fail.Lock()
			defer fail.Unlock()
			if failing {
				return errors.New("disk on fire")
			}
			return nil
		}
	})
	fail.Lock()
	failing = true
	fail.Unlock()
	if r := e.cgHeartbeat("g", "a", 0, []string{"t"}, nil, 5000); r.ErrorCode == 0 {
		t.Fatal("join answered without its records")
	}
	fail.Lock()
	failing = false
	fail.Unlock()
	a := e.cgHeartbeat("g", "a", 0, []string{"t"}, nil, 5000)
	if a.ErrorCode != 0 || a.MemberEpoch != 1 {
		t.Fatalf("join after the failure: %d epoch %d, want epoch 1 (the failed join left nothing)", a.ErrorCode, a.MemberEpoch)
	}
}

// TestConsumerReplayAfterRestart: a coordinator restarted over the same
// __consumer_offsets log has the same group epoch, target and members.
func TestConsumerReplayAfterRestart(t *testing.T) {
	topics := newFakeTopics(map[string]int32{"t": 6})
	e := newConsumerEnv(t, topics, nil)
	a := e.cgHeartbeat("g", "a", 0, []string{"t"}, nil, 5000)
	b := e.cgHeartbeat("g", "b", 0, []string{"t"}, nil, 5000)
	// a revokes what b gets; b then takes it.
	ra := e.cgHeartbeat("g", "a", a.MemberEpoch, nil, ownedOfResp(a.Assignment), 0)
	ra = e.cgHeartbeat("g", "a", ra.MemberEpoch, nil, ownedOfResp(ra.Assignment), 0)
	rb := e.cgHeartbeat("g", "b", b.MemberEpoch, nil, []kmsg.ConsumerGroupHeartbeatRequestTopic{}, 0)
	describe := func() string {
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Version = 1
		req.Groups = []string{"g"}
		g := do[*kmsg.ConsumerGroupDescribeResponse](e, req).Groups[0]
		s := fmt.Sprintf("epoch %d/%d:", g.Epoch, g.AssignmentEpoch)
		for _, m := range g.Members {
			s += fmt.Sprintf(" %s@%d %v->%v", m.MemberID, m.MemberEpoch, m.Assignment.TopicPartitions, m.TargetAssignment.TopicPartitions)
		}
		return s
	}
	before := describe()
	e.restart()
	if after := describe(); after != before {
		t.Fatalf("after restart:\n%s\nbefore:\n%s", after, before)
	}
	if r := e.cgHeartbeat("g", "b", rb.MemberEpoch, nil, ownedOfResp(rb.Assignment), 0); r.ErrorCode != 0 || r.MemberEpoch != rb.MemberEpoch {
		t.Fatalf("b after restart: %d epoch %d, want %d", r.ErrorCode, r.MemberEpoch, rb.MemberEpoch)
	}
}

// TestConsumerOffsetsRetention: offsets of a topic a consumer group's
// member subscribes to outlive offsets.retention.minutes, as Kafka's; the
// group's other offsets expire by commit time.
func TestConsumerOffsetsRetention(t *testing.T) {
	e := newConsumerEnv(t, newFakeTopics(map[string]int32{"t": 1, "old": 1}), func(o *Options) {
		o.OffsetsRetention = time.Hour
		o.ConsumerSessionTimeout = 100 * time.Hour
	})
	a := e.cgHeartbeat("g", "a", 0, []string{"t"}, nil, 5000)
	commit := func(topic string) int16 {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version = 9
		req.Group, req.MemberID, req.Generation = "g", "a", a.MemberEpoch
		req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: topic, Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 5}}}}
		return do[*kmsg.OffsetCommitResponse](e, req).Topics[0].Partitions[0].ErrorCode
	}
	if commit("t") != 0 || commit("old") != 0 {
		t.Fatal("commits refused")
	}
	e.clock.Advance(2 * time.Hour)
	if _, err := e.c.ExpireOffsets(); err != nil {
		t.Fatal(err)
	}
	if got := e.fetch("g", "t", 0); got != 5 {
		t.Fatalf("subscribed topic's offset %d after the retention, want 5", got)
	}
	if got := e.fetch("g", "old", 0); got != -1 {
		t.Fatalf("unsubscribed topic's offset %d after the retention, want expired", got)
	}
}

// TestConsumerGroupMaxSize: group.consumer.max.size refuses a new member
// (GROUP_MAX_SIZE_REACHED) and keeps serving the ones in.
func TestConsumerGroupMaxSize(t *testing.T) {
	e := newConsumerEnv(t, newFakeTopics(map[string]int32{"t": 2}), func(o *Options) { o.ConsumerMaxSize = 1 })
	a := e.cgHeartbeat("g", "a", 0, []string{"t"}, nil, 5000)
	if a.ErrorCode != 0 {
		t.Fatalf("first member: %d", a.ErrorCode)
	}
	if r := e.cgHeartbeat("g", "b", 0, []string{"t"}, nil, 5000); r.ErrorCode != kerr.GroupMaxSizeReached.Code {
		t.Fatalf("second member: code %d, want GROUP_MAX_SIZE_REACHED", r.ErrorCode)
	}
	if r := e.cgHeartbeat("g", "a", a.MemberEpoch, nil, ownedOfResp(a.Assignment), 0); r.ErrorCode != 0 {
		t.Fatalf("member in the full group: %d", r.ErrorCode)
	}
	// An unknown member at any epoch meets the full group first, as
	// Kafka's throwIfConsumerGroupIsFull precedes the member lookup.
	if r := e.cgHeartbeat("g", "stranger", 3, nil, nil, 0); r.ErrorCode != kerr.GroupMaxSizeReached.Code {
		t.Fatalf("unknown member at epoch 3 into a full group: code %d, want GROUP_MAX_SIZE_REACHED", r.ErrorCode)
	}
}
