package group

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/offsets"
)

func newShareEnv(t *testing.T, topics *fakeTopics, tweak func(*Options)) *env {
	return newEnv(t, func(o *Options) {
		o.Topics = topics
		if tweak != nil {
			tweak(o)
		}
	})
}

// sgHeartbeat sends one ShareGroupHeartbeat v1; topics nil leaves the
// subscription unchanged.
func (e *env) sgHeartbeat(group, member string, epoch int32, topics []string) *kmsg.ShareGroupHeartbeatResponse {
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.Version = 1
	req.GroupID, req.MemberID, req.MemberEpoch, req.SubscribedTopicNames = group, member, epoch, topics
	return do[*kmsg.ShareGroupHeartbeatResponse](e, req)
}

func (e *env) sgDescribe(group string) kmsg.ShareGroupDescribeResponseGroup {
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.Version = 1
	req.GroupIDs = []string{group}
	return do[*kmsg.ShareGroupDescribeResponse](e, req).Groups[0]
}

// shareHolders maps "topic-partition" to the members e's group g assigns
// it to, from the coordinator's ShareMember.
func shareHolders(e *env, g string, members ...string) map[string][]string {
	out := map[string][]string{}
	for _, m := range members {
		a, ok := e.c.ShareMember(g, m)
		if !ok {
			e.t.Fatalf("ShareMember(%s, %s): not a member", g, m)
		}
		for t, ps := range a {
			for _, p := range ps {
				k := fmt.Sprintf("%s-%d", strings.TrimRight(string(t[:]), "\x00"), p)
				out[k] = append(out[k], m)
			}
		}
	}
	return out
}

// settle heartbeats each member at its current epoch until none changes.
func settle(e *env, g string, epochs map[string]int32) {
	for range 5 {
		moved := false
		for _, m := range mapsKeys(epochs) {
			r := e.sgHeartbeat(g, m, epochs[m], nil)
			if r.ErrorCode != 0 {
				e.t.Fatalf("heartbeat %s: %s", m, kerr.ErrorForCode(r.ErrorCode))
			}
			if r.MemberEpoch != epochs[m] {
				epochs[m], moved = r.MemberEpoch, true
			}
		}
		if !moved {
			return
		}
	}
	e.t.Fatalf("members did not settle: %v", epochs)
}

func mapsKeys(m map[string]int32) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestShareGroupJoinAssignLeave: three members over three partitions each
// get one; a fourth member makes one partition shared... and when members
// leave, the rest cover every partition again.
func TestShareGroupJoinAssignLeave(t *testing.T) {
	e := newShareEnv(t, newFakeTopics(map[string]int32{"t": 3}), nil)
	epochs := map[string]int32{}
	for _, m := range []string{"a", "b", "c"} {
		r := e.sgHeartbeat("g", m, 0, []string{"t"})
		if r.ErrorCode != 0 || r.MemberID == nil || *r.MemberID != m || r.Assignment == nil {
			t.Fatalf("join %s: %+v", m, r)
		}
		if r.HeartbeatIntervalMillis != 5000 {
			t.Fatalf("heartbeat interval %d, want Kafka's default 5000", r.HeartbeatIntervalMillis)
		}
		epochs[m] = r.MemberEpoch
	}
	settle(e, "g", epochs)
	h := shareHolders(e, "g", "a", "b", "c")
	for p := range 3 {
		if k := fmt.Sprintf("t-%d", p); len(h[k]) != 1 {
			t.Fatalf("%s held by %v, want one member (3 members, 3 partitions)", k, h[k])
		}
	}
	// More members than partitions: every partition shared by ceil(5/3)=2.
	for _, m := range []string{"d", "e"} {
		epochs[m] = e.sgHeartbeat("g", m, 0, []string{"t"}).MemberEpoch
	}
	settle(e, "g", epochs)
	h = shareHolders(e, "g", "a", "b", "c", "d", "e")
	for p := range 3 {
		if k := fmt.Sprintf("t-%d", p); len(h[k]) != 2 {
			t.Fatalf("%s held by %v, want 2 (5 members, 3 partitions)", k, h[k])
		}
	}
	for _, m := range []string{"a", "b", "c", "d"} {
		if r := e.sgHeartbeat("g", m, -1, nil); r.ErrorCode != 0 || r.MemberEpoch != -1 {
			t.Fatalf("leave %s: %+v", m, r)
		}
		delete(epochs, m)
	}
	settle(e, "g", epochs)
	if h := shareHolders(e, "g", "e"); len(h) != 3 {
		t.Fatalf("last member holds %v, want all 3 partitions", h)
	}
	d := e.sgDescribe("g")
	if d.ErrorCode != 0 || d.GroupState != "Stable" || len(d.Members) != 1 || d.Assignor != "simple" || d.GroupEpoch != d.AssignmentEpoch {
		t.Fatalf("describe: %+v", d)
	}
	if _, ok := e.c.ShareMember("g", "a"); ok {
		t.Fatal("a left but is still a member")
	}
}

// TestShareGroupSessionTimeout: a silent member is removed when its session
// (the group's share.session.timeout.ms, here through ShareGroupConfigs)
// times out; the other then holds everything. The interval the members are
// told is the group's too.
func TestShareGroupSessionTimeout(t *testing.T) {
	cfg := DefaultShareGroupConfig()
	cfg.SessionTimeout, cfg.HeartbeatInterval = 8*time.Second, 2*time.Second
	e := newShareEnv(t, newFakeTopics(map[string]int32{"t": 2}), func(o *Options) {
		o.ShareGroupConfigs = func(g string) ShareGroupConfig {
			if g == "g" {
				return cfg
			}
			return DefaultShareGroupConfig()
		}
	})
	a := e.sgHeartbeat("g", "a", 0, []string{"t"})
	b := e.sgHeartbeat("g", "b", 0, []string{"t"})
	if a.HeartbeatIntervalMillis != 2000 {
		t.Fatalf("interval %d, want the group's 2000", a.HeartbeatIntervalMillis)
	}
	epochs := map[string]int32{"a": a.MemberEpoch, "b": b.MemberEpoch}
	settle(e, "g", epochs)
	for range 5 { // b keeps heartbeating, a is silent
		e.clock.Advance(2 * time.Second)
		r := e.sgHeartbeat("g", "b", epochs["b"], nil)
		if r.ErrorCode != 0 {
			t.Fatalf("b: %s", kerr.ErrorForCode(r.ErrorCode))
		}
		epochs["b"] = r.MemberEpoch
	}
	if r := e.sgHeartbeat("g", "a", epochs["a"], nil); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("a after its session timeout: %s, want UNKNOWN_MEMBER_ID", kerr.ErrorForCode(r.ErrorCode))
	}
	delete(epochs, "a")
	settle(e, "g", epochs)
	if h := shareHolders(e, "g", "b"); len(h) != 2 {
		t.Fatalf("b holds %v, want both partitions", h)
	}
}

// TestShareGroupReload: a restart replays the share group records from
// __consumer_offsets: the members, their epochs and assignments come back,
// and a member heartbeats on at its epoch.
func TestShareGroupReload(t *testing.T) {
	e := newShareEnv(t, newFakeTopics(map[string]int32{"t": 4, "u": 1}), nil)
	epochs := map[string]int32{}
	for _, m := range []string{"a", "b"} {
		epochs[m] = e.sgHeartbeat("g", m, 0, []string{"t", "u"}).MemberEpoch
	}
	settle(e, "g", epochs)
	before := e.sgDescribe("g")
	held := shareHolders(e, "g", "a", "b")
	e.restart()
	after := e.sgDescribe("g")
	if after.ErrorCode != 0 || after.GroupEpoch != before.GroupEpoch || after.AssignmentEpoch != before.AssignmentEpoch ||
		fmt.Sprint(after.Members) != fmt.Sprint(before.Members) {
		t.Fatalf("after reload:\n%+v\nbefore:\n%+v", after, before)
	}
	if h := shareHolders(e, "g", "a", "b"); fmt.Sprint(h) != fmt.Sprint(held) {
		t.Fatalf("assignment after reload %v, before %v", h, held)
	}
	for m, ep := range epochs {
		if r := e.sgHeartbeat("g", m, ep, nil); r.ErrorCode != 0 || r.MemberEpoch != ep {
			t.Fatalf("%s after reload: %s epoch %d", m, kerr.ErrorForCode(r.ErrorCode), r.MemberEpoch)
		}
	}
	// A member silent across the restart still times out.
	for range 12 {
		e.clock.Advance(5 * time.Second)
		if r := e.sgHeartbeat("g", "b", epochs["b"], nil); r.ErrorCode == 0 {
			epochs["b"] = r.MemberEpoch
		}
	}
	if _, ok := e.c.ShareMember("g", "a"); ok {
		t.Fatal("a, silent after the reload, was not removed by its session timeout")
	}
}

// TestShareGroupNewPartitionsAndSubscriptions: partitions added to a
// subscribed topic and a changed subscription bump the group epoch and
// reach the members.
func TestShareGroupNewPartitionsAndSubscriptions(t *testing.T) {
	topics := newFakeTopics(map[string]int32{"t": 1, "u": 2})
	e := newShareEnv(t, topics, nil)
	r := e.sgHeartbeat("g", "a", 0, []string{"t"})
	ep := r.MemberEpoch
	topics.set("t", 3)
	r = e.sgHeartbeat("g", "a", ep, nil)
	if r.MemberEpoch <= ep || r.Assignment == nil || len(r.Assignment.TopicPartitions) != 1 || len(r.Assignment.TopicPartitions[0].Partitions) != 3 {
		t.Fatalf("after t grew to 3 partitions: %+v", r)
	}
	ep = r.MemberEpoch
	r = e.sgHeartbeat("g", "a", ep, []string{"t", "u"})
	n := 0
	for _, tp := range r.Assignment.TopicPartitions {
		n += len(tp.Partitions)
	}
	if r.ErrorCode != 0 || r.MemberEpoch <= ep || n != 5 {
		t.Fatalf("after subscribing to u: %+v (%d partitions)", r, n)
	}
}

// TestShareGroupBadRequests: hostile or wrong heartbeats get Kafka's error
// codes, never a panic or a member.
func TestShareGroupBadRequests(t *testing.T) {
	e := newShareEnv(t, newFakeTopics(map[string]int32{"t": 1}), func(o *Options) { o.ShareMaxSize = 2 })
	many := make([]string, 20000)
	for i := range many {
		many[i] = fmt.Sprintf("no-such-topic-%d", i)
	}
	long := strings.Repeat("x", 40000)
	cases := []struct {
		name          string
		group, member string
		epoch         int32
		topics        []string
		want          int16
	}{
		{"empty member id", "g", "", 0, []string{"t"}, kerr.InvalidRequest.Code},
		{"blank member id", "g", "  ", 0, []string{"t"}, kerr.InvalidRequest.Code},
		{"member id too long", "g", long, 0, []string{"t"}, kerr.InvalidRequest.Code},
		{"empty group", "", "m", 0, []string{"t"}, kerr.InvalidRequest.Code},
		{"join without topics", "g", "m", 0, nil, kerr.InvalidRequest.Code},
		{"epoch -2", "g", "m", -2, nil, kerr.InvalidRequest.Code},
		{"unknown group", "nope", "m", 3, nil, kerr.GroupIDNotFound.Code},
		{"topic name too long", "g", "m", 0, []string{long}, kerr.InvalidRequest.Code},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if r := e.sgHeartbeat(c.group, c.member, c.epoch, c.topics); r.ErrorCode != c.want {
				t.Fatalf("code %s, want %s", kerr.ErrorForCode(r.ErrorCode), kerr.ErrorForCode(c.want))
			}
		})
	}
	// Unknown topics are subscribed to but assign nothing.
	r := e.sgHeartbeat("g", "many", 0, many)
	if r.ErrorCode != 0 || r.Assignment == nil || len(r.Assignment.TopicPartitions) != 0 {
		t.Fatalf("member of 20000 unknown topics: %s %+v", kerr.ErrorForCode(r.ErrorCode), r.Assignment)
	}
	if r := e.sgHeartbeat("g", "many", r.MemberEpoch+5, nil); r.ErrorCode != kerr.FencedMemberEpoch.Code {
		t.Fatalf("epoch ahead: %s, want FENCED_MEMBER_EPOCH", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := e.sgHeartbeat("g", "other", 3, nil); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("unknown member: %s", kerr.ErrorForCode(r.ErrorCode))
	}
	e.sgHeartbeat("g", "second", 0, []string{"t"})
	if r := e.sgHeartbeat("g", "third", 0, []string{"t"}); r.ErrorCode != kerr.GroupMaxSizeReached.Code {
		t.Fatalf("third member of a group of max size 2: %s", kerr.ErrorForCode(r.ErrorCode))
	}
	// A consumer group's name is not a share group.
	if c := e.cgHeartbeat("cg", "m", 0, []string{"t"}, nil, 5000); c.ErrorCode != 0 {
		t.Fatalf("consumer join: %d", c.ErrorCode)
	}
	if r := e.sgHeartbeat("cg", "m", 0, []string{"t"}); r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("share join of a consumer group: %s", kerr.ErrorForCode(r.ErrorCode))
	}
	if c := e.cgHeartbeat("g", "m", 0, []string{"t"}, nil, 5000); c.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("consumer join of a share group: %d", c.ErrorCode)
	}
	if d := e.sgDescribe("cg"); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("share describe of a consumer group: %d", d.ErrorCode)
	}
}

// TestShareGroupListDelete: share groups are listed with type share and
// their state, filtered by type and state; DeleteGroups refuses one with
// members and deletes an empty one.
func TestShareGroupListDelete(t *testing.T) {
	e := newShareEnv(t, newFakeTopics(map[string]int32{"t": 1}), nil)
	r := e.sgHeartbeat("sg", "a", 0, []string{"t"})
	list := func(types, states []string) []kmsg.ListGroupsResponseGroup {
		req := kmsg.NewPtrListGroupsRequest()
		req.Version = 5
		req.TypesFilter, req.StatesFilter = types, states
		return do[*kmsg.ListGroupsResponse](e, req).Groups
	}
	gs := list([]string{"share"}, nil)
	if len(gs) != 1 || gs[0].Group != "sg" || gs[0].GroupType != "share" || gs[0].ProtocolType != "share" || gs[0].GroupState != "Stable" {
		t.Fatalf("list share: %+v", gs)
	}
	if gs := list([]string{"consumer"}, nil); len(gs) != 0 {
		t.Fatalf("list consumer: %+v", gs)
	}
	del := func() int16 {
		req := kmsg.NewPtrDeleteGroupsRequest()
		req.Version = 2
		req.Groups = []string{"sg"}
		return do[*kmsg.DeleteGroupsResponse](e, req).Groups[0].ErrorCode
	}
	if c := del(); c != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete with a member: %s", kerr.ErrorForCode(c))
	}
	e.sgHeartbeat("sg", "a", r.MemberEpoch, nil)
	e.sgHeartbeat("sg", "a", -1, nil)
	if gs := list(nil, []string{"Empty"}); len(gs) != 1 || gs[0].Group != "sg" {
		t.Fatalf("list Empty: %+v", gs)
	}
	if dg := e.describe("sg"); dg.State != "Dead" || dg.ErrorCode != 0 || len(dg.Members) != 0 {
		t.Fatalf("DescribeGroups of a share group: %+v", dg)
	}
	if c := del(); c != 0 {
		t.Fatalf("delete empty: %s", kerr.ErrorForCode(c))
	}
	if gs := list(nil, nil); len(gs) != 0 {
		t.Fatalf("after delete: %+v", gs)
	}
	e.restart()
	if gs := list(nil, nil); len(gs) != 0 {
		t.Fatalf("deleted group came back after a reload: %+v", gs)
	}
}

// TestShareGroupPersistFailure: a heartbeat whose records cannot be
// appended changes nothing: the join is refused with a coordinator error
// and leaves no group behind; a known member keeps its epoch.
func TestShareGroupPersistFailure(t *testing.T) {
	var fail atomic.Bool
	e := newShareEnv(t, newFakeTopics(map[string]int32{"t": 2}), nil)
	real := e.c.opts.PersistShare
	e.c.opts.PersistShare = func(ctx context.Context, g string, recs []offsets.ShareRecord) error {
		if fail.Load() {
			return errors.New("disk on fire")
		}
		return real(ctx, g, recs)
	}
	fail.Store(true)
	if r := e.sgHeartbeat("g", "a", 0, []string{"t"}); r.ErrorCode == 0 {
		t.Fatal("join succeeded without its records")
	}
	if e.c.isShareGroup("g") {
		t.Fatal("a failed first join left a group behind")
	}
	fail.Store(false)
	a := e.sgHeartbeat("g", "a", 0, []string{"t"})
	if a.ErrorCode != 0 {
		t.Fatalf("join: %s", kerr.ErrorForCode(a.ErrorCode))
	}
	fail.Store(true)
	if r := e.sgHeartbeat("g", "b", 0, []string{"t"}); r.ErrorCode == 0 {
		t.Fatal("second join succeeded without its records")
	}
	fail.Store(false)
	if d := e.sgDescribe("g"); len(d.Members) != 1 || d.GroupEpoch != a.MemberEpoch {
		t.Fatalf("after a failed join: %+v", d)
	}
}

// TestShareGroupConcurrent: members heartbeat from several goroutines
// while sessions expire (run with -race); every partition stays covered by
// the members left.
func TestShareGroupConcurrent(t *testing.T) {
	e := newShareEnv(t, newFakeTopics(map[string]int32{"t": 5}), nil)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("m%d", i)
			ep := e.sgHeartbeat("g", id, 0, []string{"t"}).MemberEpoch
			for range 20 {
				r := e.sgHeartbeat("g", id, ep, nil)
				switch r.ErrorCode {
				case 0:
					ep = r.MemberEpoch
				case kerr.UnknownMemberID.Code, kerr.FencedMemberEpoch.Code:
					ep = e.sgHeartbeat("g", id, 0, []string{"t"}).MemberEpoch
				default:
					t.Errorf("%s: %s", id, kerr.ErrorForCode(r.ErrorCode))
					return
				}
				if i == 0 {
					e.clock.Advance(10 * time.Second)
				}
			}
		}()
	}
	wg.Wait()
	d := e.sgDescribe("g")
	if d.ErrorCode != 0 {
		t.Fatalf("describe: %s", kerr.ErrorForCode(d.ErrorCode))
	}
	epochs := map[string]int32{}
	for _, m := range d.Members {
		epochs[m.MemberID] = m.MemberEpoch
	}
	settle(e, "g", epochs)
	ids := mapsKeys(epochs)
	if h := shareHolders(e, "g", ids...); len(h) != 5 {
		t.Fatalf("%d members cover %v, want all 5 partitions", len(ids), h)
	}
}

// TestShareGroupOffsetAPIs: OffsetCommit, OffsetFetch and OffsetDelete of a
// share group's name are GROUP_ID_NOT_FOUND, as Kafka's (share offsets
// live in __share_group_state), and create no classic group.
func TestShareGroupOffsetAPIs(t *testing.T) {
	e := newShareEnv(t, newFakeTopics(map[string]int32{"t": 1}), nil)
	e.sgHeartbeat("g", "a", 0, []string{"t"})
	if c := e.commit("g", "", -1, "t", 0, 5); c != kerr.GroupIDNotFound.Code {
		t.Fatalf("OffsetCommit: %s", kerr.ErrorForCode(c))
	}
	f := kmsg.NewPtrOffsetFetchRequest()
	f.Version, f.Group = 7, "g"
	if r := do[*kmsg.OffsetFetchResponse](e, f); r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("OffsetFetch: %s", kerr.ErrorForCode(r.ErrorCode))
	}
	d := kmsg.NewPtrOffsetDeleteRequest()
	d.Group = "g"
	if r := do[*kmsg.OffsetDeleteResponse](e, d); r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("OffsetDelete: %s", kerr.ErrorForCode(r.ErrorCode))
	}
	if e.c.getGroup("g", false) != nil {
		t.Fatal("a classic group was made with a share group's name")
	}
}
