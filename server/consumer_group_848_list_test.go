package server_test

// Both group types in one broker, as operators see them: ListGroups v5
// lists classic and consumer (KIP-848) groups with their type, state and
// protocol type and filters by both; DescribeGroups answers a consumer
// group as Kafka 4.x answers a group that is not classic; the metrics
// count groups, members and rebalances per type.

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/sluice/sluice/broker/brokertest"
)

// listGroups sends ListGroups at version v with the filters and returns
// group -> listed entry.
func listGroups(t *testing.T, ctx context.Context, cl *kgo.Client, v int16, states, types []string) map[string]kmsg.ListGroupsResponseGroup {
	t.Helper()
	req := kmsg.NewPtrListGroupsRequest()
	req.Version, req.StatesFilter, req.TypesFilter = v, states, types
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("list groups v%d: %v", v, err)
	}
	if resp.ErrorCode != 0 {
		t.Fatalf("list groups v%d: %s", v, errName(resp.ErrorCode))
	}
	out := map[string]kmsg.ListGroupsResponseGroup{}
	for _, g := range resp.Groups {
		if _, dup := out[g.Group]; dup {
			t.Errorf("list groups v%d: %s listed twice", v, g.Group)
		}
		out[g.Group] = g
	}
	return out
}

// twoGroupTypes makes a classic group "classic848" holding an offset and
// a consumer group "consumer848" with one member that committed an
// offset (unless commit is false), and returns the consumer group's state
// as ConsumerGroupDescribe shows it.
func twoGroupTypes(t *testing.T, ctx context.Context, cl *kgo.Client, commit bool) string {
	t.Helper()
	adm := kadm.NewClient(cl)
	createTopic(t, adm, "l848", 2, nil)
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "l848", Partition: 0, At: 1, LeaderEpoch: -1})
	if _, err := adm.CommitOffsets(ctx, "classic848", offs); err != nil {
		t.Fatal(err)
	}
	join := heartbeat848(t, ctx, cl, "consumer848", hb848{member: "m1", topics: []string{"l848"}})
	if join.ErrorCode != 0 {
		t.Fatalf("join: %s", errName(join.ErrorCode))
	}
	if code := commit848(t, ctx, cl, "consumer848", "m1", join.MemberEpoch, "l848", 1, 9); commit && code != 0 {
		t.Fatalf("commit: %s", errName(code))
	}
	d, err := describe848(ctx, cl, "consumer848")
	if err != nil || d.ErrorCode != 0 {
		t.Fatalf("consumer group describe: %v %s", err, errName(d.ErrorCode))
	}
	return d.State
}

// TestListGroupsBothTypes runs against Sluice and, for what it shares
// with Kafka, franz-go's kfake as a reference. kfake differs from Kafka
// 4.x in two places, so its run checks only the consumer group's type,
// state and the type filter: it lists a consumer group with an empty
// protocol type (Kafka's ConsumerGroup.protocolType() is "consumer") and
// does not list a group that only holds offsets (Kafka's OffsetCommit
// creates an Empty classic group). Its run skips the consumer group's
// commit: commit848 goes out at kfake's OffsetCommit v10, which wants a
// topic id the helper does not send.
func TestListGroupsBothTypes(t *testing.T) {
	t.Run("broker=sluice", func(t *testing.T) {
		b := brokertest.Start(t, "memory", fastConsumerGroups)
		listGroupsBothTypes(t, b.Addr())
	})
	t.Run("broker=kfake", func(t *testing.T) {
		c, err := kfake.NewCluster(kfake.NumBrokers(1))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		ctx := testCtx(t, 30*time.Second)
		cl := newClient(t, c.ListenAddrs()[0])
		state := twoGroupTypes(t, ctx, cl, false)
		if g, ok := listGroups(t, ctx, cl, 5, nil, nil)["consumer848"]; !ok || g.GroupType != "consumer" || g.GroupState != state {
			t.Errorf("consumer group listed as %+v (present %v), want type consumer, state %s", g, ok, state)
		}
		if got := listGroups(t, ctx, cl, 5, nil, []string{"consumer"}); len(got) != 1 {
			t.Errorf("types consumer: listed %v", keys(got))
		}
		if got := listGroups(t, ctx, cl, 5, nil, []string{"share-ish"}); len(got) != 0 {
			t.Errorf("types unknown: listed %v", keys(got))
		}
	})
}

func listGroupsBothTypes(t *testing.T, addr string) {
	ctx := testCtx(t, 30*time.Second)
	cl := newClient(t, addr)
	state := twoGroupTypes(t, ctx, cl, true)

	all := listGroups(t, ctx, cl, 5, nil, nil)
	if g, ok := all["classic848"]; !ok || g.GroupType != "classic" || g.GroupState != "Empty" || g.ProtocolType != "" {
		t.Errorf("classic group listed as %+v (present %v), want type classic, state Empty, no protocol type", g, ok)
	}
	if g, ok := all["consumer848"]; !ok || g.GroupType != "consumer" || g.GroupState != state || g.ProtocolType != "consumer" {
		t.Errorf("consumer group listed as %+v (present %v), want type consumer, state %s, protocol type consumer", g, ok, state)
	}

	for _, tc := range []struct {
		name          string
		v             int16
		states, types []string
		want          []string
	}{
		{"types consumer", 5, nil, []string{"consumer"}, []string{"consumer848"}},
		{"types CLASSIC", 5, nil, []string{"CLASSIC"}, []string{"classic848"}},
		{"types both", 5, nil, []string{"classic", "consumer"}, []string{"classic848", "consumer848"}},
		{"types unknown", 5, nil, []string{"share-ish"}, nil},
		{"states empty", 5, []string{"empty"}, nil, []string{"classic848"}},
		{"states consumer state", 5, []string{" " + state + " "}, nil, []string{"consumer848"}},
		{"states and types disjoint", 5, []string{"Empty"}, []string{"consumer"}, nil},
		{"v4 states filter", 4, []string{state, "Empty"}, nil, []string{"classic848", "consumer848"}},
		{"v3 lists both", 3, nil, nil, []string{"classic848", "consumer848"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := listGroups(t, ctx, cl, tc.v, tc.states, tc.types)
			if len(got) != len(tc.want) {
				t.Fatalf("listed %v, want %v", keys(got), tc.want)
			}
			for _, w := range tc.want {
				if _, ok := got[w]; !ok {
					t.Fatalf("listed %v, want %v", keys(got), tc.want)
				}
			}
		})
	}

	// kadm's view, as `sluice group list` uses it.
	listed, err := kadm.NewClient(cl).ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g := listed["consumer848"]; g.ProtocolType != "consumer" || g.State != state {
		t.Errorf("kadm lists the consumer group as %+v", g)
	}
}

func keys(m map[string]kmsg.ListGroupsResponseGroup) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestDescribeGroupsConsumerGroup: DescribeGroups (v0-5) on a consumer
// group answers Dead with no error, protocol or members, as Kafka 4.x's
// describeGroups answers a group that is not classic; not the memberless
// classic group that holds the consumer group's offsets.
func TestDescribeGroupsConsumerGroup(t *testing.T) {
	b := brokertest.Start(t, "memory", fastConsumerGroups)
	ctx := testCtx(t, 30*time.Second)
	cl := newClient(t, b.Addr())
	twoGroupTypes(t, ctx, cl, true)
	for _, v := range []int16{0, 5, 6} {
		// kgo sends the highest version both sides serve: pin it.
		pinned := kversion.Stable()
		pinned.SetMaxKeyVersion(int16(kmsg.DescribeGroups), v)
		vcl := newClient(t, b.Addr(), kgo.MaxVersions(pinned))
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Groups = []string{"consumer848", "classic848", "nosuch848"}
		resp, err := req.RequestWith(ctx, vcl)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Version != v {
			t.Fatalf("answered at v%d, want v%d", resp.Version, v)
		}
		if len(resp.Groups) != 3 {
			t.Fatalf("v%d: %d groups described", v, len(resp.Groups))
		}
		cg, classic, none := resp.Groups[0], resp.Groups[1], resp.Groups[2]
		if classic.ErrorCode != 0 || classic.State != "Empty" {
			t.Errorf("v%d classic group: error %s state %q, want Empty", v, errName(classic.ErrorCode), classic.State)
		}
		if v < 6 {
			// Dead with no error, as Kafka below v6.
			for _, g := range []kmsg.DescribeGroupsResponseGroup{cg, none} {
				if g.ErrorCode != 0 || g.State != "Dead" || g.ProtocolType != "" || len(g.Members) != 0 {
					t.Errorf("v%d %s: error %s state %q protocol type %q %d members, want Dead with nothing", v, g.Group, errName(g.ErrorCode), g.State, g.ProtocolType, len(g.Members))
				}
			}
			continue
		}
		// v6 (KIP-1043): GROUP_ID_NOT_FOUND with Kafka's messages.
		for _, c := range []struct {
			g   kmsg.DescribeGroupsResponseGroup
			msg string
		}{{cg, "Group consumer848 is not a classic group."}, {none, "Group nosuch848 not found."}} {
			if c.g.ErrorCode != kerr.GroupIDNotFound.Code || c.g.ErrorMessage == nil || *c.g.ErrorMessage != c.msg {
				t.Errorf("v6 %s: error %s message %v, want GROUP_ID_NOT_FOUND %q", c.g.Group, errName(c.g.ErrorCode), c.g.ErrorMessage, c.msg)
			}
		}
	}
}

// TestMetricsGroupTypes: the group coordinator metrics count groups,
// consumer group states, members and rebalances by group type.
func TestMetricsGroupTypes(t *testing.T) {
	ms := startMetricsServer(t, "memory", fastConsumerGroups)
	ctx := testCtx(t, 30*time.Second)
	cl := newClient(t, ms.addr)
	state := twoGroupTypes(t, ctx, cl, true)
	// A second member joins and leaves: two more group epochs.
	if r := heartbeat848(t, ctx, cl, "consumer848", hb848{member: "m2", topics: []string{"l848"}}); r.ErrorCode != 0 {
		t.Fatalf("join m2: %s", errName(r.ErrorCode))
	}
	if r := heartbeat848(t, ctx, cl, "consumer848", hb848{member: "m2", epoch: -1}); r.ErrorCode != 0 {
		t.Fatalf("leave m2: %s", errName(r.ErrorCode))
	}
	d, err := describe848(ctx, cl, "consumer848")
	if err != nil {
		t.Fatal(err)
	}
	state = d.State

	fams := scrape(t, ms.metrics)
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"kafka_server_group_coordinator_metrics_group_count", map[string]string{"protocol": "classic"}, 1},
		{"kafka_server_group_coordinator_metrics_group_count", map[string]string{"protocol": "consumer"}, 1},
		{"kafka_server_group_coordinator_metrics_consumer_group_count", map[string]string{"state": state}, 1},
		{"kafka_server_group_coordinator_metrics_consumer_group_count", map[string]string{"state": "Dead"}, 0},
		{"sluice_group_coordinator_members", map[string]string{"protocol": "consumer"}, 1},
		{"sluice_group_coordinator_members", map[string]string{"protocol": "classic"}, 0},
		{"kafka_server_group_coordinator_metrics_consumer_group_rebalance_count", nil, float64(d.Epoch)},
		{"kafka_server_group_coordinator_metrics_group_completed_rebalance_count", nil, 0},
		{"kafka_coordinator_group_groupmetadatamanager_numgroups", nil, 1},
		{"kafka_consumergroup_members", map[string]string{"consumergroup": "consumer848"}, 1},
	} {
		if got := mustValue(t, fams, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if d.Epoch != 3 {
		t.Errorf("group epoch %d after join, join, leave; want 3", d.Epoch)
	}

	// A classic group completes a rebalance through SyncGroup.
	cons, err := kgo.NewClient(kgo.SeedBrokers(ms.addr), kgo.ConsumerGroup("classicjoin"), kgo.ConsumeTopics("l848"))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	for i := 0; ; i++ {
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		cons.PollFetches(pctx)
		cancel()
		fams = scrape(t, ms.metrics)
		if mustValue(t, fams, "kafka_server_group_coordinator_metrics_group_completed_rebalance_count", nil) >= 1 {
			break
		}
		if i == 100 {
			t.Fatal("no classic rebalance completed after 100 polls")
		}
	}
	if got := mustValue(t, fams, "sluice_group_coordinator_members", map[string]string{"protocol": "classic"}); got != 1 {
		t.Errorf("classic members %v, want 1", got)
	}
}
