package console_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
)

func TestGroupsLag(t *testing.T) {
	b := brokertest.Start(t, "segment", func(c *config.Config) { c.GroupInitialRebalanceDelay = 0 })
	a := newAPI(t, b)
	createTopic(t, b.Addr(), "events", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := kclient(t, b.Addr())
	for i := range 10 {
		if err := p.ProduceSync(ctx, &kgo.Record{Topic: "events", Value: fmt.Appendf(nil, "%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// A group member reads everything and commits the first 4 by hand.
	c := kclient(t, b.Addr(), kgo.ConsumerGroup("g"), kgo.ConsumeTopics("events"), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var recs []*kgo.Record
	for len(recs) < 10 {
		fs := c.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, fs.Records()...)
	}
	if err := c.CommitRecords(ctx, recs[3]); err != nil {
		t.Fatal(err)
	}

	var groups struct {
		Groups []struct {
			GroupID      string `json:"groupId"`
			State        string `json:"state"`
			ProtocolType string `json:"protocolType"`
			Members      int    `json:"members"`
			Lag          int64  `json:"lag"`
		} `json:"groups"`
	}
	a.get("/api/groups", 200, &groups)
	if len(groups.Groups) != 1 || groups.Groups[0].GroupID != "g" || groups.Groups[0].Lag != 6 ||
		groups.Groups[0].Members != 1 || groups.Groups[0].ProtocolType != "consumer" {
		t.Fatalf("groups: %+v", groups)
	}
	var g struct {
		GroupID string `json:"groupId"`
		State   string `json:"state"`
		Members []struct {
			MemberID    string `json:"memberId"`
			ClientID    string `json:"clientId"`
			Assignments []struct {
				Topic      string  `json:"topic"`
				Partitions []int32 `json:"partitions"`
			} `json:"assignments"`
		} `json:"members"`
		Offsets []struct {
			Topic     string `json:"topic"`
			Partition int32  `json:"partition"`
			Committed int64  `json:"committed"`
			EndOffset int64  `json:"endOffset"`
			Lag       int64  `json:"lag"`
		} `json:"offsets"`
		Lag int64 `json:"lag"`
	}
	a.get("/api/groups/g", 200, &g)
	if g.State != "Stable" || len(g.Members) != 1 || len(g.Members[0].Assignments) != 1 || g.Members[0].Assignments[0].Topic != "events" {
		t.Fatalf("group: %+v", g)
	}
	if len(g.Offsets) != 1 || g.Offsets[0].Committed != 4 || g.Offsets[0].EndOffset != 10 || g.Offsets[0].Lag != 6 || g.Lag != 6 {
		t.Fatalf("group offsets: %+v", g.Offsets)
	}
	a.get("/api/groups/nope", 404, nil)
}
