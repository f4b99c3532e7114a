package server_test

// Online migration between classic and consumer (KIP-848) groups, with
// franz-go clients on both protocols (group.consumer.migration.policy):
// a classic group upgraded member by member, classic members inside a
// consumer group, the downgrade when the last member of the consumer
// protocol leaves, the policies, the classic members' records replayed by
// a restart, and hostile classic metadata.
//
// No kfake reference here, unlike the other KIP-848 scenarios: kfake does
// not migrate. Its ConsumerGroupHeartbeat answers GROUP_ID_NOT_FOUND to a
// member joining a classic group that has members, and its JoinGroup
// refuses a classic member into a consumer group, so every scenario below
// would stop at its first step there.

import (
	"context"
	"fmt"
	"sort"
	"sync"
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

// migrationBroker starts a broker with fast consumer groups, classic groups
// that rebalance at once, and policy (Kafka's default when "").
func migrationBroker(t *testing.T, policy string, more ...func(*config.Config)) *broker.Broker {
	t.Helper()
	return brokertest.Start(t, "segment", append([]func(*config.Config){fastConsumerGroups, func(c *config.Config) {
		c.GroupInitialRebalanceDelay = 0
		c.GroupMinSessionTimeout = time.Second
		if policy != "" {
			c.GroupConsumerMigrationPolicy = policy
		}
	}}, more...)...)
}

// migMember is one group consumer, classic or of the consumer protocol,
// that counts each record it gets in seen ("partition/offset" -> count).
type migMember struct {
	name string
	cl   *kgo.Client
	stop context.CancelFunc
	done chan struct{}
}

func startMigMember(t *testing.T, addr, name, group, topic string, next bool, seen *sync.Map) *migMember {
	t.Helper()
	opts := []kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.ClientID(name),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200 * time.Millisecond),
		kgo.AutoCommitInterval(200 * time.Millisecond),
		kgo.SessionTimeout(6 * time.Second),
		kgo.HeartbeatInterval(300 * time.Millisecond),
		kgo.RebalanceTimeout(20 * time.Second),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
	}
	if next {
		opts = append(opts, kgo.ServerSideBalancer())
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &migMember{name: name, cl: cl, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			fs.EachRecord(func(r *kgo.Record) {
				v, _ := seen.LoadOrStore(fmt.Sprintf("%d/%d", r.Partition, r.Offset), new(int))
				seenMu.Lock()
				*v.(*int)++
				seenMu.Unlock()
			})
		}
	}()
	t.Cleanup(func() { m.close(context.Background()) })
	return m
}

var seenMu sync.Mutex

// close stops polling, commits what was polled and leaves. Idempotent.
func (m *migMember) close(ctx context.Context) {
	if m.stop == nil {
		return
	}
	m.stop()
	m.stop = nil
	<-m.done
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_ = m.cl.CommitUncommittedOffsets(cctx)
	m.cl.Close()
}

// boundedProducer keeps every partition of topic busy (one record per
// partition every 20 ms, at most n rounds) until stopped.
type boundedProducer struct {
	cl   *kgo.Client
	stop context.CancelFunc
	wg   sync.WaitGroup
}

func startBoundedProducer(t *testing.T, addr, topic string, parts int32, rounds int) *boundedProducer {
	p := &boundedProducer{cl: newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))}
	ctx, cancel := context.WithCancel(context.Background())
	p.stop = cancel
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for i := 0; i < rounds && ctx.Err() == nil; i++ {
			for q := int32(0); q < parts; q++ {
				p.cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: q, Value: []byte("v")}, nil)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	t.Cleanup(func() { p.stop(); p.wg.Wait() })
	return p
}

// finish stops producing, flushes and returns the end offsets of topic.
func (p *boundedProducer) finish(t *testing.T, ctx context.Context, adm *kadm.Client, topic string) kadm.ListedOffsets {
	t.Helper()
	p.stop()
	p.wg.Wait()
	if err := p.cl.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	return ends
}

// waitConsumed waits until seen holds every record below ends.
func waitConsumed(t *testing.T, seen *sync.Map, ends kadm.ListedOffsets) {
	t.Helper()
	total := int64(0)
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
	count := func() (n int64) {
		seen.Range(func(any, any) bool { n++; return true })
		return n
	}
	waitUntil(t, 90*time.Second, func() bool { return count() == total },
		func() string { return fmt.Sprintf("consumed %d distinct records of %d", count(), total) })
}

// checkCommitted checks that group's commits on topic reach ends.
func checkCommitted(t *testing.T, ctx context.Context, adm *kadm.Client, group, topic string, ends kadm.ListedOffsets) {
	t.Helper()
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	ends.Each(func(o kadm.ListedOffset) {
		c, ok := committed.Lookup(topic, o.Partition)
		if !ok || c.At != o.Offset {
			missing = append(missing, fmt.Sprintf("p%d committed %d end %d", o.Partition, c.At, o.Offset))
		}
	})
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Fatalf("commits do not reach the ends: %v", missing)
	}
}

// waitStable848 waits until ConsumerGroupDescribe shows n members holding
// a complete, unique assignment of topic's parts partitions, and returns
// the description.
func waitStable848(t *testing.T, ctx context.Context, cl *kgo.Client, group, topic string, parts, n int) kmsg.ConsumerGroupDescribeResponseGroup {
	t.Helper()
	var g kmsg.ConsumerGroupDescribeResponseGroup
	var why error
	waitUntil(t, 60*time.Second, func() bool {
		var err error
		if g, err = describe848(ctx, cl, group); err != nil {
			why = err
			return false
		}
		why = assignmentComplete(g, topic, parts, n)
		return why == nil
	}, func() string { return fmt.Sprint(why) })
	return g
}

// memberTypes counts the described members by MemberType (0 classic, 1
// consumer).
func memberTypes(g kmsg.ConsumerGroupDescribeResponseGroup) (classic, next int) {
	for _, m := range g.Members {
		switch m.MemberType {
		case 0:
			classic++
		case 1:
			next++
		}
	}
	return classic, next
}

// waitClassicStable waits until DescribeGroups shows group as a Stable
// classic group of n members and returns it.
func waitClassicStable(t *testing.T, ctx context.Context, adm *kadm.Client, group string, n int) kadm.DescribedGroup {
	t.Helper()
	var dg kadm.DescribedGroup
	waitUntil(t, 60*time.Second, func() bool {
		d, err := adm.DescribeGroups(ctx, group)
		if err != nil {
			return false
		}
		dg = d[group]
		return dg.Err == nil && dg.State == "Stable" && len(dg.Members) == n
	}, func() string {
		return fmt.Sprintf("classic group: state %q, %d members, err %v", dg.State, len(dg.Members), dg.Err)
	})
	return dg
}

// TestConsumerGroupMigrationUpgrade: a classic group of three franz-go
// members over 12 partitions is upgraded member by member to the consumer
// protocol while records flow: after each restart the group is a consumer
// group with a complete, unique assignment across both kinds of members;
// the committed offsets survive the conversion; nothing is lost.
func TestConsumerGroupMigrationUpgrade(t *testing.T) {
	t.Parallel()
	const (
		group, topic = "gmig-up", "tmig-up"
		parts        = 12
	)
	b := migrationBroker(t, "")
	ctx := testCtx(t, 4*time.Minute)
	admCl := newClient(t, b.Addr())
	adm := kadm.NewClient(admCl)
	createTopic(t, adm, topic, parts, nil)
	prod := startBoundedProducer(t, b.Addr(), topic, parts, 500)

	var seen sync.Map
	ms := make([]*migMember, 3)
	for i := range ms {
		ms[i] = startMigMember(t, b.Addr(), fmt.Sprintf("classic-%d", i), group, topic, false, &seen)
	}
	waitClassicStable(t, ctx, adm, group, 3)
	// Let commits land before the first restart.
	var before kadm.OffsetResponses
	waitUntil(t, 30*time.Second, func() bool {
		var err error
		before, err = adm.FetchOffsets(ctx, group)
		n := 0
		before.Each(func(o kadm.OffsetResponse) {
			if o.At > 0 {
				n++
			}
		})
		return err == nil && n == parts
	}, func() string { return "the classic group did not commit every partition" })

	for i := range ms {
		ms[i].close(ctx)
		ms[i] = startMigMember(t, b.Addr(), fmt.Sprintf("next-%d", i), group, topic, true, &seen)
		// The closed classic member left; the other classic members are
		// still there and the new member joined.
		d := waitStable848(t, ctx, admCl, group, topic, parts, 3)
		classic, next := memberTypes(d)
		t.Logf("after restarting member %d: consumer group at epoch %d, %d classic and %d consumer members", i, d.Epoch, classic, next)
		if classic != 2-i || next != i+1 {
			t.Fatalf("members: %d classic, %d consumer", classic, next)
		}
		if i == 0 {
			// The commits of the classic group are the consumer group's.
			after, err := adm.FetchOffsets(ctx, group)
			if err != nil {
				t.Fatal(err)
			}
			before.Each(func(o kadm.OffsetResponse) {
				a, ok := after.Lookup(o.Topic, o.Partition)
				if !ok || a.At < o.At {
					t.Errorf("p%d: committed %d before the upgrade, %d after", o.Partition, o.At, a.At)
				}
			})
		}
	}
	// All three on the consumer protocol now (the classic ones left).
	d := waitStable848(t, ctx, admCl, group, topic, parts, 3)
	if classic, next := memberTypes(d); classic != 0 || next != 3 {
		t.Fatalf("after the upgrade: %d classic and %d consumer members", classic, next)
	}

	ends := prod.finish(t, ctx, adm, topic)
	waitConsumed(t, &seen, ends)
	for _, m := range ms {
		m.close(ctx)
	}
	checkCommitted(t, ctx, adm, group, topic, ends)
}

// TestConsumerGroupMigrationClassicJoins: a classic franz-go member joins
// a consumer group of two consumer-protocol members and gets its share of
// the same target assignment: the three hold a complete, unique assignment
// and every record is consumed; when it leaves, the other two take its
// partitions.
func TestConsumerGroupMigrationClassicJoins(t *testing.T) {
	t.Parallel()
	const (
		group, topic = "gmig-join", "tmig-join"
		parts        = 12
	)
	b := migrationBroker(t, "")
	ctx := testCtx(t, 3*time.Minute)
	admCl := newClient(t, b.Addr())
	adm := kadm.NewClient(admCl)
	createTopic(t, adm, topic, parts, nil)
	prod := startBoundedProducer(t, b.Addr(), topic, parts, 400)

	var seen sync.Map
	n1 := startMigMember(t, b.Addr(), "next-1", group, topic, true, &seen)
	n2 := startMigMember(t, b.Addr(), "next-2", group, topic, true, &seen)
	waitStable848(t, ctx, admCl, group, topic, parts, 2)
	c := startMigMember(t, b.Addr(), "classic", group, topic, false, &seen)
	d := waitStable848(t, ctx, admCl, group, topic, parts, 3)
	classic, next := memberTypes(d)
	if classic != 1 || next != 2 {
		t.Fatalf("%d classic and %d consumer members", classic, next)
	}
	for _, m := range d.Members {
		if m.MemberType == 0 && len(flatten(m.Assignment, topic)) == 0 {
			t.Fatalf("the classic member holds nothing: %+v", d.Members)
		}
	}
	// It stays there through another member's arrival.
	n3 := startMigMember(t, b.Addr(), "next-3", group, topic, true, &seen)
	waitStable848(t, ctx, admCl, group, topic, parts, 4)
	c.close(ctx)
	waitStable848(t, ctx, admCl, group, topic, parts, 3)

	ends := prod.finish(t, ctx, adm, topic)
	waitConsumed(t, &seen, ends)
	for _, m := range []*migMember{n1, n2, n3} {
		m.close(ctx)
	}
	checkCommitted(t, ctx, adm, group, topic, ends)
}

// TestConsumerGroupMigrationDowngrade: when the last consumer-protocol
// member leaves a consumer group whose other members are classic, the group
// becomes a classic group again and rebalances; the classic members then
// share every partition and nothing is lost.
func TestConsumerGroupMigrationDowngrade(t *testing.T) {
	t.Parallel()
	const (
		group, topic = "gmig-down", "tmig-down"
		parts        = 12
	)
	b := migrationBroker(t, "")
	ctx := testCtx(t, 3*time.Minute)
	admCl := newClient(t, b.Addr())
	adm := kadm.NewClient(admCl)
	createTopic(t, adm, topic, parts, nil)
	prod := startBoundedProducer(t, b.Addr(), topic, parts, 400)

	var seen sync.Map
	n := startMigMember(t, b.Addr(), "next", group, topic, true, &seen)
	waitStable848(t, ctx, admCl, group, topic, parts, 1)
	c1 := startMigMember(t, b.Addr(), "classic-1", group, topic, false, &seen)
	c2 := startMigMember(t, b.Addr(), "classic-2", group, topic, false, &seen)
	waitStable848(t, ctx, admCl, group, topic, parts, 3)

	n.close(ctx)
	dg := waitClassicStable(t, ctx, adm, group, 2)
	if dg.Protocol == "" || dg.ProtocolType != "consumer" {
		t.Fatalf("downgraded group: protocol type %q, protocol %q", dg.ProtocolType, dg.Protocol)
	}
	owner := map[int32]string{}
	waitUntil(t, 30*time.Second, func() bool {
		d, err := adm.DescribeGroups(ctx, group)
		if err != nil {
			return false
		}
		clear(owner)
		for _, m := range d[group].Members {
			ca, ok := m.Assigned.AsConsumer()
			if !ok {
				return false
			}
			for _, tp := range ca.Topics {
				for _, p := range tp.Partitions {
					if _, dup := owner[p]; dup {
						t.Fatalf("partition %d assigned twice", p)
					}
					owner[p] = m.MemberID
				}
			}
		}
		return len(owner) == parts
	}, func() string { return fmt.Sprintf("%d of %d partitions assigned", len(owner), parts) })
	if r, err := describe848(ctx, admCl, group); err != nil || r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("ConsumerGroupDescribe of the downgraded group: %v %s", err, errName(r.ErrorCode))
	}

	ends := prod.finish(t, ctx, adm, topic)
	waitConsumed(t, &seen, ends)
	c1.close(ctx)
	c2.close(ctx)
	checkCommitted(t, ctx, adm, group, topic, ends)
}

// joinClassic sends one raw JoinGroup v9 of a classic consumer subscribed
// to topics, with metadata md when non-nil.
func joinClassic(ctx context.Context, cl *kgo.Client, group, member string, topics []string, md []byte) (*kmsg.JoinGroupResponse, error) {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.MemberID, req.ProtocolType = group, member, "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, 10000
	if md == nil {
		sub := kmsg.NewConsumerMemberMetadata()
		sub.Version, sub.Topics = 3, topics
		md = sub.AppendTo(nil)
	}
	req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: md}}
	return req.RequestWith(ctx, cl)
}

// TestConsumerGroupMigrationPolicy: group.consumer.migration.policy decides
// whether a ConsumerGroupHeartbeat upgrades a classic group (else
// GROUP_ID_NOT_FOUND, as Kafka) and whether the last consumer-protocol
// member's leave downgrades the group; classic members are served in a
// consumer group under every policy, as in Kafka.
func TestConsumerGroupMigrationPolicy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		policy             string
		upgrade, downgrade bool
	}{
		{"bidirectional", true, true},
		{"upgrade", true, false},
		{"downgrade", false, true},
		{"disabled", false, false},
	} {
		t.Run("policy="+tc.policy, func(t *testing.T) {
			b := migrationBroker(t, tc.policy)
			ctx := testCtx(t, 60*time.Second)
			cl := newClient(t, b.Addr())
			adm := kadm.NewClient(cl)
			createTopic(t, adm, "tpol", 4, nil)

			// Upgrade: a classic group with one member, then a consumer
			// heartbeat joining it.
			var seen sync.Map
			startMigMember(t, b.Addr(), "classic", "gpol-up", "tpol", false, &seen)
			waitClassicStable(t, ctx, adm, "gpol-up", 1)
			r := heartbeat848(t, ctx, cl, "gpol-up", hb848{member: "n", topics: []string{"tpol"}})
			switch {
			case tc.upgrade && r.ErrorCode != 0:
				t.Fatalf("upgrade refused: %s", errName(r.ErrorCode))
			case !tc.upgrade && r.ErrorCode != kerr.GroupIDNotFound.Code:
				t.Fatalf("upgrade under %s: %s, want GROUP_ID_NOT_FOUND", tc.policy, errName(r.ErrorCode))
			}
			if tc.upgrade {
				d, err := describe848(ctx, cl, "gpol-up")
				if err != nil || d.ErrorCode != 0 || len(d.Members) != 2 {
					t.Fatalf("after the upgrade: %v %+v", err, d)
				}
			}

			// Downgrade: a consumer group of one consumer member and one
			// classic member; the consumer member leaves.
			const g = "gpol-down"
			j := heartbeat848(t, ctx, cl, g, hb848{member: "n", topics: []string{"tpol"}})
			if j.ErrorCode != 0 {
				t.Fatalf("join: %s", errName(j.ErrorCode))
			}
			jr, err := joinClassic(ctx, cl, g, "", []string{"tpol"}, nil)
			if err != nil || jr.ErrorCode != kerr.MemberIDRequired.Code {
				t.Fatalf("classic join: %v %+v", err, jr)
			}
			jr, err = joinClassic(ctx, cl, g, jr.MemberID, []string{"tpol"}, nil)
			if err != nil || jr.ErrorCode != 0 || jr.LeaderID != "" || jr.Protocol == nil || *jr.Protocol != "range" {
				t.Fatalf("classic join into a consumer group: %v %+v", err, jr)
			}
			if l := heartbeat848(t, ctx, cl, g, hb848{member: "n", epoch: -1}); l.ErrorCode != 0 {
				t.Fatalf("leave: %s", errName(l.ErrorCode))
			}
			d, err := describe848(ctx, cl, g)
			if err != nil {
				t.Fatal(err)
			}
			dg, err := adm.DescribeGroups(ctx, g)
			if err != nil {
				t.Fatal(err)
			}
			if tc.downgrade {
				if d.ErrorCode != kerr.GroupIDNotFound.Code || len(dg[g].Members) != 1 || dg[g].Members[0].MemberID != jr.MemberID {
					t.Fatalf("not downgraded: describe %s, classic members %+v", errName(d.ErrorCode), dg[g].Members)
				}
			} else if d.ErrorCode != 0 || len(d.Members) != 1 || d.Members[0].MemberType != 0 {
				t.Fatalf("downgraded under %s: describe %s %+v", tc.policy, errName(d.ErrorCode), d.Members)
			}
		})
	}
}

// TestConsumerGroupMigrationClassicWire: a classic member of a consumer
// group at the wire: its generation is its member epoch; SyncGroup gives
// its partitions; Heartbeat says REBALANCE_IN_PROGRESS once the group
// epoch moves; OffsetCommit with its generation (before v9) is accepted,
// with another one ILLEGAL_GENERATION; its record (with its classic
// metadata) survives a restart; malformed classic metadata gets an error
// code, never a panic; LeaveGroup removes it.
func TestConsumerGroupMigrationClassicWire(t *testing.T) {
	dir := t.TempDir()
	slow := func(c *config.Config) {
		c.GroupConsumerSessionTimeout = 45 * time.Second
		c.GroupInitialRebalanceDelay = 0
		c.GroupMinSessionTimeout = time.Second
	}
	b := brokertest.StartIn(t, dir, "segment", slow)
	ctx := testCtx(t, 90*time.Second)
	cl := newClient(t, b.Addr())
	createTopic(t, kadm.NewClient(cl), "tw", 4, nil)
	const group = "gmig-wire"

	j := heartbeat848(t, ctx, cl, group, hb848{member: "n", topics: []string{"tw"}})
	if j.ErrorCode != 0 {
		t.Fatalf("join: %s", errName(j.ErrorCode))
	}

	// Hostile classic metadata: an error code, and the broker serves on.
	for name, md := range map[string][]byte{
		"truncated":     {0, 1, 0, 0, 0, 1},
		"negative":      {0xff, 0xff, 0, 0, 0, 0},
		"huge array":    {0, 0, 0x7f, 0xff, 0xff, 0xff},
		"version only":  {0, 0},
		"empty":         {},
		"garbage bytes": []byte("not a subscription at all"),
	} {
		r, err := joinClassic(ctx, cl, group, "hostile-"+name, []string{"tw"}, md)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if r.ErrorCode == 0 {
			t.Fatalf("%s: malformed metadata accepted", name)
		}
	}
	emptyProtos := kmsg.NewPtrJoinGroupRequest()
	emptyProtos.Group, emptyProtos.MemberID, emptyProtos.ProtocolType = group, "x", "consumer"
	emptyProtos.SessionTimeoutMillis, emptyProtos.RebalanceTimeoutMillis = 10000, 10000
	if r, err := emptyProtos.RequestWith(ctx, cl); err != nil || r.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("join without protocols: %v %+v", err, r)
	}
	if d, err := describe848(ctx, cl, group); err != nil || len(d.Members) != 1 {
		t.Fatalf("hostile joins changed the group: %v %+v", err, d.Members)
	}

	jr, err := joinClassic(ctx, cl, group, "c1", []string{"tw"}, nil)
	if err != nil || jr.ErrorCode != 0 {
		t.Fatalf("classic join: %v %+v", err, jr)
	}
	gen := jr.Generation
	sync1 := func(gen int32) *kmsg.SyncGroupResponse {
		req := kmsg.NewPtrSyncGroupRequest()
		req.Group, req.MemberID, req.Generation = group, "c1", gen
		pt, p := "consumer", "range"
		req.ProtocolType, req.Protocol = &pt, &p
		r, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	hb := func(gen int32) int16 {
		req := kmsg.NewPtrHeartbeatRequest()
		req.Group, req.MemberID, req.Generation = group, "c1", gen
		r, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return r.ErrorCode
	}
	if s := sync1(gen + 1); s.ErrorCode != kerr.IllegalGeneration.Code {
		t.Fatalf("sync at a wrong generation: %s", errName(s.ErrorCode))
	}
	s := sync1(gen)
	if s.ErrorCode != 0 {
		t.Fatalf("sync: %s", errName(s.ErrorCode))
	}
	var asg kmsg.ConsumerMemberAssignment
	if err := asg.ReadFrom(s.MemberAssignment); err != nil {
		t.Fatalf("assignment: %v", err)
	}
	t.Logf("classic member at generation %d holds %+v", gen, asg.Topics)

	commit := func(gen int32) int16 {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.SetVersion(8)
		req.Group, req.MemberID, req.Generation = group, "c1", gen
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "tw"
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 0, 5
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		r, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return r.Topics[0].Partitions[0].ErrorCode
	}
	if got := commit(gen); got != 0 {
		t.Fatalf("classic commit v8: %s", errName(got))
	}
	if got := commit(gen + 7); got != kerr.IllegalGeneration.Code {
		t.Fatalf("classic commit at a wrong generation: %s", errName(got))
	}

	// Reconcile both members so the heartbeat settles.
	owned := ownedFrom(j.Assignment)
	epoch := j.MemberEpoch
	waitUntil(t, 20*time.Second, func() bool {
		r := heartbeat848(t, ctx, cl, group, hb848{member: "n", epoch: epoch, owned: owned})
		if r.ErrorCode != 0 {
			t.Fatalf("heartbeat: %s", errName(r.ErrorCode))
		}
		epoch = r.MemberEpoch
		if r.Assignment != nil {
			owned = ownedFrom(r.Assignment)
		}
		if code := hb(gen); code == kerr.RebalanceInProgress.Code {
			// Rejoin with what it owns (it owns nothing here: eager).
			jr, err := joinClassic(ctx, cl, group, "c1", []string{"tw"}, nil)
			if err != nil || jr.ErrorCode != 0 {
				t.Fatalf("rejoin: %v %+v", err, jr)
			}
			gen = jr.Generation
			if s := sync1(gen); s.ErrorCode != 0 && s.ErrorCode != kerr.RebalanceInProgress.Code {
				t.Fatalf("sync: %s", errName(s.ErrorCode))
			}
		} else if code != 0 {
			t.Fatalf("classic heartbeat: %s", errName(code))
		}
		d, err := describe848(ctx, cl, group)
		return err == nil && assignmentComplete(d, "tw", 4, 2) == nil
	}, func() string { return "group not stable" })
	if code := hb(gen); code != 0 {
		t.Fatalf("classic heartbeat in a stable group: %s", errName(code))
	}

	// A restart replays the classic member with its classic metadata.
	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = brokertest.StartIn(t, dir, "segment", slow)
	cl = newClient(t, b.Addr())
	waitUntil(t, 30*time.Second, func() bool {
		d, err := describe848(ctx, cl, group)
		return err == nil && d.ErrorCode == 0 && len(d.Members) == 2
	}, func() string { return "group not back after the restart" })
	d, _ := describe848(ctx, cl, group)
	if c, n := memberTypes(d); c != 1 || n != 1 {
		t.Fatalf("after the restart: %d classic and %d consumer members", c, n)
	}
	if code := hb(gen); code != 0 {
		t.Fatalf("classic heartbeat after the restart: %s", errName(code))
	}
	if s := sync1(gen); s.ErrorCode != 0 {
		t.Fatalf("classic sync after the restart: %s", errName(s.ErrorCode))
	}

	// The consumer member joins again elsewhere: a new member bumps the
	// group epoch and the classic member is told to rejoin.
	if r := heartbeat848(t, ctx, cl, group, hb848{member: "n2", topics: []string{"tw"}}); r.ErrorCode != 0 {
		t.Fatalf("join n2: %s", errName(r.ErrorCode))
	}
	if code := hb(gen); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("classic heartbeat after the group epoch moved: %s", errName(code))
	}

	lg := kmsg.NewPtrLeaveGroupRequest()
	lg.Group = group
	lg.Members = []kmsg.LeaveGroupRequestMember{{MemberID: "c1"}, {MemberID: "n"}}
	lr, err := lg.RequestWith(ctx, cl)
	if err != nil || lr.ErrorCode != 0 || len(lr.Members) != 2 {
		t.Fatalf("leave: %v %+v", err, lr)
	}
	if lr.Members[0].ErrorCode != 0 || lr.Members[1].ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("leave codes: %s (classic), %s (consumer member)", errName(lr.Members[0].ErrorCode), errName(lr.Members[1].ErrorCode))
	}
	if d, err := describe848(ctx, cl, group); err != nil || len(d.Members) != 2 {
		t.Fatalf("after the classic leave: %v %+v", err, d.Members)
	}
}

// TestConsumerGroupMigrationUpgradeMalformed: a classic group of the
// consumer protocol type whose member sent metadata or an assignment that
// is not Kafka's consumer protocol is not upgraded: the joining consumer
// heartbeat gets GROUP_ID_NOT_FOUND (Kafka's answer when the embedded
// protocol is malformed) and the classic group stays as it was.
func TestConsumerGroupMigrationUpgradeMalformed(t *testing.T) {
	b := migrationBroker(t, "")
	ctx := testCtx(t, 60*time.Second)
	cl := newClient(t, b.Addr())
	createTopic(t, kadm.NewClient(cl), "tbad", 2, nil)
	good := kmsg.NewConsumerMemberMetadata()
	good.Topics = []string{"tbad"}
	for name, tc := range map[string]struct{ md, asg []byte }{
		"metadata":   {md: []byte{0, 0, 0, 0, 0, 9, 'x'}, asg: nil},
		"assignment": {md: good.AppendTo(nil), asg: []byte{0, 0, 0, 0, 0, 1, 0, 4, 't', 'b', 'a', 'd', 0xff}},
		"garbage":    {md: []byte("garbage"), asg: []byte("garbage")},
	} {
		t.Run("bad="+name, func(t *testing.T) {
			group := "gbad-" + name
			jr, err := joinClassic(ctx, cl, group, "", nil, tc.md)
			if err != nil || jr.ErrorCode != kerr.MemberIDRequired.Code {
				t.Fatalf("join: %v %+v", err, jr)
			}
			id := jr.MemberID
			if jr, err = joinClassic(ctx, cl, group, id, nil, tc.md); err != nil || jr.ErrorCode != 0 || jr.LeaderID != id {
				t.Fatalf("rejoin: %v %+v", err, jr)
			}
			sg := kmsg.NewPtrSyncGroupRequest()
			sg.Group, sg.MemberID, sg.Generation = group, id, jr.Generation
			sg.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: id, MemberAssignment: tc.asg}}
			if sr, err := sg.RequestWith(ctx, cl); err != nil || sr.ErrorCode != 0 {
				t.Fatalf("sync: %v %+v", err, sr)
			}
			r := heartbeat848(t, ctx, cl, group, hb848{member: "n", topics: []string{"tbad"}})
			if r.ErrorCode != kerr.GroupIDNotFound.Code {
				t.Fatalf("upgrade of a malformed classic group: %s", errName(r.ErrorCode))
			}
			dg, err := kadm.NewClient(cl).DescribeGroups(ctx, group)
			if err != nil || dg[group].State != "Stable" || len(dg[group].Members) != 1 {
				t.Fatalf("classic group after the refused upgrade: %v %+v", err, dg[group])
			}
		})
	}
}

// TestConsumerGroupMigrationClassicStatic: a static classic member of a
// consumer group: a restart (a join without member id under the same
// instance id) takes the old member's place, which is then fenced
// (FENCED_INSTANCE_ID); a join naming an instance id nobody holds with a
// member id gets UNKNOWN_MEMBER_ID; the instance restarted with the consumer
// protocol replaces the classic member at once.
func TestConsumerGroupMigrationClassicStatic(t *testing.T) {
	b := migrationBroker(t, "")
	ctx := testCtx(t, 60*time.Second)
	cl := newClient(t, b.Addr())
	createTopic(t, kadm.NewClient(cl), "tst", 2, nil)
	const group = "gmig-static"
	if j := heartbeat848(t, ctx, cl, group, hb848{member: "n", topics: []string{"tst"}}); j.ErrorCode != 0 {
		t.Fatalf("join: %s", errName(j.ErrorCode))
	}
	join := func(member, instance string) *kmsg.JoinGroupResponse {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.MemberID, req.ProtocolType, req.InstanceID = group, member, "consumer", &instance
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, 10000
		sub := kmsg.NewConsumerMemberMetadata()
		sub.Version, sub.Topics = 3, []string{"tst"}
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: sub.AppendTo(nil)}}
		r, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	first := join("", "i1")
	if first.ErrorCode != 0 || first.MemberID == "" {
		t.Fatalf("static join: %+v", first)
	}
	if again := join(first.MemberID, "i1"); again.ErrorCode != 0 || again.MemberID != first.MemberID {
		t.Fatalf("static rejoin with its id: %+v", again)
	}
	second := join("", "i1")
	if second.ErrorCode != 0 || second.MemberID == first.MemberID {
		t.Fatalf("static restart: %+v", second)
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	i1 := "i1"
	hb.Group, hb.MemberID, hb.Generation, hb.InstanceID = group, first.MemberID, first.Generation, &i1
	if r, err := hb.RequestWith(ctx, cl); err != nil || r.ErrorCode != kerr.FencedInstanceID.Code {
		t.Fatalf("heartbeat of the replaced member: %v %+v", err, r)
	}
	if r := join("someone", "i2"); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("join with an unknown instance id: %s", errName(r.ErrorCode))
	}
	d, err := describe848(ctx, cl, group)
	if err != nil || len(d.Members) != 2 {
		t.Fatalf("members: %v %+v", err, d.Members)
	}
	// The instance restarted with the consumer protocol takes the classic
	// member's place at once (no UNRELEASED_INSTANCE_ID), as Kafka.
	up := heartbeat848(t, ctx, cl, group, hb848{member: "up", instance: "i1", topics: []string{"tst"}})
	if up.ErrorCode != 0 {
		t.Fatalf("static upgrade of instance i1: %s", errName(up.ErrorCode))
	}
	d, err = describe848(ctx, cl, group)
	if err != nil || len(d.Members) != 2 {
		t.Fatalf("members after the static upgrade: %v %+v", err, d.Members)
	}
	if c, n := memberTypes(d); c != 0 || n != 2 {
		t.Fatalf("after the static upgrade: %d classic and %d consumer members", c, n)
	}
}

// TestConsumerGroupMigrationStaticDowngrade: the last consumer-protocol
// member is static and restarts as a classic client under the same
// instance id: the group becomes a classic group at once (Kafka's
// downgrade on a static member's replacement), the joining member taking
// the replaced one's partitions without a rebalance.
func TestConsumerGroupMigrationStaticDowngrade(t *testing.T) {
	b := migrationBroker(t, "")
	ctx := testCtx(t, 60*time.Second)
	cl := newClient(t, b.Addr())
	createTopic(t, kadm.NewClient(cl), "tsd", 4, nil)
	const group = "gmig-static-down"
	j := heartbeat848(t, ctx, cl, group, hb848{member: "n", instance: "s1", topics: []string{"tsd"}})
	if j.ErrorCode != 0 || countParts(j.Assignment) != 4 {
		t.Fatalf("join: %s %+v", errName(j.ErrorCode), j.Assignment)
	}
	c1, err := joinClassic(ctx, cl, group, "", []string{"tsd"}, nil)
	if err != nil || c1.ErrorCode != kerr.MemberIDRequired.Code {
		t.Fatalf("classic join: %v %+v", err, c1)
	}
	if c1, err = joinClassic(ctx, cl, group, c1.MemberID, []string{"tsd"}, nil); err != nil || c1.ErrorCode != 0 {
		t.Fatalf("classic join: %v %+v", err, c1)
	}
	// The consumer member revokes what the classic member gets.
	owned, epoch := ownedFrom(j.Assignment), j.MemberEpoch
	waitUntil(t, 20*time.Second, func() bool {
		r := heartbeat848(t, ctx, cl, group, hb848{member: "n", instance: "s1", epoch: epoch, owned: owned})
		if r.ErrorCode != 0 {
			t.Fatalf("heartbeat: %s", errName(r.ErrorCode))
		}
		epoch = r.MemberEpoch
		if r.Assignment != nil {
			owned = ownedFrom(r.Assignment)
		}
		return countOwned(owned) == 2
	}, func() string { return fmt.Sprintf("the consumer member holds %d partitions", countOwned(owned)) })

	req := kmsg.NewPtrJoinGroupRequest()
	s1 := "s1"
	req.Group, req.ProtocolType, req.InstanceID = group, "consumer", &s1
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, 10000
	sub := kmsg.NewConsumerMemberMetadata()
	sub.Version, sub.Topics = 3, []string{"tsd"}
	req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: sub.AppendTo(nil)}}
	jr, err := req.RequestWith(ctx, cl)
	if err != nil || jr.ErrorCode != 0 {
		t.Fatalf("static classic join: %v %+v", err, jr)
	}
	if d, err := describe848(ctx, cl, group); err != nil || d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("still a consumer group: %v %s", err, errName(d.ErrorCode))
	}
	dg, err := kadm.NewClient(cl).DescribeGroups(ctx, group)
	if err != nil || dg[group].State != "Stable" || len(dg[group].Members) != 2 {
		t.Fatalf("classic group: %v %+v", err, dg[group])
	}
	sg := kmsg.NewPtrSyncGroupRequest()
	sg.Group, sg.MemberID, sg.Generation, sg.InstanceID = group, jr.MemberID, jr.Generation, &s1
	sr, err := sg.RequestWith(ctx, cl)
	if err != nil || sr.ErrorCode != 0 {
		t.Fatalf("sync in the downgraded group: %v %+v", err, sr)
	}
	var asg kmsg.ConsumerMemberAssignment
	if err := asg.ReadFrom(sr.MemberAssignment); err != nil || len(asg.Topics) != 1 || len(asg.Topics[0].Partitions) != 2 {
		t.Fatalf("the replacing member's assignment: %v %+v", err, asg.Topics)
	}
}

// TestConsumerGroupMigrationRestart: both conversions are in the log: a
// restart after an upgrade finds the consumer group with the converted
// classic member (its heartbeat is not UNKNOWN_MEMBER_ID) and the classic
// group's commit; a restart after the downgrade finds the classic group.
func TestConsumerGroupMigrationRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	slow := func(c *config.Config) {
		c.GroupConsumerSessionTimeout = 45 * time.Second
		c.GroupInitialRebalanceDelay = 0
		c.GroupMinSessionTimeout = time.Second
	}
	b := brokertest.StartIn(t, dir, "segment", slow)
	ctx := testCtx(t, 90*time.Second)
	cl := newClient(t, b.Addr())
	createTopic(t, kadm.NewClient(cl), "trs", 2, nil)
	const group = "gmig-restart"

	// A classic group of one member holding both partitions, with a commit.
	jr, err := joinClassic(ctx, cl, group, "", []string{"trs"}, nil)
	if err != nil || jr.ErrorCode != kerr.MemberIDRequired.Code {
		t.Fatalf("join: %v %+v", err, jr)
	}
	id := jr.MemberID
	if jr, err = joinClassic(ctx, cl, group, id, []string{"trs"}, nil); err != nil || jr.ErrorCode != 0 {
		t.Fatalf("join: %v %+v", err, jr)
	}
	asg := kmsg.NewConsumerMemberAssignment()
	asg.Topics = []kmsg.ConsumerMemberAssignmentTopic{{Topic: "trs", Partitions: []int32{0, 1}}}
	sg := kmsg.NewPtrSyncGroupRequest()
	sg.Group, sg.MemberID, sg.Generation = group, id, jr.Generation
	sg.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: id, MemberAssignment: asg.AppendTo(nil)}}
	if sr, err := sg.RequestWith(ctx, cl); err != nil || sr.ErrorCode != 0 {
		t.Fatalf("sync: %v %+v", err, sr)
	}
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.SetVersion(8)
	oc.Group, oc.MemberID, oc.Generation = group, id, jr.Generation
	oc.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "trs", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 42}}}}
	if r, err := oc.RequestWith(ctx, cl); err != nil || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("commit: %v %+v", err, r)
	}

	// Upgrade, then restart.
	if r := heartbeat848(t, ctx, cl, group, hb848{member: "n", topics: []string{"trs"}}); r.ErrorCode != 0 {
		t.Fatalf("upgrade: %s", errName(r.ErrorCode))
	}
	if code, off := fetch848(t, ctx, cl, group, nil, -1, "trs"); code != 0 || off != 42 {
		t.Fatalf("the classic commit after the upgrade: %s %d", errName(code), off)
	}
	restart := func() {
		t.Helper()
		cl.Close()
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		b = brokertest.StartIn(t, dir, "segment", slow)
		cl = newClient(t, b.Addr())
	}
	restart()
	var d kmsg.ConsumerGroupDescribeResponseGroup
	waitUntil(t, 30*time.Second, func() bool {
		d, err = describe848(ctx, cl, group)
		return err == nil && d.ErrorCode == 0 && len(d.Members) == 2
	}, func() string { return fmt.Sprintf("after the restart: %v %+v", err, d) })
	if c, n := memberTypes(d); c != 1 || n != 1 {
		t.Fatalf("after the restart: %d classic and %d consumer members", c, n)
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation = group, id, jr.Generation
	if r, err := hb.RequestWith(ctx, cl); err != nil || (r.ErrorCode != 0 && r.ErrorCode != kerr.RebalanceInProgress.Code) {
		t.Fatalf("the converted member's heartbeat after the restart: %v %+v", err, r)
	}
	if code, off := fetch848(t, ctx, cl, group, nil, -1, "trs"); code != 0 || off != 42 {
		t.Fatalf("the classic commit after the upgrade and a restart: %s %d", errName(code), off)
	}

	// Downgrade (the consumer member leaves), then restart.
	if r := heartbeat848(t, ctx, cl, group, hb848{member: "n", epoch: -1}); r.ErrorCode != 0 {
		t.Fatalf("leave: %s", errName(r.ErrorCode))
	}
	restart()
	waitUntil(t, 30*time.Second, func() bool {
		dg, err := kadm.NewClient(cl).DescribeGroups(ctx, group)
		return err == nil && dg[group].ProtocolType == "consumer" && len(dg[group].Members) == 1 && dg[group].Members[0].MemberID == id
	}, func() string { return "the downgraded classic group is not back after the restart" })
	if d, err := describe848(ctx, cl, group); err != nil || d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("a consumer group after the downgrade and a restart: %v %s", err, errName(d.ErrorCode))
	}
}

// TestConsumerGroupMigrationClusterFailover: in a 3-broker cluster a
// classic group is upgraded, then its coordinator is closed: the new
// coordinator replays the consumer group with the converted classic member
// (its classic metadata, its epoch) and the classic group's commit.
func TestConsumerGroupMigrationClusterFailover(t *testing.T) {
	zk := zktest.Start(t)
	bs := brokertest.StartCluster(t, 3, "segment", zk.Addr(), func(c *config.Config) {
		c.OffsetsTopicReplication = 3
		c.OffsetsTopicPartitions = 3
		c.GroupConsumerSessionTimeout = 45 * time.Second
		c.GroupInitialRebalanceDelay = 0
		c.GroupMinSessionTimeout = time.Second
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
	if r, err := kadm.NewClient(cl).CreateTopic(ctx, 4, 3, nil, "cmig"); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	const group = "gcmig"
	// retry sends a request until its answer is no coordinator error,
	// with a fresh client after a failed one (kgo keeps a dead coordinator
	// cached for requests it does not retry).
	retry := func(what string, send func() (int16, error)) int16 {
		t.Helper()
		var code int16
		var err error
		waitUntil(t, 60*time.Second, func() bool {
			if code, err = send(); err != nil {
				cl.Close()
				if cl, err = kgo.NewClient(kgo.SeedBrokers(seeds...)); err != nil {
					t.Fatal(err)
				}
				return false
			}
			switch code {
			case kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code:
				return false
			}
			return true
		}, func() string { return fmt.Sprintf("%s: %s (%v)", what, errName(code), err) })
		return code
	}

	// The classic group: one member holding every partition, a commit.
	var jr *kmsg.JoinGroupResponse
	join := func(id string) int16 {
		return retry("join", func() (int16, error) {
			var err error
			if jr, err = joinClassic(ctx, cl, group, id, []string{"cmig"}, nil); err != nil {
				return 0, err
			}
			return jr.ErrorCode, nil
		})
	}
	if code := join(""); code != kerr.MemberIDRequired.Code {
		t.Fatalf("join: %s", errName(code))
	}
	id := jr.MemberID
	if code := join(id); code != 0 {
		t.Fatalf("join: %s", errName(code))
	}
	gen := jr.Generation
	asg := kmsg.NewConsumerMemberAssignment()
	asg.Topics = []kmsg.ConsumerMemberAssignmentTopic{{Topic: "cmig", Partitions: []int32{0, 1, 2, 3}}}
	if code := retry("sync", func() (int16, error) {
		sg := kmsg.NewPtrSyncGroupRequest()
		sg.Group, sg.MemberID, sg.Generation = group, id, gen
		sg.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: id, MemberAssignment: asg.AppendTo(nil)}}
		r, err := sg.RequestWith(ctx, cl)
		if err != nil {
			return 0, err
		}
		return r.ErrorCode, nil
	}); code != 0 {
		t.Fatalf("sync: %s", errName(code))
	}
	if code := retry("commit", func() (int16, error) {
		oc := kmsg.NewPtrOffsetCommitRequest()
		oc.SetVersion(8)
		oc.Group, oc.MemberID, oc.Generation = group, id, gen
		oc.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "cmig", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 55}}}}
		r, err := oc.RequestWith(ctx, cl)
		if err != nil {
			return 0, err
		}
		return r.Topics[0].Partitions[0].ErrorCode, nil
	}); code != 0 {
		t.Fatalf("commit: %s", errName(code))
	}

	// The upgrade.
	if code := retry("upgrade", func() (int16, error) {
		r, err := tryHeartbeat848(ctx, cl, group, hb848{member: "n", topics: []string{"cmig"}})
		if err != nil {
			return 0, err
		}
		return r.ErrorCode, nil
	}); code != 0 {
		t.Fatalf("upgrade: %s", errName(code))
	}
	before, err := describe848(ctx, cl, group)
	if err != nil || len(before.Members) != 2 {
		t.Fatalf("after the upgrade: %v %+v", err, before)
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
	if err := coord.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("closed coordinator %d", fresp.NodeID)

	var after kmsg.ConsumerGroupDescribeResponseGroup
	retry("describe", func() (int16, error) {
		var err error
		after, err = describe848(ctx, cl, group)
		return after.ErrorCode, err
	})
	if after.ErrorCode != 0 || len(after.Members) != 2 || after.Epoch != before.Epoch {
		t.Fatalf("after the failover: %s epoch %d (%d before), %d members", errName(after.ErrorCode), after.Epoch, before.Epoch, len(after.Members))
	}
	for _, m := range after.Members {
		if m.MemberID == id && (m.MemberType != 0 || m.MemberEpoch != gen) {
			t.Fatalf("the classic member after the failover: type %d epoch %d (generation %d)", m.MemberType, m.MemberEpoch, gen)
		}
	}
	if code := retry("classic heartbeat", func() (int16, error) {
		hb := kmsg.NewPtrHeartbeatRequest()
		hb.Group, hb.MemberID, hb.Generation = group, id, gen
		r, err := hb.RequestWith(ctx, cl)
		if err != nil {
			return 0, err
		}
		return r.ErrorCode, nil
	}); code != 0 && code != kerr.RebalanceInProgress.Code {
		t.Fatalf("the classic member's heartbeat after the failover: %s", errName(code))
	}
	var off int64
	if code := retry("fetch", func() (int16, error) {
		code, o := fetch848(t, ctx, cl, group, nil, -1, "cmig")
		off = o
		return code, nil
	}); code != 0 || off != 55 {
		t.Fatalf("the classic commit after the failover: %s %d", errName(code), off)
	}
}

// TestConsumerGroupMigrationEmptyToClassic: a classic JoinGroup for a
// consumer group without members turns it into a classic group (Kafka's
// maybeDeleteEmptyConsumerGroup), keeping its offsets: ListGroups shows the
// classic group, ConsumerGroupDescribe no longer finds a consumer group.
func TestConsumerGroupMigrationEmptyToClassic(t *testing.T) {
	b := migrationBroker(t, "")
	ctx := testCtx(t, 60*time.Second)
	cl := newClient(t, b.Addr())
	adm := kadm.NewClient(cl)
	createTopic(t, adm, "tec", 2, nil)
	const group = "gmig-empty"
	j := heartbeat848(t, ctx, cl, group, hb848{member: "n", topics: []string{"tec"}})
	if j.ErrorCode != 0 {
		t.Fatalf("join: %s", errName(j.ErrorCode))
	}
	if got := commit848(t, ctx, cl, group, "n", j.MemberEpoch, "tec", 7, 9); got != 0 {
		t.Fatalf("commit: %s", errName(got))
	}
	if l := heartbeat848(t, ctx, cl, group, hb848{member: "n", epoch: -1}); l.ErrorCode != 0 {
		t.Fatalf("leave: %s", errName(l.ErrorCode))
	}

	var seen sync.Map
	startMigMember(t, b.Addr(), "classic", group, "tec", false, &seen)
	waitClassicStable(t, ctx, adm, group, 1)
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if lg, ok := listed[group]; !ok || lg.ProtocolType != "consumer" || lg.State != "Stable" {
		t.Fatalf("ListGroups: %+v", listed[group])
	}
	if d, err := describe848(ctx, cl, group); err != nil || d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("ConsumerGroupDescribe: %v %s", err, errName(d.ErrorCode))
	}
	if code, off := fetch848(t, ctx, cl, group, nil, -1, "tec"); code != 0 || off < 7 {
		t.Fatalf("offsets after the conversion: %s %d", errName(code), off)
	}
}
