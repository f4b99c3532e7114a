package server_test

// Share groups (KIP-932), the membership side, through the wire with kmsg
// requests on a franz-go client: members join a 3-partition topic and the
// simple assignor covers every partition, a member leaves, a silent member
// is removed by its session timeout, a restart replays the group from
// __consumer_offsets, a group's share.* configs are honoured and shown,
// and hostile heartbeats get error codes. The same heartbeat scenario runs
// against franz-go's kfake as a reference.

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
)

// fastShareGroups enables share groups, heartbeating every 200 ms and
// expiring members after 2 s.
func fastShareGroups(c *config.Config) {
	c.GroupShare.Enable = true
	c.GroupShare.MinHeartbeatInterval = 100 * time.Millisecond
	c.GroupShare.HeartbeatInterval = 200 * time.Millisecond
	c.GroupShare.MinSessionTimeout = time.Second
	c.GroupShare.SessionTimeout = 2 * time.Second
}

// shareMemberID is a client-made member id, a UUID as Kafka's clients
// make (kfake refuses ids over 36 bytes).
func shareMemberID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func shareHeartbeat(ctx context.Context, cl *kgo.Client, group, member string, epoch int32, topics []string) (*kmsg.ShareGroupHeartbeatResponse, error) {
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.MemberEpoch, req.SubscribedTopicNames = group, member, epoch, topics
	return req.RequestWith(ctx, cl)
}

func shareDescribe(ctx context.Context, cl *kgo.Client, group string) (kmsg.ShareGroupDescribeResponseGroup, error) {
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.GroupIDs = []string{group}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return kmsg.ShareGroupDescribeResponseGroup{}, err
	}
	return resp.Groups[0], nil
}

// shareMembers is a set of members heartbeating by hand.
type shareMembers struct {
	t      *testing.T
	cl     *kgo.Client
	group  string
	topics []string
	epochs map[string]int32
}

// round heartbeats every member once at its epoch; it fails on an error
// code.
func (s *shareMembers) round(ctx context.Context) {
	s.t.Helper()
	for _, m := range slices.Sorted(mapKeys(s.epochs)) {
		r, err := shareHeartbeat(ctx, s.cl, s.group, m, s.epochs[m], nil)
		if err != nil || r.ErrorCode != 0 {
			s.t.Fatalf("heartbeat %s: %v %s", m, err, errName(r.ErrorCode))
		}
		s.epochs[m] = r.MemberEpoch
	}
}

func mapKeys(m map[string]int32) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// coverage checks that g has n members and that every partition of the
// topic (0..parts-1) is held by at least one of them, and by exactly one
// when there are no more members than partitions.
func coverage(g kmsg.ShareGroupDescribeResponseGroup, parts, n int) error {
	if g.ErrorCode != 0 {
		return fmt.Errorf("describe: %s", errName(g.ErrorCode))
	}
	if len(g.Members) != n {
		return fmt.Errorf("%d members, want %d", len(g.Members), n)
	}
	holders := map[int32]int{}
	for _, m := range g.Members {
		if m.MemberEpoch != g.AssignmentEpoch {
			return fmt.Errorf("member %s at epoch %d, assignment epoch %d", m.MemberID, m.MemberEpoch, g.AssignmentEpoch)
		}
		for _, tp := range m.Assignment.TopicPartitions {
			for _, p := range tp.Partitions {
				holders[p]++
			}
		}
	}
	for p := int32(0); p < int32(parts); p++ {
		if holders[p] == 0 {
			return fmt.Errorf("partition %d unassigned: %v", p, holders)
		}
		if n <= parts && holders[p] != 1 {
			return fmt.Errorf("partition %d held by %d members with %d members over %d partitions", p, holders[p], n, parts)
		}
	}
	return nil
}

// until heartbeats every member a round at a time, pausing interval, until
// check passes; at most 100 rounds.
func (s *shareMembers) until(ctx context.Context, interval time.Duration, check func(kmsg.ShareGroupDescribeResponseGroup) error) {
	s.t.Helper()
	var last error
	for range 100 {
		s.round(ctx)
		g, err := shareDescribe(ctx, s.cl, s.group)
		if err != nil {
			s.t.Fatal(err)
		}
		if last = check(g); last == nil {
			return
		}
		time.Sleep(interval)
	}
	s.t.Fatalf("not reached after 100 rounds: %v", last)
}

// runShareScenario: three members join a 3-partition topic and each gets
// one partition; a fourth member makes partitions shared; one leaves; one
// goes silent and is removed by its session timeout while the others keep
// every partition covered.
func runShareScenario(t *testing.T, addr string, interval time.Duration) {
	const group, topic, parts = "sg", "st", 3
	ctx := testCtx(t, 2*time.Minute)
	cl := newClient(t, addr)
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, parts, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	s := &shareMembers{t: t, cl: cl, group: group, topics: []string{topic}, epochs: map[string]int32{}}
	ids := []string{shareMemberID(), shareMemberID(), shareMemberID(), shareMemberID()}
	for _, id := range ids[:3] {
		r, err := shareHeartbeat(ctx, cl, group, id, 0, []string{topic})
		if err != nil || r.ErrorCode != 0 || r.MemberID == nil || *r.MemberID != id || r.Assignment == nil {
			t.Fatalf("join: %v %+v", err, r)
		}
		s.epochs[id] = r.MemberEpoch
	}
	s.until(ctx, interval, func(g kmsg.ShareGroupDescribeResponseGroup) error { return coverage(g, parts, 3) })

	r, err := shareHeartbeat(ctx, cl, group, ids[3], 0, []string{topic})
	if err != nil || r.ErrorCode != 0 {
		t.Fatalf("fourth join: %v %+v", err, r)
	}
	s.epochs[ids[3]] = r.MemberEpoch
	s.until(ctx, interval, func(g kmsg.ShareGroupDescribeResponseGroup) error { return coverage(g, parts, 4) })

	if r, err := shareHeartbeat(ctx, cl, group, ids[0], -1, nil); err != nil || r.ErrorCode != 0 || r.MemberEpoch != -1 {
		t.Fatalf("leave: %v %+v", err, r)
	}
	delete(s.epochs, ids[0])
	s.until(ctx, interval, func(g kmsg.ShareGroupDescribeResponseGroup) error { return coverage(g, parts, 3) })

	// ids[1] goes silent; the others heartbeat until it is gone.
	delete(s.epochs, ids[1])
	s.until(ctx, interval, func(g kmsg.ShareGroupDescribeResponseGroup) error { return coverage(g, parts, 2) })
	if r, err := shareHeartbeat(ctx, cl, group, ids[1], 1, nil); err != nil || r.ErrorCode == 0 {
		t.Fatalf("the silent member heartbeats on: %v %+v", err, r)
	}

	lg := kmsg.NewPtrListGroupsRequest()
	lg.TypesFilter = []string{"share"}
	lresp, err := lg.RequestWith(ctx, cl)
	if err != nil || len(lresp.Groups) != 1 || lresp.Groups[0].Group != group || lresp.Groups[0].GroupType != "share" ||
		lresp.Groups[0].GroupState != "Stable" {
		t.Fatalf("ListGroups types=share: %v %+v", err, lresp)
	}
}

// TestShareGroupScenario runs the heartbeat scenario on Sluice and on kfake.
func TestShareGroupScenario(t *testing.T) {
	t.Parallel() // waits on lock, session and heartbeat timers, not the CPU
	t.Run("broker=sluice", func(t *testing.T) {
		b := brokertest.Start(t, "memory", fastShareGroups)
		runShareScenario(t, b.Addr(), 200*time.Millisecond)
	})
	t.Run("broker=kfake", func(t *testing.T) {
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.BrokerConfigs(map[string]string{
			"group.share.heartbeat.interval.ms": "200",
			"group.share.session.timeout.ms":    "2000",
		}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		runShareScenario(t, c.ListenAddrs()[0], 200*time.Millisecond)
	})
}

// TestShareGroupRestart: a restarted broker replays the share group from
// __consumer_offsets: same epochs and assignment, and the members heartbeat
// on without rejoining.
func TestShareGroupRestart(t *testing.T) {
	dir := t.TempDir()
	b := brokertest.StartIn(t, dir, "segment", fastShareGroups, func(c *config.Config) {
		c.GroupShare.SessionTimeout = 30 * time.Second
		c.GroupShare.MaxSessionTimeout = time.Minute
	})
	ctx := testCtx(t, time.Minute)
	cl := newClient(t, b.Addr())
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 4, 1, nil, "rt"); err != nil {
		t.Fatal(err)
	}
	s := &shareMembers{t: t, cl: cl, group: "rg", epochs: map[string]int32{}}
	for range 2 {
		id := shareMemberID()
		r, err := shareHeartbeat(ctx, cl, "rg", id, 0, []string{"rt"})
		if err != nil || r.ErrorCode != 0 {
			t.Fatalf("join: %v %+v", err, r)
		}
		s.epochs[id] = r.MemberEpoch
	}
	s.until(ctx, 200*time.Millisecond, func(g kmsg.ShareGroupDescribeResponseGroup) error { return coverage(g, 4, 2) })
	before, _ := shareDescribe(ctx, cl, "rg")
	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	b = brokertest.StartIn(t, dir, "segment", fastShareGroups, func(c *config.Config) {
		c.GroupShare.SessionTimeout = 30 * time.Second
		c.GroupShare.MaxSessionTimeout = time.Minute
	})
	cl = newClient(t, b.Addr())
	s.cl = cl
	var after kmsg.ShareGroupDescribeResponseGroup
	for range 100 { // the load of __consumer_offsets may still run
		var err error
		if after, err = shareDescribe(ctx, cl, "rg"); err == nil && after.ErrorCode == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	sortMembers := func(g *kmsg.ShareGroupDescribeResponseGroup) {
		slices.SortFunc(g.Members, func(a, b kmsg.ShareGroupDescribeResponseGroupMember) int {
			return strings.Compare(a.MemberID, b.MemberID)
		})
	}
	sortMembers(&before)
	sortMembers(&after)
	if after.ErrorCode != 0 || after.GroupEpoch != before.GroupEpoch || fmt.Sprint(after.Members) != fmt.Sprint(before.Members) {
		t.Fatalf("after restart:\n%+v\nbefore:\n%+v", after, before)
	}
	epochs := maps2(s.epochs)
	s.round(ctx)
	if fmt.Sprint(epochs) != fmt.Sprint(s.epochs) {
		t.Fatalf("epochs moved across the restart: %v -> %v", epochs, s.epochs)
	}
}

func maps2(m map[string]int32) map[string]int32 {
	out := make(map[string]int32, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// TestShareGroupConfigsWire: share.* configs on a GROUP resource are
// validated as Kafka's, shown by DescribeConfigs and honoured by the
// coordinator (the heartbeat interval members are told; the session
// timeout that removes a silent member).
func TestShareGroupConfigsWire(t *testing.T) {
	b := brokertest.Start(t, "memory", fastShareGroups)
	ctx := testCtx(t, time.Minute)
	cl := newClient(t, b.Addr())
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "ct"); err != nil {
		t.Fatal(err)
	}
	set := func(k, v string) groupOp { return groupOp{kmsg.IncrementalAlterConfigOpSet, k, &v} }
	for _, bad := range []groupOp{
		set("share.record.lock.duration.ms", "1000"), // below group.share.min.record.lock.duration.ms
		set("share.auto.offset.reset", "none"),
		set("share.isolation.level", "serializable"),
		set("share.delivery.count.limit", "1"),
		set("share.heartbeat.interval.ms", "1"), // below the broker's min of 100
	} {
		if c, msg := alterGroup(t, ctx, cl, "cg", false, bad); c != kerr.InvalidConfig.Code {
			t.Fatalf("%s=%s: %s %s, want INVALID_CONFIG", bad.key, *bad.value, errName(c), msg)
		}
	}
	if c, msg := alterGroup(t, ctx, cl, "cg", false, set("share.heartbeat.interval.ms", "300"), set("share.session.timeout.ms", "1500"),
		set("share.record.lock.duration.ms", "20000"), set("share.auto.offset.reset", "earliest"), set("share.isolation.level", "read_committed")); c != 0 {
		t.Fatalf("set: %s %s", errName(c), msg)
	}
	checkGroupConfig(t, ctx, cl, "cg", "share.record.lock.duration.ms", "20000", kmsg.ConfigSource(8))
	code, cfgs := describeGroup(t, ctx, cl, "cg")
	if code != 0 || *cfgs["share.auto.offset.reset"].Value != "earliest" || *cfgs["share.delivery.count.limit"].Value != "5" ||
		cfgs["share.delivery.count.limit"].Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("describe: %s %+v", errName(code), cfgs)
	}
	a, b2 := shareMemberID(), shareMemberID()
	ra, err := shareHeartbeat(ctx, cl, "cg", a, 0, []string{"ct"})
	if err != nil || ra.ErrorCode != 0 || ra.HeartbeatIntervalMillis != 300 {
		t.Fatalf("join: %v %+v, want the group's interval 300", err, ra)
	}
	rb, _ := shareHeartbeat(ctx, cl, "cg", b2, 0, []string{"ct"})
	// a goes silent; b heartbeats until a's 1.5 s session ends (the broker's is 2 s).
	s := &shareMembers{t: t, cl: cl, group: "cg", epochs: map[string]int32{b2: rb.MemberEpoch}}
	s.until(ctx, 300*time.Millisecond, func(g kmsg.ShareGroupDescribeResponseGroup) error { return coverage(g, 1, 1) })
}

// TestShareGroupHostileHeartbeats: malformed or hostile heartbeats are
// answered with Kafka's error codes and leave the broker serving.
func TestShareGroupHostileHeartbeats(t *testing.T) {
	b := brokertest.Start(t, "memory", fastShareGroups)
	ctx := testCtx(t, time.Minute)
	cl := newClient(t, b.Addr())
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "ht"); err != nil {
		t.Fatal(err)
	}
	names := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("missing-topic-%06d", i)
		}
		return out
	}
	long := strings.Repeat("m", 40000)
	cases := []struct {
		name, member string
		epoch        int32
		topics       []string
		want         int16
	}{
		{"empty member id", "", 0, []string{"ht"}, kerr.InvalidRequest.Code},
		{"member id over 32767 bytes", long, 0, []string{"ht"}, kerr.InvalidRequest.Code},
		{"no subscription on join", shareMemberID(), 0, []string{}, kerr.InvalidRequest.Code},
		{"epoch -2", shareMemberID(), -2, nil, kerr.InvalidRequest.Code},
		{"unknown member", shareMemberID(), 7, nil, kerr.GroupIDNotFound.Code},
		{"2000 unknown topics", shareMemberID(), 0, names(2000), 0},
		// Its member record would not fit a batch of __consumer_offsets:
		// the append fails and the member is not admitted.
		{"50000 unknown topics", shareMemberID(), 0, names(50000), kerr.CoordinatorNotAvailable.Code},
	}
	for _, c := range cases {
		r, err := shareHeartbeat(ctx, cl, "hg", c.member, c.epoch, c.topics)
		if err != nil || r.ErrorCode != c.want {
			t.Fatalf("%s: %v %s, want %s", c.name, err, errName(r.ErrorCode), errName(c.want))
		}
		if c.want == 0 && (r.Assignment == nil || len(r.Assignment.TopicPartitions) != 0) {
			t.Fatalf("%s: assignment %+v, want empty", c.name, r.Assignment)
		}
	}
	// Still serving.
	id := shareMemberID()
	if r, err := shareHeartbeat(ctx, cl, "hg", id, 0, []string{"ht"}); err != nil || r.ErrorCode != 0 {
		t.Fatalf("join after the hostile ones: %v %+v", err, r)
	}
}

// TestShareGroupMetrics: the group coordinator metrics count share groups
// by state, their members and their rebalances (epoch bumps), and do not
// count them as classic groups.
func TestShareGroupMetrics(t *testing.T) {
	ms := startMetricsServer(t, "memory", fastShareGroups)
	ctx := testCtx(t, 30*time.Second)
	cl := newClient(t, ms.addr)
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, "mt"); err != nil {
		t.Fatal(err)
	}
	a, b := shareMemberID(), shareMemberID()
	for _, id := range []string{a, b} {
		if r, err := shareHeartbeat(ctx, cl, "msg", id, 0, []string{"mt"}); err != nil || r.ErrorCode != 0 {
			t.Fatalf("join: %v %+v", err, r)
		}
	}
	if r, err := shareHeartbeat(ctx, cl, "msg", b, -1, nil); err != nil || r.ErrorCode != 0 {
		t.Fatalf("leave: %v %+v", err, r)
	}
	d, err := shareDescribe(ctx, cl, "msg")
	if err != nil || d.ErrorCode != 0 {
		t.Fatalf("describe: %v %+v", err, d)
	}
	fams := scrape(t, ms.metrics)
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"kafka_server_group_coordinator_metrics_group_count", map[string]string{"protocol": "share"}, 1},
		{"kafka_server_group_coordinator_metrics_share_group_count", map[string]string{"state": "Stable"}, 1},
		{"kafka_server_group_coordinator_metrics_share_group_count", map[string]string{"state": "Empty"}, 0},
		{"sluice_group_coordinator_members", map[string]string{"protocol": "share"}, 1},
		{"kafka_server_group_coordinator_metrics_share_group_rebalance_count", nil, float64(d.GroupEpoch)},
		{"kafka_coordinator_group_groupmetadatamanager_numgroups", nil, 0},
	} {
		if got := mustValue(t, fams, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if d.GroupEpoch != 3 {
		t.Errorf("group epoch %d after join, join, leave; want 3", d.GroupEpoch)
	}
}
