package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
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

// TestConsumerGroupPage: a consumer group (KIP-848, franz-go with the
// server-side assignor) is shown with its type, assignor, group and
// assignment epochs and each member's epoch, client, host, current and
// target assignment, as ConsumerGroupDescribe answers them (what `sluice
// group describe` prints); the groups list gives each group's type.
func TestConsumerGroupPage(t *testing.T) {
	b := brokertest.Start(t, "segment", func(c *config.Config) {
		c.GroupInitialRebalanceDelay = 0
		c.GroupConsumerMinHeartbeatInterval = 100 * time.Millisecond
		c.GroupConsumerHeartbeatInterval = 200 * time.Millisecond
	})
	a := newAPI(t, b)
	createTopic(t, b.Addr(), "orders", 4)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, id := range []string{"c1", "c2"} {
		c := kclient(t, b.Addr(), kgo.ClientID(id), kgo.ConsumerGroup("cg"), kgo.ConsumeTopics("orders"), kgo.ServerSideBalancer())
		go func() {
			for ctx.Err() == nil {
				c.PollFetches(ctx)
			}
		}()
	}
	// A classic group beside it, with a commit, so that it is listed.
	classic := kclient(t, b.Addr())
	if err := kadm.NewClient(classic).CommitAllOffsets(ctx, "classic-g", kadm.OffsetsFromRecords(kgo.Record{Topic: "orders", Partition: 0, Offset: 0})); err != nil {
		t.Fatal(err)
	}

	type assignment struct {
		Topic      string  `json:"topic"`
		Partitions []int32 `json:"partitions"`
	}
	type member struct {
		MemberID          string       `json:"memberId"`
		ClientID          string       `json:"clientId"`
		ClientHost        string       `json:"clientHost"`
		MemberEpoch       *int32       `json:"memberEpoch"`
		SubscribedTopics  []string     `json:"subscribedTopics"`
		Assignments       []assignment `json:"assignments"`
		TargetAssignments []assignment `json:"targetAssignments"`
	}
	var g struct {
		GroupID         string   `json:"groupId"`
		Type            string   `json:"type"`
		State           string   `json:"state"`
		ProtocolType    string   `json:"protocolType"`
		Protocol        string   `json:"protocol"`
		GroupEpoch      *int32   `json:"groupEpoch"`
		AssignmentEpoch *int32   `json:"assignmentEpoch"`
		Members         []member `json:"members"`
	}
	// Wait until both members hold their targets: 4 partitions, 2 each.
	stable := func() error {
		if g.Type != "consumer" || g.State != "Stable" || g.GroupEpoch == nil || g.AssignmentEpoch == nil || len(g.Members) != 2 {
			return fmt.Errorf("not a stable consumer group of 2: %+v", g)
		}
		seen := map[int32]bool{}
		for _, m := range g.Members {
			if m.MemberEpoch == nil || *m.MemberEpoch != *g.AssignmentEpoch || fmt.Sprint(m.Assignments) != fmt.Sprint(m.TargetAssignments) {
				return fmt.Errorf("member %s not reconciled: %+v", m.MemberID, m)
			}
			for _, as := range m.Assignments {
				for _, p := range as.Partitions {
					seen[p] = true
				}
			}
		}
		if len(seen) != 4 {
			return fmt.Errorf("%d of 4 partitions assigned", len(seen))
		}
		return nil
	}
	var why error
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		g.Members, g.GroupEpoch, g.AssignmentEpoch = nil, nil, nil
		// The members join from their own goroutines: until the first
		// heartbeat reaches the coordinator the group does not exist.
		if code, body := a.do("GET", "/api/groups/cg", "", nil); code == 404 {
			why = fmt.Errorf("not created yet: %s", body)
		} else if code != 200 {
			t.Fatalf("GET /api/groups/cg: %d %s, want 200", code, body)
		} else if err := json.Unmarshal(body, &g); err != nil {
			t.Fatalf("GET /api/groups/cg: decode %s: %v", body, err)
		} else if why = stable(); why == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("group page: %v", why)
		}
	}
	if g.ProtocolType != "consumer" || g.Protocol != "uniform" {
		t.Errorf("protocol %q / %q, want consumer / uniform (the default assignor)", g.ProtocolType, g.Protocol)
	}

	// The page says what ConsumerGroupDescribe says.
	described, err := kadm.NewClient(classic).DescribeConsumerGroups(ctx, "cg")
	if err != nil || described["cg"].Err != nil {
		t.Fatalf("describe: %v %v", err, described["cg"].Err)
	}
	d := described["cg"]
	if d.Epoch != *g.GroupEpoch || d.AssignmentEpoch != *g.AssignmentEpoch {
		t.Errorf("epochs: page %d/%d, ConsumerGroupDescribe %d/%d", *g.GroupEpoch, *g.AssignmentEpoch, d.Epoch, d.AssignmentEpoch)
	}
	clients := map[string]bool{}
	for _, dm := range d.Members {
		i := slices.IndexFunc(g.Members, func(m member) bool { return m.MemberID == dm.MemberID })
		if i < 0 {
			t.Errorf("member %s missing from the page", dm.MemberID)
			continue
		}
		m := g.Members[i]
		clients[m.ClientID] = true
		var want []assignment
		for _, tp := range dm.TargetAssignment.Sorted() {
			want = append(want, assignment{tp.Topic, tp.Partitions})
		}
		if *m.MemberEpoch != dm.MemberEpoch || m.ClientID != dm.ClientID || m.ClientHost != dm.ClientHost || m.ClientHost == "" ||
			fmt.Sprint(m.TargetAssignments) != fmt.Sprint(want) || !slices.Equal(m.SubscribedTopics, []string{"orders"}) {
			t.Errorf("member on the page %+v, described %+v", m, dm)
		}
	}
	if !clients["c1"] || !clients["c2"] {
		t.Errorf("client ids %v, want c1 and c2", clients)
	}

	var list struct {
		Groups []struct {
			GroupID  string `json:"groupId"`
			Type     string `json:"type"`
			State    string `json:"state"`
			Protocol string `json:"protocol"`
			Members  int    `json:"members"`
		} `json:"groups"`
	}
	a.get("/api/groups", 200, &list)
	got := map[string]string{}
	for _, l := range list.Groups {
		got[l.GroupID] = fmt.Sprintf("%s %s %s %d", l.Type, l.State, l.Protocol, l.Members)
	}
	if got["cg"] != "consumer Stable uniform 2" || got["classic-g"] != "classic Empty  0" {
		t.Fatalf("groups list: %v", got)
	}

	// A classic group's page is the classic one: no epochs.
	var cl struct {
		Type       string `json:"type"`
		GroupEpoch *int32 `json:"groupEpoch"`
	}
	a.get("/api/groups/classic-g", 200, &cl)
	if cl.Type != "classic" || cl.GroupEpoch != nil {
		t.Fatalf("classic group: %+v", cl)
	}
}
