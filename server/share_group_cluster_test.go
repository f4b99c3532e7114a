package server_test

// Share groups (KIP-932) in a 3-broker cluster: the coordinator of a share
// group (the leader of its __consumer_offsets partition, replicated to all
// three) is closed; the new leader replays the group's records, so its
// members heartbeat on at the epochs they had, with the same assignment.

import (
	"fmt"
	"slices"
	"strings"
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

func TestShareGroupClusterFailover(t *testing.T) {
	zk := zktest.Start(t)
	bs := brokertest.StartCluster(t, 3, "segment", zk.Addr(), func(c *config.Config) {
		c.OffsetsTopicReplication = 3
		c.OffsetsTopicPartitions = 3
		c.GroupShare.Enable = true
	})
	var seeds []string
	for _, b := range bs {
		seeds = append(seeds, b.Addr())
	}
	ctx := testCtx(t, 2*time.Minute)
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
	if r, err := kadm.NewClient(cl).CreateTopic(ctx, 4, 3, nil, "sc"); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	const group = "gsc"
	hb := func(member string, epoch int32, topics []string) *kmsg.ShareGroupHeartbeatResponse {
		var r *kmsg.ShareGroupHeartbeatResponse
		waitUntil(t, 60*time.Second, func() bool {
			if r, err = shareHeartbeat(ctx, cl, group, member, epoch, topics); err != nil {
				refresh()
				r = &kmsg.ShareGroupHeartbeatResponse{ErrorCode: kerr.CoordinatorNotAvailable.Code}
				return false
			}
			switch r.ErrorCode {
			case kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code:
				refresh()
				return false
			}
			return true
		}, func() string { return fmt.Sprintf("%s (%v)", errName(r.ErrorCode), err) })
		if r.ErrorCode != 0 {
			t.Fatalf("heartbeat %s: %s", member, errName(r.ErrorCode))
		}
		return r
	}
	ids := []string{shareMemberID(), shareMemberID()}
	epochs := map[string]int32{}
	for _, id := range ids {
		epochs[id] = hb(id, 0, []string{"sc"}).MemberEpoch
	}
	var before kmsg.ShareGroupDescribeResponseGroup
	waitUntil(t, 30*time.Second, func() bool {
		for _, id := range ids {
			epochs[id] = hb(id, epochs[id], nil).MemberEpoch
		}
		var err error
		before, err = shareDescribe(ctx, cl, group)
		return err == nil && coverage(before, 4, 2) == nil
	}, func() string { return "group not settled" })

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
	if err := coord.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("closed coordinator %d", fresp.NodeID)

	for _, id := range ids {
		if r := hb(id, epochs[id], nil); r.MemberEpoch != epochs[id] {
			t.Fatalf("member %s at epoch %d after failover, %d before", id, r.MemberEpoch, epochs[id])
		}
	}
	var after kmsg.ShareGroupDescribeResponseGroup
	waitUntil(t, 30*time.Second, func() bool {
		var err error
		after, err = shareDescribe(ctx, cl, group)
		if err != nil {
			refresh()
			return false
		}
		return after.ErrorCode == 0
	}, func() string { return errName(after.ErrorCode) })
	sortMembers := func(g *kmsg.ShareGroupDescribeResponseGroup) {
		slices.SortFunc(g.Members, func(a, b kmsg.ShareGroupDescribeResponseGroupMember) int {
			return strings.Compare(a.MemberID, b.MemberID)
		})
		for i := range g.Members {
			g.Members[i].ClientHost = "" // the new coordinator saw the same client from the same host; ports may differ
		}
	}
	sortMembers(&before)
	sortMembers(&after)
	if after.GroupEpoch != before.GroupEpoch || fmt.Sprint(after.Members) != fmt.Sprint(before.Members) {
		t.Fatalf("after failover:\n%+v\nbefore:\n%+v", after, before)
	}
}
