package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
)

// TestShareGroupCLI runs `sluice share-group` in process against a broker
// serving share groups: list, describe (state, members, verbose), delete
// refused while the group has a member and done once it is empty.
func TestShareGroupCLI(t *testing.T) {
	b := brokertest.Start(t, "memory", func(c *config.Config) { c.GroupShare.Enable = true })
	addr := b.Addr()
	sl := func(wantCode int, args ...string) string {
		t.Helper()
		var stdout, stderr strings.Builder
		if code := run(append(args, "--bootstrap-server", addr), &stdout, &stderr); code != wantCode {
			t.Fatalf("sluice %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, wantCode, stdout.String(), stderr.String())
		}
		return stdout.String()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("share-me"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 3, 1, nil, "jobs"); err != nil {
		t.Fatal(err)
	}
	hb := func(member string, epoch int32, topics []string) *kmsg.ShareGroupHeartbeatResponse {
		t.Helper()
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.GroupID, req.MemberID, req.MemberEpoch, req.SubscribedTopicNames = "workers", member, epoch, topics
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("heartbeat %s: %v %+v", member, err, resp)
		}
		return resp
	}
	r := hb("member-a", 0, []string{"jobs"})

	out := sl(0, "share-group", "list")
	if !strings.Contains(out, "GROUP") || !strings.Contains(out, "workers") || !strings.Contains(out, "Stable") {
		t.Fatalf("list:\n%s", out)
	}
	if out := sl(0, "share-group", "list", "--state", "Empty"); strings.Contains(out, "workers") {
		t.Fatalf("list --state Empty:\n%s", out)
	}
	out = sl(0, "share-group", "describe", "workers", "--verbose")
	for _, want := range []string{"COORDINATOR (ID)", "GROUP-EPOCH", "ASSIGNMENT-EPOCH", "Stable", "member-a", "share-me", "jobs:0,1,2", "MEMBER-EPOCH"} {
		if !strings.Contains(out, want) {
			t.Fatalf("describe --verbose lacks %q:\n%s", want, out)
		}
	}
	if out := sl(0, "share-group", "describe", "workers", "--members"); strings.Contains(out, "COORDINATOR") || !strings.Contains(out, "#PARTITIONS") {
		t.Fatalf("describe --members:\n%s", out)
	}
	sl(1, "share-group", "describe", "nope")
	sl(1, "share-group", "delete", "workers")
	hb("member-a", r.MemberEpoch, nil)
	hb("member-a", -1, nil)
	if out := sl(0, "share-group", "describe", "workers"); !strings.Contains(out, "has no active members") || !strings.Contains(out, "Empty") {
		t.Fatalf("describe empty group:\n%s", out)
	}
	if out := sl(0, "share-group", "delete", "workers"); !strings.Contains(out, "Deleted share group workers") {
		t.Fatalf("delete:\n%s", out)
	}
	if out := sl(0, "share-group", "list"); strings.Contains(out, "workers") {
		t.Fatalf("list after delete:\n%s", out)
	}
}
