package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicZNode reads /brokers/topics/<t> with its adding/removing replicas.
func (tc *testCluster) topicZNode(topic string) fullAssignment {
	tc.t.Helper()
	b, _, err := tc.client.Get("/sluice" + topicPath(topic))
	if err != nil {
		tc.t.Fatal(err)
	}
	fa, err := decodeFullAssignment(topic, b)
	if err != nil {
		tc.t.Fatal(err)
	}
	return fa
}

// joinISR does what a leader does when replica id catches up: it adds id
// to the partition's ISR in ZooKeeper with an ISR change notification.
func (tc *testCluster) joinISR(n *Node, topic string, p, id int32) {
	tc.t.Helper()
	for attempt := 0; ; attempt++ {
		st, v, err := n.ReadPartitionState(topic, p)
		if err != nil {
			tc.t.Fatal(err)
		}
		if slices.Contains(st.ISR, id) {
			return
		}
		st.ISR = append(st.ISR, id)
		_, err = n.WritePartitionState(context.Background(), topic, p, st, v)
		if err == nil {
			return
		}
		if !errors.Is(err, ErrVersionConflict) || attempt > 20 {
			tc.t.Fatal(err)
		}
	}
}

// leaderAndIsrFor returns the partition states of topic-p that broker id
// received in LeaderAndIsr requests, oldest first.
func leaderAndIsrFor(f *fakeNet, id int32, topic string, p int32) []kmsg.LeaderAndISRRequestTopicPartition {
	var out []kmsg.LeaderAndISRRequestTopicPartition
	for _, r := range requestsTo[*kmsg.LeaderAndISRRequest](f, id) {
		for _, ts := range r.TopicStates {
			for _, ps := range ts.PartitionStates {
				if ts.Topic == topic && ps.Partition == p {
					out = append(out, ps)
				}
			}
		}
	}
	return out
}

// stopReplicaDeletes reports whether broker id was told to delete its
// replica of topic-p.
func stopReplicaDeletes(f *fakeNet, id int32, topic string, p int32) bool {
	for _, r := range requestsTo[*kmsg.StopReplicaRequest](f, id) {
		for _, t := range r.Topics {
			for _, ps := range t.PartitionStates {
				if t.Topic == topic && ps.Partition == p && ps.Delete {
					return true
				}
			}
		}
	}
	return false
}

// newReassignCluster starts brokers 1-3, creates topic "t" (3 partitions,
// 3 replicas) on them, then starts broker 4, which holds nothing.
func newReassignCluster(t *testing.T) (*testCluster, [][]int32) {
	tc := newTestCluster(t, 3, nil)
	ctl := tc.controller()
	as := tc.createTopic(ctl, "t", 3, 3)
	tc.start(4)
	waitFor(t, "broker 4 known to the controller", func() bool { return len(tc.cache(4).Brokers()) == 4 })
	return tc, as
}

// TestReassignMovesPartition: Kafka's algorithm, step by step: RS = TRS +
// ORS with adding/removing in the topic znode and LeaderAndIsr to the new
// replica; once it is in the ISR, the leader leaving hands over to a target
// replica, the removed replica is told to delete its log, and the znode
// holds the target alone.
func TestReassignMovesPartition(t *testing.T) {
	tc, as := newReassignCluster(t)
	ctl := tc.controller()
	orig := as[0]
	leaving := orig[0] // the preferred leader, which leads
	target := []int32{4, orig[1], orig[2]}
	tp := TopicPartition{Topic: "t", Partition: 0}

	res, err := ctl.AlterPartitionReassignments(context.Background(), map[TopicPartition][]int32{tp: target})
	if err != nil || res[tp] != nil {
		t.Fatalf("alter: %v %v", res, err)
	}
	fa := tc.topicZNode("t")
	wantRS := append(slices.Clone(target), leaving)
	if !slices.Equal(fa.parts[0], wantRS) || !slices.Equal(fa.adding[0], []int32{4}) || !slices.Equal(fa.removing[0], []int32{leaving}) {
		t.Fatalf("topic znode during the move: parts %v adding %v removing %v; want %v [4] [%d]", fa.parts[0], fa.adding, fa.removing, wantRS, leaving)
	}
	list, err := ctl.ListPartitionReassignments(context.Background(), nil)
	if err != nil || len(list) != 1 || list[0].TopicPartition != tp || !slices.Equal(list[0].Replicas, wantRS) {
		t.Fatalf("list: %+v %v", list, err)
	}
	if _, err := tc.anyNonController(ctl).ListPartitionReassignments(context.Background(), nil); !errors.Is(err, ErrNotController) {
		t.Fatalf("list on a non-controller: %v", err)
	}
	waitFor(t, "LeaderAndIsr naming broker 4 as adding", func() bool {
		for _, ps := range leaderAndIsrFor(tc.net, 4, "t", 0) {
			if slices.Equal(ps.AddingReplicas, []int32{4}) && slices.Equal(ps.Replicas, wantRS) && ps.Leader == leaving {
				return true
			}
		}
		return false
	})
	// The replica leaving may delete its log; one that stays may not.
	if ok, err := tc.nodes[leaving].ReplicaDeletable("t", 0); err != nil || !ok {
		t.Fatalf("removing replica deletable: %v %v", ok, err)
	}
	if ok, err := tc.nodes[orig[1]].ReplicaDeletable("t", 0); err != nil || ok {
		t.Fatalf("staying replica deletable: %v %v", ok, err)
	}
	if st, _ := tc.state("t", 0); st.Leader != leaving || st.LeaderEpoch != 1 {
		t.Fatalf("state during the move %+v: leader %d at epoch 1 wanted", st, leaving)
	}

	tc.joinISR(tc.nodes[leaving], "t", 0, 4)
	waitFor(t, "move completed", func() bool {
		fa := tc.topicZNode("t")
		return slices.Equal(fa.parts[0], target) && len(fa.adding) == 0 && len(fa.removing) == 0
	})
	st, _ := tc.state("t", 0)
	if st.Leader != 4 || slices.Contains(st.ISR, leaving) || len(st.ISR) != 3 {
		t.Fatalf("state after the move %+v: broker 4 leads, %d out of the ISR", st, leaving)
	}
	waitFor(t, "StopReplica(delete) to the removed replica", func() bool { return stopReplicaDeletes(tc.net, leaving, "t", 0) })
	for id := int32(1); id <= 4; id++ {
		waitFor(t, "caches see the new replicas", func() bool {
			pi, _ := tc.cache(id).Partition("t", 0)
			return slices.Equal(pi.Replicas, target) && pi.Leader == 4
		})
	}
	if list, _ := ctl.ListPartitionReassignments(context.Background(), nil); len(list) != 0 {
		t.Fatalf("list after completion: %+v", list)
	}
	// The other partitions never moved.
	if fa := tc.topicZNode("t"); !slices.Equal(fa.parts[1], as[1]) || !slices.Equal(fa.parts[2], as[2]) {
		t.Fatalf("other partitions changed: %v, were %v", fa.parts, as)
	}
}

// TestReassignCancelAndErrors: a cancellation returns the partition to its
// original replicas and deletes the added one; Kafka's errors for bad
// requests.
func TestReassignCancelAndErrors(t *testing.T) {
	tc, as := newReassignCluster(t)
	ctl := tc.controller()
	tp := TopicPartition{Topic: "t", Partition: 1}
	ctx := context.Background()
	huge := make([]int32, 100000)
	for i := range huge {
		huge[i] = int32(i)
	}
	bad := map[TopicPartition][]int32{
		{Topic: "t", Partition: 0}:    {1, 1, 2},
		{Topic: "t", Partition: 2}:    {},
		{Topic: "nope", Partition: 0}: {1, 2, 3},
		{Topic: "t", Partition: 7}:    {1},
	}
	res, err := ctl.AlterPartitionReassignments(ctx, bad)
	if err != nil {
		t.Fatal(err)
	}
	for tp, want := range map[TopicPartition]error{
		{Topic: "t", Partition: 0}: ErrInvalidReplicaAssignment, {Topic: "t", Partition: 2}: ErrInvalidReplicaAssignment,
		{Topic: "nope", Partition: 0}: ErrTopicNotFound, {Topic: "t", Partition: 7}: ErrTopicNotFound,
	} {
		if !errors.Is(res[tp], want) {
			t.Errorf("%s: %v, want %v", tp, res[tp], want)
		}
	}
	for name, target := range map[string][]int32{"dead broker": {1, 2, 9}, "negative": {1, -1, 2}, "huge": huge} {
		res, err := ctl.AlterPartitionReassignments(ctx, map[TopicPartition][]int32{tp: target})
		if err != nil || !errors.Is(res[tp], ErrInvalidReplicaAssignment) {
			t.Errorf("%s: %v %v", name, res, err)
		}
	}
	unknown := TopicPartition{Topic: "nope", Partition: 0}
	res, err = ctl.AlterPartitionReassignments(ctx, map[TopicPartition][]int32{tp: nil, unknown: nil})
	if err != nil || !errors.Is(res[tp], ErrNoReassignmentInProgress) || !errors.Is(res[unknown], ErrNoReassignmentInProgress) {
		t.Fatalf("cancel of nothing: %v %v", res, err)
	}
	if _, err := tc.anyNonController(ctl).AlterPartitionReassignments(ctx, map[TopicPartition][]int32{tp: {1, 2, 3}}); !errors.Is(err, ErrNotController) {
		t.Fatalf("alter on a non-controller: %v", err)
	}
	if fa := tc.topicZNode("t"); !slices.Equal(fa.parts[0], as[0]) || len(fa.adding)+len(fa.removing) != 0 {
		t.Fatalf("refused requests changed the znode: %+v", fa)
	}

	target := []int32{as[1][0], as[1][1], 4}
	if res, err := ctl.AlterPartitionReassignments(ctx, map[TopicPartition][]int32{tp: target}); err != nil || res[tp] != nil {
		t.Fatalf("alter: %v %v", res, err)
	}
	waitFor(t, "LeaderAndIsr to broker 4", func() bool { return len(leaderAndIsrFor(tc.net, 4, "t", 1)) > 0 })
	// Partitions cannot be added while one moves (the move's state would
	// be lost with the znode rewritten).
	if err := tc.nodes[2].AddPartitions(ctx, "t", 4); !errors.Is(err, ErrReassignmentInProgress) {
		t.Fatalf("add partitions during a move: %v", err)
	}
	if res, err := ctl.AlterPartitionReassignments(ctx, map[TopicPartition][]int32{tp: nil}); err != nil || res[tp] != nil {
		t.Fatalf("cancel: %v %v", res, err)
	}
	fa := tc.topicZNode("t")
	if !slices.Equal(fa.parts[1], as[1]) || len(fa.adding)+len(fa.removing) != 0 {
		t.Fatalf("after cancel: %v adding %v removing %v, want %v", fa.parts[1], fa.adding, fa.removing, as[1])
	}
	waitFor(t, "StopReplica(delete) to the cancelled replica", func() bool { return stopReplicaDeletes(tc.net, 4, "t", 1) })
	if st, _ := tc.state("t", 1); st.Leader != as[1][0] || slices.Contains(st.ISR, 4) {
		t.Fatalf("state after cancel: %+v", st)
	}
	if ok, _ := tc.nodes[4].ReplicaDeletable("t", 1); !ok {
		t.Fatal("the cancelled replica may not be deleted")
	}
	if err := tc.nodes[2].AddPartitions(ctx, "t", 4); err != nil {
		t.Fatalf("add partitions after the cancel: %v", err)
	}
}

// TestReassignResumesAfterControllerFailover: the new controller reads the
// move from the topic znode, tells the new replica again and completes it.
func TestReassignResumesAfterControllerFailover(t *testing.T) {
	tc, as := newReassignCluster(t)
	ctl := tc.controller()
	// A partition the controller does not hold, so its replicas survive.
	p := int32(-1)
	for i, rs := range as {
		if !slices.Contains(rs, ctl.BrokerID()) {
			p = int32(i)
		}
	}
	if p < 0 {
		// rf 3 of 3 brokers: every partition is on the controller. Move
		// one whose leader is not the controller, replacing the
		// controller's replica.
		for i, rs := range as {
			if rs[0] != ctl.BrokerID() {
				p = int32(i)
				break
			}
		}
	}
	tp := TopicPartition{Topic: "t", Partition: p}
	target := []int32{}
	for _, r := range as[p] {
		if r != ctl.BrokerID() {
			target = append(target, r)
		}
	}
	target = append(target, 4)
	if res, err := ctl.AlterPartitionReassignments(context.Background(), map[TopicPartition][]int32{tp: target}); err != nil || res[tp] != nil {
		t.Fatalf("alter: %v %v", res, err)
	}
	waitFor(t, "LeaderAndIsr to broker 4", func() bool { return len(leaderAndIsrFor(tc.net, 4, "t", p)) > 0 })
	before := len(leaderAndIsrFor(tc.net, 4, "t", p))
	old := ctl.BrokerID()
	tc.stop(old)
	ctl = tc.controller()
	waitFor(t, "the new controller resends the move", func() bool {
		for _, ps := range leaderAndIsrFor(tc.net, 4, "t", p)[before:] {
			if slices.Contains(ps.AddingReplicas, 4) {
				return true
			}
		}
		return false
	})
	list, err := ctl.ListPartitionReassignments(context.Background(), []TopicPartition{tp, {Topic: "t", Partition: (p + 1) % 3}})
	if err != nil || len(list) != 1 || !slices.Equal(list[0].Adding, []int32{4}) {
		t.Fatalf("list on the new controller: %+v %v", list, err)
	}
	tc.joinISR(ctl, "t", p, 4)
	waitFor(t, "move completed by the new controller", func() bool {
		fa := tc.topicZNode("t")
		return slices.Equal(fa.parts[p], target) && len(fa.adding)+len(fa.removing) == 0
	})
	if st, _ := tc.state("t", p); !slices.Contains(target, st.Leader) || slices.Contains(st.ISR, old) {
		t.Fatalf("state after the move: %+v", st)
	}
}

// TestReassignLeaderDiesMidMove: the leader leaving dies before the new
// replica is in sync; another replica leads, and the move completes when
// the new replica joins the ISR.
func TestReassignLeaderDiesMidMove(t *testing.T) {
	tc, as := newReassignCluster(t)
	ctl := tc.controller()
	p := int32(-1)
	for i, rs := range as {
		if rs[0] != ctl.BrokerID() {
			p = int32(i)
			break
		}
	}
	tp := TopicPartition{Topic: "t", Partition: p}
	leaving := as[p][0]
	target := []int32{as[p][1], as[p][2], 4}
	if res, err := ctl.AlterPartitionReassignments(context.Background(), map[TopicPartition][]int32{tp: target}); err != nil || res[tp] != nil {
		t.Fatalf("alter: %v %v", res, err)
	}
	tc.stop(leaving)
	waitFor(t, "a new leader", func() bool {
		st, _ := tc.state("t", p)
		return st.Leader >= 0 && st.Leader != leaving
	})
	if fa := tc.topicZNode("t"); !slices.Equal(fa.removing[p], []int32{leaving}) {
		t.Fatalf("the move ended early: %+v", fa)
	}
	tc.joinISR(ctl, "t", p, 4)
	waitFor(t, "move completed", func() bool {
		fa := tc.topicZNode("t")
		return slices.Equal(fa.parts[p], target) && len(fa.adding)+len(fa.removing) == 0
	})
}

// TestReassignThroughZnode: /admin/reassign_partitions in Kafka's JSON
// starts moves and goes when they are done; a znode that is not that JSON,
// or asks for a broker twice, is dropped without harm.
func TestReassignThroughZnode(t *testing.T) {
	tc, as := newReassignCluster(t)
	ctl := tc.controller()
	zpath := "/sluice" + reassignPath

	for name, data := range map[string]string{
		"not json":    `{"version":1,"partitions":[`,
		"duplicate":   `{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[4,4,4]}]}`,
		"wrong types": `{"version":1,"partitions":[{"topic":7,"partition":"x","replicas":"y"}]}`,
		"null":        `null`,
	} {
		if _, err := tc.client.Create(zpath, []byte(data), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, name+": znode dropped", func() bool { ok, _, _ := tc.client.Exists(zpath); return !ok })
		if fa := tc.topicZNode("t"); !slices.Equal(fa.parts[0], as[0]) || len(fa.adding) != 0 {
			t.Fatalf("%s: the znode moved a partition: %+v", name, fa)
		}
	}

	target := []int32{as[2][0], as[2][1], 4}
	req, _ := json.Marshal(map[string]any{"version": 1, "partitions": []map[string]any{{"topic": "t", "partition": 2, "replicas": target}}})
	if _, err := tc.client.Create(zpath, req, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "move started", func() bool { return slices.Equal(tc.topicZNode("t").adding[2], []int32{4}) })
	if ok, _, _ := tc.client.Exists(zpath); !ok {
		t.Fatal("the request went before the move completed")
	}
	tc.joinISR(ctl, "t", 2, 4)
	waitFor(t, "move completed and request removed", func() bool {
		ok, _, _ := tc.client.Exists(zpath)
		fa := tc.topicZNode("t")
		return !ok && slices.Equal(fa.parts[2], target) && len(fa.adding)+len(fa.removing) == 0
	})
	// The controller still works.
	tp := TopicPartition{Topic: "t", Partition: 0}
	if res, err := ctl.AlterPartitionReassignments(context.Background(), map[TopicPartition][]int32{tp: nil}); err != nil || !errors.Is(res[tp], ErrNoReassignmentInProgress) {
		t.Fatalf("after the znode requests: %v %v", res, err)
	}
}

// FuzzParseReassignZNode: parseReassignZNode never panics; what it
// accepts names each partition once, and encodes back to a znode that
// parses to the same request.
func FuzzParseReassignZNode(f *testing.F) {
	f.Add([]byte(`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}]}`))
	f.Add([]byte(`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["any","any"]}]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		order, targets, err := parseReassignZNode(data)
		if err != nil {
			if !errors.Is(err, ErrCorruptZnode) {
				t.Fatalf("error %v does not wrap ErrCorruptZnode", err)
			}
			return
		}
		if len(order) != len(targets) {
			t.Fatalf("%d entries, %d partitions", len(order), len(targets))
		}
		o2, t2, err := parseReassignZNode(encodeReassignZNode(order, targets))
		if err != nil || !slices.Equal(o2, order) {
			t.Fatalf("re-parse: %v %v", o2, err)
		}
		for tp, rs := range targets {
			if !slices.Equal(t2[tp], rs) {
				t.Fatalf("%s: %v then %v", tp, rs, t2[tp])
			}
		}
	})
}

// TestReassignBlocksTopicDeletion: a topic queued for deletion refuses
// moves and cancellations (Kafka's maybeTriggerPartitionReassignment), and
// its deletion waits for the move in progress, then goes once it is done.
func TestReassignBlocksTopicDeletion(t *testing.T) {
	tc, as := newReassignCluster(t)
	ctl := tc.controller()
	ctx := context.Background()
	tp := TopicPartition{Topic: "t", Partition: 0}
	if res, err := ctl.AlterPartitionReassignments(ctx, map[TopicPartition][]int32{tp: {as[0][0], as[0][1], 4}}); err != nil || res[tp] != nil {
		t.Fatalf("alter: %v %v", res, err)
	}
	if err := ctl.DeleteTopic(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	other := TopicPartition{Topic: "t", Partition: 1}
	if res, err := ctl.AlterPartitionReassignments(ctx, map[TopicPartition][]int32{other: {4, as[1][1], as[1][2]}}); err != nil || !errors.Is(res[other], ErrTopicNotFound) {
		t.Fatalf("a move of a topic being deleted: %v %v", res, err)
	}
	// Kafka refuses even a cancellation then; the deletion waits for the
	// move to complete.
	if res, err := ctl.AlterPartitionReassignments(ctx, map[TopicPartition][]int32{tp: nil}); err != nil || !errors.Is(res[tp], ErrTopicNotFound) {
		t.Fatalf("cancel: %v %v", res, err)
	}
	if fa := tc.topicZNode("t"); !slices.Equal(fa.adding[0], []int32{4}) {
		t.Fatalf("the move is gone before it completed: %+v", fa)
	}
	tc.joinISR(ctl, "t", 0, 4)
	waitFor(t, "topic deleted after the move", func() bool {
		ok, _, _ := tc.client.Exists("/sluice" + topicPath("t"))
		return !ok
	})
}

// FuzzDecodeFullAssignment: a topic znode never panics the decoder; what
// it accepts has adding and removing replicas among each partition's
// replicas, and encodes back to a znode that decodes the same.
func FuzzDecodeFullAssignment(f *testing.F) {
	f.Add([]byte(`{"version":3,"topic_id":"AAAAAAAAAAAAAAAAAAAAAA","partitions":{"0":[4,2,3,1]},"adding_replicas":{"0":[4]},"removing_replicas":{"0":[1]}}`))
	f.Add([]byte(`{"version":3,"partitions":{"0":[1]},"adding_replicas":{"1":[1]},"removing_replicas":{}}`))
	f.Add([]byte(`{"version":3,"partitions":{"0":[1]},"adding_replicas":{"0":[9]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fa, err := decodeFullAssignment("t", data)
		if err != nil {
			if !errors.Is(err, ErrCorruptZnode) {
				t.Fatalf("error %v does not wrap ErrCorruptZnode", err)
			}
			return
		}
		for _, side := range []map[int32][]int32{fa.adding, fa.removing} {
			for p, rs := range side {
				for _, r := range rs {
					if p < 0 || int(p) >= len(fa.parts) || !slices.Contains(fa.parts[p], r) {
						t.Fatalf("partition %d: %d is not a replica of %v", p, r, fa.parts)
					}
				}
			}
		}
		again, err := decodeFullAssignment("t", encodeFullAssignment(fa))
		if err != nil || again.id != fa.id || len(again.parts) != len(fa.parts) || len(again.adding) != len(fa.adding) || len(again.removing) != len(fa.removing) {
			t.Fatalf("re-decode: %+v %v, was %+v", again, err, fa)
		}
	})
}
