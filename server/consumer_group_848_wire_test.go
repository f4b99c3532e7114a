package server_test

// KIP-848 consumer groups at the wire: raw ConsumerGroupHeartbeat,
// ConsumerGroupDescribe, OffsetCommit v9 and OffsetFetch v9 requests, for
// Kafka's error codes on hostile input, member epochs on offsets, the
// restart of a single node (members keep their epochs and commits), a
// session timeout and new partitions.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
)

// hb848 is a raw heartbeat's fields.
type hb848 struct {
	member   string
	instance string
	epoch    int32
	topics   []string // nil: not sent
	regex    *string
	assignor *string
	owned    []kmsg.ConsumerGroupHeartbeatRequestTopic // nil: not sent
	rebTO    int32                                     // 0: 30000 on a join, -1 otherwise
}

func heartbeat848(t *testing.T, ctx context.Context, cl *kgo.Client, group string, h hb848) *kmsg.ConsumerGroupHeartbeatResponse {
	t.Helper()
	resp, err := tryHeartbeat848(ctx, cl, group, h)
	if err != nil {
		t.Fatalf("heartbeat: %v", err)
	}
	return resp
}

// tryHeartbeat848 sends one heartbeat and returns kgo's error, if any.
func tryHeartbeat848(ctx context.Context, cl *kgo.Client, group string, h hb848) (*kmsg.ConsumerGroupHeartbeatResponse, error) {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = group, h.member, h.epoch
	if h.instance != "" {
		req.InstanceID = &h.instance
	}
	req.SubscribedTopicNames, req.SubscribedTopicRegex, req.ServerAssignor = h.topics, h.regex, h.assignor
	req.Topics = h.owned
	req.RebalanceTimeoutMillis = -1
	if h.epoch == 0 {
		req.RebalanceTimeoutMillis = 30000
		if req.Topics == nil {
			req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		}
	}
	if h.rebTO != 0 {
		req.RebalanceTimeoutMillis = h.rebTO
	}
	return req.RequestWith(ctx, cl)
}

// ownedFrom is a heartbeat's owned partitions from a response assignment.
func ownedFrom(a *kmsg.ConsumerGroupHeartbeatResponseAssignment) []kmsg.ConsumerGroupHeartbeatRequestTopic {
	out := []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if a == nil {
		return out
	}
	for _, t := range a.Topics {
		out = append(out, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: t.TopicID, Partitions: t.Partitions})
	}
	return out
}

func countParts(a *kmsg.ConsumerGroupHeartbeatResponseAssignment) int {
	n := 0
	if a != nil {
		for _, t := range a.Topics {
			n += len(t.Partitions)
		}
	}
	return n
}

func errName(code int16) string {
	if code == 0 {
		return "NONE"
	}
	return kerr.ErrorForCode(code).(*kerr.Error).Message
}

// commit848 commits offset for topic-0 as member at epoch with
// OffsetCommit v9 and returns the partition's error code.
func commit848(t *testing.T, ctx context.Context, cl *kgo.Client, group, member string, epoch int32, topic string, offset int64, version int16) int16 {
	t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = version
	req.Group, req.MemberID, req.Generation = group, member, epoch
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = 0, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	if version < 9 {
		v := kversion.Stable()
		v.SetMaxKeyVersion(int16(kmsg.OffsetCommit), version)
		vcl, err := kgo.NewClient(append(cl.Opts(), kgo.MaxVersions(v))...)
		if err != nil {
			t.Fatal(err)
		}
		defer vcl.Close()
		cl = vcl
	}
	resp, err := cl.Request(ctx, req)
	if err != nil {
		t.Fatalf("offset commit: %v", err)
	}
	return resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
}

// fetch848 fetches topic-0's committed offset as member at epoch with
// OffsetFetch v9 and returns the group error and the offset.
func fetch848(t *testing.T, ctx context.Context, cl *kgo.Client, group string, member *string, epoch int32, topic string) (int16, int64) {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group, rg.MemberID, rg.MemberEpoch = group, member, epoch
	rt := kmsg.NewOffsetFetchRequestGroupTopic()
	rt.Topic, rt.Partitions = topic, []int32{0}
	rg.Topics = append(rg.Topics, rt)
	req.Groups = append(req.Groups, rg)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		// A coordinator that went away (cluster failover): the caller
		// retries or fails on the code.
		t.Logf("offset fetch: %v", err)
		return kerr.CoordinatorNotAvailable.Code, -1
	}
	g := resp.Groups[0]
	if g.ErrorCode != 0 || len(g.Topics) == 0 {
		return g.ErrorCode, -1
	}
	return g.ErrorCode, g.Topics[0].Partitions[0].Offset
}

// TestConsumerGroup848Errors: Kafka's answers to bad and hostile
// heartbeats, describes and offset requests; the broker keeps serving.
func TestConsumerGroup848Errors(t *testing.T) {
	b := brokertest.Start(t, "segment", fastConsumerGroups)
	ctx := testCtx(t, 60*time.Second)
	cl := newClient(t, b.Addr())
	createTopic(t, kadm.NewClient(cl), "e848", 4, nil)
	const group = "ge848"
	str := func(s string) *string { return &s }

	// Two members come and go first, so that m1 joins at a group epoch
	// past 2 and an epoch behind its own exists that is not its previous.
	for _, m := range []string{"m0", "m00"} {
		if r := heartbeat848(t, ctx, cl, group, hb848{member: m, topics: []string{"e848"}}); r.ErrorCode != 0 {
			t.Fatalf("join %s: %s", m, errName(r.ErrorCode))
		}
		if r := heartbeat848(t, ctx, cl, group, hb848{member: m, epoch: -1}); r.ErrorCode != 0 {
			t.Fatalf("leave %s: %s", m, errName(r.ErrorCode))
		}
	}
	join := heartbeat848(t, ctx, cl, group, hb848{member: "m1", topics: []string{"e848"}})
	if join.ErrorCode != 0 || join.MemberEpoch < 3 || countParts(join.Assignment) != 4 {
		t.Fatalf("join: %s epoch %d assignment %d", errName(join.ErrorCode), join.MemberEpoch, countParts(join.Assignment))
	}
	epoch := join.MemberEpoch

	huge := make([]string, 100000)
	for i := range huge {
		huge[i] = fmt.Sprintf("no-such-topic-%06d-%s", i, strings.Repeat("x", 40))
	}
	for _, tc := range []struct {
		name string
		h    hb848
		want int16
	}{
		{"epoch ahead", hb848{member: "m1", epoch: epoch + 5, owned: ownedFrom(join.Assignment)}, kerr.FencedMemberEpoch.Code},
		{"epoch behind, not the previous", hb848{member: "m1", epoch: epoch - 2, owned: ownedFrom(join.Assignment)}, kerr.FencedMemberEpoch.Code},
		{"unknown member", hb848{member: "nobody", epoch: 3}, kerr.UnknownMemberID.Code},
		{"unknown member leaves", hb848{member: "nobody", epoch: -1}, kerr.UnknownMemberID.Code},
		{"epoch below -2", hb848{member: "m1", epoch: -3}, kerr.InvalidRequest.Code},
		{"empty member id", hb848{member: "", epoch: 0, topics: []string{"e848"}}, kerr.InvalidRequest.Code},
		{"join owning partitions", hb848{member: "m2", epoch: 0, topics: []string{"e848"}, owned: ownedFrom(join.Assignment)}, kerr.InvalidRequest.Code},
		{"join without subscription", hb848{member: "m2", epoch: 0}, kerr.InvalidRequest.Code},
		{"join without rebalance timeout", hb848{member: "m2", epoch: 0, topics: []string{"e848"}, rebTO: -1}, kerr.InvalidRequest.Code},
		{"static leave without instance id", hb848{member: "m1", epoch: -2}, kerr.InvalidRequest.Code},
		{"bad regex", hb848{member: "m2", epoch: 0, regex: str("e848(")}, kerr.InvalidRegularExpression.Code},
		{"unknown assignor", hb848{member: "m2", epoch: 0, topics: []string{"e848"}, assignor: str("sticky")}, kerr.UnsupportedAssignor.Code},
		{"huge topic list", hb848{member: "m3", epoch: 0, topics: huge}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := heartbeat848(t, ctx, cl, group, tc.h)
			if tc.want == -1 {
				t.Logf("answered %s (epoch %d)", errName(resp.ErrorCode), resp.MemberEpoch)
				return
			}
			if resp.ErrorCode != tc.want {
				t.Fatalf("got %s, want %s", errName(resp.ErrorCode), errName(tc.want))
			}
		})
	}

	// The member is still there at its epoch, with its partitions.
	again := heartbeat848(t, ctx, cl, group, hb848{member: "m1", epoch: epoch, owned: ownedFrom(join.Assignment)})
	if again.ErrorCode != 0 || again.MemberEpoch < epoch {
		t.Fatalf("heartbeat after bad ones: %s epoch %d (was %d)", errName(again.ErrorCode), again.MemberEpoch, epoch)
	}
	epoch = again.MemberEpoch

	// Offsets with member epochs.
	pc := newClient(t, b.Addr())
	for _, tc := range []struct {
		name    string
		member  string
		epoch   int32
		version int16
		want    int16
	}{
		{"current epoch", "m1", epoch, 9, 0},
		{"stale epoch", "m1", epoch - 1, 9, kerr.StaleMemberEpoch.Code},
		{"unknown member", "nobody", epoch, 9, kerr.UnknownMemberID.Code},
		{"anonymous while members", "", -1, 9, kerr.UnknownMemberID.Code},
		{"member on v8", "m1", epoch, 8, kerr.UnsupportedVersion.Code},
	} {
		t.Run("commit/"+tc.name, func(t *testing.T) {
			if got := commit848(t, ctx, pc, group, tc.member, tc.epoch, "e848", 42, tc.version); got != tc.want {
				t.Fatalf("got %s, want %s", errName(got), errName(tc.want))
			}
		})
	}
	m1 := "m1"
	nobody := "nobody"
	for _, tc := range []struct {
		name   string
		member *string
		epoch  int32
		want   int16
	}{
		{"current epoch", &m1, epoch, 0},
		{"admin", nil, -1, 0},
		{"stale epoch", &m1, epoch + 1, kerr.StaleMemberEpoch.Code},
		{"unknown member", &nobody, epoch, kerr.UnknownMemberID.Code},
	} {
		t.Run("fetch/"+tc.name, func(t *testing.T) {
			code, off := fetch848(t, ctx, pc, group, tc.member, tc.epoch, "e848")
			if code != tc.want {
				t.Fatalf("got %s, want %s", errName(code), errName(tc.want))
			}
			if code == 0 && off != 42 {
				t.Fatalf("committed offset %d, want 42", off)
			}
		})
	}

	// Describe: a group that does not exist, and this one.
	nf, err := describe848(ctx, cl, "no-such-group")
	if err != nil || nf.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("describe of a missing group: %v %s", err, errName(nf.ErrorCode))
	}
	d, err := describe848(ctx, cl, group)
	if err != nil {
		t.Fatal(err)
	}
	if err := assignmentComplete(d, "e848", 4, 1); err != nil {
		t.Fatalf("describe: %v", err)
	}

	// Leaving empties the group; an anonymous commit is then allowed.
	if l := heartbeat848(t, ctx, cl, group, hb848{member: "m1", epoch: -1}); l.ErrorCode != 0 || l.MemberEpoch != -1 {
		t.Fatalf("leave: %s epoch %d", errName(l.ErrorCode), l.MemberEpoch)
	}
	if got := commit848(t, ctx, pc, group, "", -1, "e848", 43, 9); got != 0 {
		t.Fatalf("anonymous commit to an empty consumer group: %s", errName(got))
	}
}

// TestConsumerGroup848Restart: a single node closed and reopened on the
// same data dir replays its consumer groups from __consumer_offsets:
// members heartbeat on at the epochs they had, keep their partitions, and
// their commits are there.
func TestConsumerGroup848Restart(t *testing.T) {
	dir := t.TempDir()
	slow := func(c *config.Config) { c.GroupConsumerSessionTimeout = 45 * time.Second }
	b := brokertest.StartIn(t, dir, "segment", slow)
	ctx := testCtx(t, 60*time.Second)
	cl := newClient(t, b.Addr())
	createTopic(t, kadm.NewClient(cl), "r848", 6, nil)
	const group = "gr848"

	// Two members, reconciled to a stable assignment.
	a := heartbeat848(t, ctx, cl, group, hb848{member: "a", topics: []string{"r848"}})
	bb := heartbeat848(t, ctx, cl, group, hb848{member: "b", topics: []string{"r848"}})
	if a.ErrorCode != 0 || bb.ErrorCode != 0 {
		t.Fatalf("joins: %s %s", errName(a.ErrorCode), errName(bb.ErrorCode))
	}
	state := map[string]*kmsg.ConsumerGroupHeartbeatResponse{"a": a, "b": bb}
	owned := map[string][]kmsg.ConsumerGroupHeartbeatRequestTopic{"a": ownedFrom(a.Assignment), "b": ownedFrom(bb.Assignment)}
	waitUntil(t, 20*time.Second, func() bool {
		for _, m := range []string{"a", "b"} {
			r := heartbeat848(t, ctx, cl, group, hb848{member: m, epoch: state[m].MemberEpoch, owned: owned[m]})
			if r.ErrorCode != 0 {
				t.Fatalf("heartbeat %s: %s", m, errName(r.ErrorCode))
			}
			if r.Assignment != nil {
				owned[m] = ownedFrom(r.Assignment)
			}
			state[m] = r
		}
		d, err := describe848(ctx, cl, group)
		return err == nil && assignmentComplete(d, "r848", 6, 2) == nil
	}, func() string { return "group not stable" })
	before, err := describe848(ctx, cl, group)
	if err != nil {
		t.Fatal(err)
	}
	if got := commit848(t, ctx, cl, group, "a", state["a"].MemberEpoch, "r848", 77, 9); got != 0 {
		t.Fatalf("commit: %s", errName(got))
	}

	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b2 := brokertest.StartIn(t, dir, "segment", slow)
	cl2 := newClient(t, b2.Addr())

	// The first heartbeat after the restart may find the partition loading.
	var r *kmsg.ConsumerGroupHeartbeatResponse
	waitUntil(t, 20*time.Second, func() bool {
		r = heartbeat848(t, ctx, cl2, group, hb848{member: "a", epoch: state["a"].MemberEpoch, owned: owned["a"]})
		return r.ErrorCode != kerr.CoordinatorLoadInProgress.Code && r.ErrorCode != kerr.NotCoordinator.Code
	}, func() string { return errName(r.ErrorCode) })
	if r.ErrorCode != 0 || r.MemberEpoch != state["a"].MemberEpoch {
		t.Fatalf("heartbeat after restart: %s at epoch %d, want epoch %d", errName(r.ErrorCode), r.MemberEpoch, state["a"].MemberEpoch)
	}
	after, err := describe848(ctx, cl2, group)
	if err != nil {
		t.Fatal(err)
	}
	if after.Epoch != before.Epoch || after.AssignmentEpoch != before.AssignmentEpoch {
		t.Fatalf("group epochs %d/%d after restart, %d/%d before", after.Epoch, after.AssignmentEpoch, before.Epoch, before.AssignmentEpoch)
	}
	if err := assignmentComplete(after, "r848", 6, 2); err != nil {
		t.Fatalf("after restart: %v", err)
	}
	for i, m := range after.Members {
		if m.MemberID != before.Members[i].MemberID || m.MemberEpoch != before.Members[i].MemberEpoch ||
			!slicesEqual(flatten(m.Assignment, "r848"), flatten(before.Members[i].Assignment, "r848")) {
			t.Fatalf("member %s after restart: epoch %d %v; before: %s epoch %d %v", m.MemberID, m.MemberEpoch,
				flatten(m.Assignment, "r848"), before.Members[i].MemberID, before.Members[i].MemberEpoch, flatten(before.Members[i].Assignment, "r848"))
		}
	}
	member := "a"
	if code, off := fetch848(t, ctx, cl2, group, &member, state["a"].MemberEpoch, "r848"); code != 0 || off != 77 {
		t.Fatalf("committed offset after restart: %s %d, want 77", errName(code), off)
	}
}

func slicesEqual(a, b []int32) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

// TestConsumerGroup848SessionAndMetadata: a member that stops heartbeating
// is removed after the session timeout and its partitions go to the other;
// partitions added to a subscribed topic and a regex subscription are
// assigned at the next heartbeats.
func TestConsumerGroup848SessionAndMetadata(t *testing.T) {
	t.Parallel() // waits on session and request timers, not the CPU
	b := brokertest.Start(t, "segment", fastConsumerGroups)
	ctx := testCtx(t, 60*time.Second)
	cl := newClient(t, b.Addr())
	adm := kadm.NewClient(cl)
	createTopic(t, adm, "s848", 4, nil)
	createTopic(t, adm, "s848-re-1", 2, nil)
	createTopic(t, adm, "other", 2, nil)
	const group = "gs848"
	re := `s848-re-\d+`

	a := heartbeat848(t, ctx, cl, group, hb848{member: "a", topics: []string{"s848"}, regex: &re})
	if a.ErrorCode != 0 || countParts(a.Assignment) != 6 {
		t.Fatalf("join a: %s, %d partitions (want 4 of s848 + 2 of the regex)", errName(a.ErrorCode), countParts(a.Assignment))
	}
	silent := heartbeat848(t, ctx, cl, group, hb848{member: "silent", topics: []string{"s848"}})
	if silent.ErrorCode != 0 {
		t.Fatalf("join silent: %s", errName(silent.ErrorCode))
	}
	// a keeps heartbeating; "silent" never does again: it is removed once
	// its session times out, and a ends up with everything.
	epoch, owned := a.MemberEpoch, ownedFrom(a.Assignment)
	hbA := func() *kmsg.ConsumerGroupHeartbeatResponse {
		r := heartbeat848(t, ctx, cl, group, hb848{member: "a", epoch: epoch, owned: owned})
		if r.ErrorCode != 0 {
			t.Fatalf("heartbeat a: %s", errName(r.ErrorCode))
		}
		epoch = r.MemberEpoch
		if r.Assignment != nil {
			owned = ownedFrom(r.Assignment)
		}
		return r
	}
	waitUntil(t, 30*time.Second, func() bool {
		hbA()
		d, err := describe848(ctx, cl, group)
		return err == nil && len(d.Members) == 1 && countOwned(owned) == 6
	}, func() string { return fmt.Sprintf("a owns %d partitions", countOwned(owned)) })

	// New partitions of a subscribed topic reach a.
	if _, err := adm.UpdatePartitions(ctx, 6, "s848"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, func() bool { hbA(); return countOwned(owned) == 8 },
		func() string { return fmt.Sprintf("a owns %d partitions, want 8", countOwned(owned)) })

	// A new topic matching the regex is picked up when the group's regexes
	// are resolved again (at most every 10 s, as Kafka); a deleted topic
	// leaves the assignment at the next heartbeat.
	createTopic(t, adm, "s848-re-2", 3, nil)
	waitUntil(t, 40*time.Second, func() bool { hbA(); return countOwned(owned) == 11 },
		func() string { return fmt.Sprintf("a owns %d partitions, want 11", countOwned(owned)) })
	if _, err := adm.DeleteTopics(ctx, "s848-re-1"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, func() bool { hbA(); return countOwned(owned) == 9 },
		func() string { return fmt.Sprintf("a owns %d partitions, want 9", countOwned(owned)) })
}

func countOwned(o []kmsg.ConsumerGroupHeartbeatRequestTopic) int {
	n := 0
	for _, t := range o {
		n += len(t.Partitions)
	}
	return n
}

// TestConsumerGroup848Static: a static member that leaves with epoch -2
// keeps its partitions; the same instance back under a new member id gets
// them at once, without a new group epoch; while it is held, another
// member cannot take the instance id (UNRELEASED_INSTANCE_ID).
func TestConsumerGroup848Static(t *testing.T) {
	b := brokertest.Start(t, "segment", fastConsumerGroups)
	ctx := testCtx(t, 60*time.Second)
	cl := newClient(t, b.Addr())
	createTopic(t, kadm.NewClient(cl), "st848", 4, nil)
	const group = "gst848"

	s1 := heartbeat848(t, ctx, cl, group, hb848{member: "s1", instance: "i1", topics: []string{"st848"}})
	if s1.ErrorCode != 0 || countParts(s1.Assignment) != 4 {
		t.Fatalf("join: %s, %d partitions", errName(s1.ErrorCode), countParts(s1.Assignment))
	}
	if r := heartbeat848(t, ctx, cl, group, hb848{member: "x", instance: "i1", topics: []string{"st848"}}); r.ErrorCode != kerr.UnreleasedInstanceID.Code {
		t.Fatalf("second member on a held instance id: %s", errName(r.ErrorCode))
	}
	before, err := describe848(ctx, cl, group)
	if err != nil {
		t.Fatal(err)
	}
	if r := heartbeat848(t, ctx, cl, group, hb848{member: "s1", instance: "i1", epoch: -2}); r.ErrorCode != 0 || r.MemberEpoch != -2 {
		t.Fatalf("static leave: %s epoch %d", errName(r.ErrorCode), r.MemberEpoch)
	}
	back := heartbeat848(t, ctx, cl, group, hb848{member: "s1-again", instance: "i1", topics: []string{"st848"}})
	if back.ErrorCode != 0 || countParts(back.Assignment) != 4 || back.MemberEpoch != s1.MemberEpoch {
		t.Fatalf("rejoin: %s epoch %d (was %d), %d partitions", errName(back.ErrorCode), back.MemberEpoch, s1.MemberEpoch, countParts(back.Assignment))
	}
	after, err := describe848(ctx, cl, group)
	if err != nil {
		t.Fatal(err)
	}
	if after.Epoch != before.Epoch || len(after.Members) != 1 || after.Members[0].MemberID != "s1-again" {
		t.Fatalf("after the rejoin: group epoch %d (was %d), members %v", after.Epoch, before.Epoch, after.Members)
	}
	// The old member id is fenced.
	if r := heartbeat848(t, ctx, cl, group, hb848{member: "s1", instance: "i1", epoch: s1.MemberEpoch}); r.ErrorCode != kerr.FencedInstanceID.Code {
		t.Fatalf("old member id: %s", errName(r.ErrorCode))
	}
}

// TestConsumerGroup848DeleteAndClassic: DeleteGroups answers NON_EMPTY_GROUP
// while a consumer group has members and deletes it (with its offsets)
// once empty; a classic JoinGroup with a truncated subscription into a
// consumer group with members gets UNKNOWN_SERVER_ERROR (as Kafka), and a
// consumer heartbeat of an unknown member into a classic group with
// members GROUP_ID_NOT_FOUND.
func TestConsumerGroup848DeleteAndClassic(t *testing.T) {
	b := brokertest.Start(t, "segment", fastConsumerGroups, func(c *config.Config) {
		c.GroupInitialRebalanceDelay = 0
		c.GroupMinSessionTimeout = time.Second
	})
	ctx := testCtx(t, 60*time.Second)
	cl := newClient(t, b.Addr())
	adm := kadm.NewClient(cl)
	createTopic(t, adm, "d848", 2, nil)
	const group = "gd848"

	j := heartbeat848(t, ctx, cl, group, hb848{member: "m", topics: []string{"d848"}})
	if j.ErrorCode != 0 {
		t.Fatalf("join: %s", errName(j.ErrorCode))
	}
	if got := commit848(t, ctx, cl, group, "m", j.MemberEpoch, "d848", 9, 9); got != 0 {
		t.Fatalf("commit: %s", errName(got))
	}
	jg := kmsg.NewPtrJoinGroupRequest()
	jg.Group, jg.ProtocolType, jg.SessionTimeoutMillis, jg.RebalanceTimeoutMillis = group, "consumer", 10000, 10000
	jg.MemberID = "classic-1"
	jg.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0}}}
	// Served as a classic member of the consumer group, whose truncated
	// subscription Kafka fails with UNKNOWN_SERVER_ERROR
	// (consumer_group_848_migration_test.go has the rest).
	if r, err := jg.RequestWith(ctx, cl); err != nil || r.ErrorCode != kerr.UnknownServerError.Code {
		t.Fatalf("classic join into a consumer group: %v %v", err, r)
	}

	deleteGroup := func() int16 {
		resp, err := adm.DeleteGroups(ctx, group)
		if err != nil {
			t.Fatal(err)
		}
		if resp[group].Err == nil {
			return 0
		}
		return kerr.TypedErrorForCode(int16(resp[group].Err.(*kerr.Error).Code)).Code
	}
	if got := deleteGroup(); got != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete with a member: %s", errName(got))
	}
	if l := heartbeat848(t, ctx, cl, group, hb848{member: "m", epoch: -1}); l.ErrorCode != 0 {
		t.Fatalf("leave: %s", errName(l.ErrorCode))
	}
	if got := deleteGroup(); got != 0 {
		t.Fatalf("delete of an empty consumer group: %s", errName(got))
	}
	if d, err := describe848(ctx, cl, group); err != nil || d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("describe after delete: %v %s", err, errName(d.ErrorCode))
	}
	if code, off := fetch848(t, ctx, cl, group, nil, -1, "d848"); code != 0 || off != -1 {
		t.Fatalf("offsets after delete: %s %d", errName(code), off)
	}

	// A classic group with members refuses consumer heartbeats of members
	// it does not know (a joining one would upgrade it).
	classic := newClient(t, b.Addr(), kgo.ConsumerGroup("gc-classic"), kgo.ConsumeTopics("d848"))
	waitUntil(t, 30*time.Second, func() bool {
		dg, err := adm.DescribeGroups(ctx, "gc-classic")
		return err == nil && len(dg["gc-classic"].Members) == 1
	}, func() string { _ = classic; return "classic member not in" })
	if r := heartbeat848(t, ctx, cl, "gc-classic", hb848{member: "n", epoch: 1}); r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("consumer heartbeat into a classic group: %s", errName(r.ErrorCode))
	}
}

// TestConsumerGroup848OffsetDeleteAndTxnCommit: OffsetDelete of a topic a
// member of a consumer group subscribes to answers GROUP_SUBSCRIBED_TO_TOPIC
// and keeps the offset, while an unsubscribed topic's offsets go (Kafka's
// OffsetMetadataManager.deleteOffsets); a TxnOffsetCommit that names no
// member (a producer that does not pass its consumer's metadata) is
// accepted beside live members, one at the member's epoch too, and a stale
// epoch is ILLEGAL_GENERATION (Kafka's ConsumerGroup.validateOffsetCommit).
func TestConsumerGroup848OffsetDeleteAndTxnCommit(t *testing.T) {
	b := brokertest.Start(t, "segment", fastConsumerGroups, func(c *config.Config) {
		c.GroupInitialRebalanceDelay = 0
	})
	ctx := testCtx(t, 60*time.Second)
	cl := newClient(t, b.Addr())
	adm := kadm.NewClient(cl)
	createTopic(t, adm, "od848-sub", 1, nil)
	createTopic(t, adm, "od848-other", 1, nil)
	const group = "god848"

	j := heartbeat848(t, ctx, cl, group, hb848{member: "m", topics: []string{"od848-sub"}})
	if j.ErrorCode != 0 {
		t.Fatalf("join: %s", errName(j.ErrorCode))
	}
	for _, topic := range []string{"od848-sub", "od848-other"} {
		if got := commit848(t, ctx, cl, group, "m", j.MemberEpoch, topic, 7, 9); got != 0 {
			t.Fatalf("commit %s: %s", topic, errName(got))
		}
	}
	del := func(topic string) int16 {
		req := kmsg.NewPtrOffsetDeleteRequest()
		req.Group = group
		rt := kmsg.NewOffsetDeleteRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewOffsetDeleteRequestTopicPartition()
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if resp.ErrorCode != 0 {
			return resp.ErrorCode
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	if got := del("od848-sub"); got != kerr.GroupSubscribedToTopic.Code {
		t.Errorf("OffsetDelete of a subscribed topic: %s, want GROUP_SUBSCRIBED_TO_TOPIC", errName(got))
	}
	if code, off := fetch848(t, ctx, cl, group, nil, -1, "od848-sub"); code != 0 || off != 7 {
		t.Errorf("subscribed topic's offset after the refused delete: %s %d, want 7", errName(code), off)
	}
	if got := del("od848-other"); got != 0 {
		t.Errorf("OffsetDelete of a topic nobody subscribes to: %s", errName(got))
	}
	if code, off := fetch848(t, ctx, cl, group, nil, -1, "od848-other"); code != 0 || off != -1 {
		t.Errorf("unsubscribed topic's offset after the delete: %s %d, want none", errName(code), off)
	}

	// TxnOffsetCommit from a transactional producer.
	pcl := newClient(t, b.Addr(), kgo.TransactionalID("txn-od848"))
	if err := pcl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	pid, pepoch, err := pcl.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = "txn-od848", pid, pepoch, group
	if r, err := add.RequestWith(ctx, pcl); err != nil || r.ErrorCode != 0 {
		t.Fatalf("AddOffsetsToTxn: %v %v", err, r)
	}
	txnCommit := func(member string, epoch int32) int16 {
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = "txn-od848", group, pid, pepoch
		req.MemberID, req.Generation = member, epoch
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = "od848-sub"
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Offset = 11
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	if got := txnCommit("", -1); got != 0 {
		t.Errorf("anonymous TxnOffsetCommit beside a live member: %s, want NONE", errName(got))
	}
	if got := txnCommit("m", j.MemberEpoch); got != 0 {
		t.Errorf("TxnOffsetCommit at the member's epoch: %s", errName(got))
	}
	if got := txnCommit("m", j.MemberEpoch+5); got != kerr.IllegalGeneration.Code {
		t.Errorf("TxnOffsetCommit at a stale epoch: %s, want ILLEGAL_GENERATION", errName(got))
	}
	// The offsets were added by hand, which kgo does not know of: EndTxn
	// by hand too.
	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = "txn-od848", pid, pepoch, true
	if r, err := end.RequestWith(ctx, pcl); err != nil || r.ErrorCode != 0 {
		t.Fatalf("EndTxn: %v %v", err, r)
	}
	waitUntil(t, 10*time.Second, func() bool {
		_, off := fetch848(t, ctx, cl, group, nil, -1, "od848-sub")
		return off == 11
	}, func() string { return "the transaction's offset never became visible" })
}
