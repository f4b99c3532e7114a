package server_test

// KIP-848 consumer groups in a 3-broker cluster: the coordinator of a group
// (the leader of its __consumer_offsets partition, replicated to all three)
// is closed; the new leader replays the group's records, so its members
// heartbeat on at the epochs they had and their commit is there.

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/broker"
	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/internal/zktest"
)

func TestConsumerGroup848ClusterFailover(t *testing.T) {
	zk := zktest.Start(t)
	bs := brokertest.StartCluster(t, 3, "segment", zk.Addr(), func(c *config.Config) {
		c.OffsetsTopicReplication = 3
		c.OffsetsTopicPartitions = 3
		c.GroupConsumerSessionTimeout = 45 * time.Second
	})
	var seeds []string
	for _, b := range bs {
		seeds = append(seeds, b.Addr())
	}
	ctx := testCtx(t, 2*time.Minute)
	// cl is replaced by a fresh client after a request fails: kgo keeps a
	// dead coordinator cached for requests it does not retry.
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	refresh := func() {
		cl.Close()
		if cl, err = kgo.NewClient(kgo.SeedBrokers(seeds...)); err != nil {
			t.Fatal(err)
		}
	}
	adm := kadm.NewClient(cl)
	if r, err := adm.CreateTopic(ctx, 6, 3, nil, "c848"); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	const group = "gc848"

	// A heartbeat answered with a coordinator error is sent again (kgo does
	// not retry ConsumerGroupHeartbeat: it carries reconciliation state).
	hb := func(h hb848) *kmsg.ConsumerGroupHeartbeatResponse {
		var r *kmsg.ConsumerGroupHeartbeatResponse
		waitUntil(t, 60*time.Second, func() bool {
			if r, err = tryHeartbeat848(ctx, cl, group, h); err != nil {
				refresh()
				r = &kmsg.ConsumerGroupHeartbeatResponse{ErrorCode: kerr.CoordinatorNotAvailable.Code}
				return false
			}
			switch r.ErrorCode {
			case kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code:
				return false
			}
			return true
		}, func() string { return fmt.Sprintf("%s (%v)", errName(r.ErrorCode), err) })
		return r
	}
	a := hb(hb848{member: "a", topics: []string{"c848"}})
	bb := hb(hb848{member: "b", topics: []string{"c848"}})
	if a.ErrorCode != 0 || bb.ErrorCode != 0 {
		t.Fatalf("joins: %s %s", errName(a.ErrorCode), errName(bb.ErrorCode))
	}
	state := map[string]*kmsg.ConsumerGroupHeartbeatResponse{"a": a, "b": bb}
	owned := map[string][]kmsg.ConsumerGroupHeartbeatRequestTopic{"a": ownedFrom(a.Assignment), "b": ownedFrom(bb.Assignment)}
	beat := func(m string) *kmsg.ConsumerGroupHeartbeatResponse {
		r := hb(hb848{member: m, epoch: state[m].MemberEpoch, owned: owned[m]})
		if r.ErrorCode != 0 {
			t.Fatalf("heartbeat %s: %s", m, errName(r.ErrorCode))
		}
		if r.Assignment != nil {
			owned[m] = ownedFrom(r.Assignment)
		}
		state[m] = r
		return r
	}
	waitUntil(t, 30*time.Second, func() bool {
		beat("a")
		beat("b")
		d, err := describe848(ctx, cl, group)
		return err == nil && assignmentComplete(d, "c848", 6, 2) == nil
	}, func() string { return "group not stable" })
	if got := commit848(t, ctx, cl, group, "a", state["a"].MemberEpoch, "c848", 55, 9); got != 0 {
		t.Fatalf("commit: %s", errName(got))
	}

	// Close the coordinator.
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey = group
	fresp, ferr := fc.RequestWith(ctx, cl)
	if ferr != nil || fresp.ErrorCode != 0 {
		t.Fatalf("find coordinator: %v %v", ferr, fresp)
	}
	var coord *broker.Broker
	for i, b := range bs {
		if int32(i+1) == fresp.NodeID {
			coord = b
		}
	}
	if coord == nil {
		t.Fatalf("coordinator %d is not one of ours", fresp.NodeID)
	}
	epochs := map[string]int32{"a": state["a"].MemberEpoch, "b": state["b"].MemberEpoch}
	if err := coord.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("closed coordinator %d", fresp.NodeID)

	for _, m := range []string{"a", "b"} {
		if r := beat(m); r.MemberEpoch != epochs[m] {
			t.Fatalf("member %s at epoch %d after failover, %d before", m, r.MemberEpoch, epochs[m])
		}
	}
	member := "a"
	var code int16
	var off int64
	waitUntil(t, 30*time.Second, func() bool {
		code, off = fetch848(t, ctx, cl, group, &member, epochs["a"], "c848")
		if code == kerr.NotCoordinator.Code || code == kerr.CoordinatorNotAvailable.Code {
			refresh()
			return false
		}
		return code != kerr.NotCoordinator.Code && code != kerr.CoordinatorLoadInProgress.Code
	}, func() string { return errName(code) })
	if code != 0 || off != 55 {
		t.Fatalf("commit after failover: %s offset %d, want 55", errName(code), off)
	}
}
