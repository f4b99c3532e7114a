package console_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
)

// TestShareGroupPages: a share group (KIP-932) shows in the group list with
// its state, protocol type share, assignor and members, and its page shows
// each member's assignment (DescribeGroups alone would call it Dead).
func TestShareGroupPages(t *testing.T) {
	b := brokertest.Start(t, "memory", func(c *config.Config) { c.GroupShare.Enable = true })
	a := newAPI(t, b)
	createTopic(t, b.Addr(), "jobs", 2)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := kclient(t, b.Addr())
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.SubscribedTopicNames = "workers", "member-1", []string{"jobs"}
	if resp, err := req.RequestWith(ctx, cl); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("join: %v %+v", err, resp)
	}
	var groups struct {
		Groups []struct {
			GroupID      string `json:"groupId"`
			State        string `json:"state"`
			ProtocolType string `json:"protocolType"`
			Protocol     string `json:"protocol"`
			Members      int    `json:"members"`
		} `json:"groups"`
	}
	a.get("/api/groups", 200, &groups)
	if len(groups.Groups) != 1 || groups.Groups[0].GroupID != "workers" || groups.Groups[0].State != "Stable" ||
		groups.Groups[0].ProtocolType != "share" || groups.Groups[0].Protocol != "simple" || groups.Groups[0].Members != 1 {
		t.Fatalf("groups: %+v", groups)
	}
	var g struct {
		State   string `json:"state"`
		Members []struct {
			MemberID    string `json:"memberId"`
			Assignments []struct {
				Topic      string  `json:"topic"`
				Partitions []int32 `json:"partitions"`
			} `json:"assignments"`
		} `json:"members"`
	}
	a.get("/api/groups/workers", 200, &g)
	if g.State != "Stable" || len(g.Members) != 1 || g.Members[0].MemberID != "member-1" || len(g.Members[0].Assignments) != 1 ||
		g.Members[0].Assignments[0].Topic != "jobs" || len(g.Members[0].Assignments[0].Partitions) != 2 {
		t.Fatalf("group page: %+v", g)
	}
}
