package group

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// describe848 is group g's ConsumerGroupDescribe v1 answer.
func (e *env) describe848(group string) kmsg.ConsumerGroupDescribeResponseGroup {
	e.t.Helper()
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Version = 1
	req.Groups = []string{group}
	return do[*kmsg.ConsumerGroupDescribeResponse](e, req).Groups[0]
}

// classicIn joins classic member id into group g (a consumer group with
// members) and syncs it; it returns its generation.
func (e *env) classicIn(group, id string) int32 {
	e.t.Helper()
	j := do[*kmsg.JoinGroupResponse](e, joinReq(9, group, id, nil, consumerMeta("t")))
	if j.ErrorCode != 0 || j.LeaderID != "" || j.MemberID != id {
		e.t.Fatalf("classic join: %+v", j)
	}
	if s := do[*kmsg.SyncGroupResponse](e, syncReq(group, id, j.Generation, nil, nil)); s.ErrorCode != 0 {
		e.t.Fatalf("classic sync: %s", kerr.ErrorForCode(s.ErrorCode))
	}
	return j.Generation
}

// TestClassicMemberTimeouts: a classic member of a consumer group is
// removed, as Kafka does, when its session (of its JoinGroup) expires, when
// it keeps heartbeating but does not rejoin within its rebalance timeout
// after REBALANCE_IN_PROGRESS, and when it joins but does not sync within
// it.
func TestClassicMemberTimeouts(t *testing.T) {
	members := func(e *env) int { return len(e.describe848("g").Members) }
	t.Run("timeout=session", func(t *testing.T) {
		e := newConsumerEnv(t, newFakeTopics(map[string]int32{"t": 4}), nil)
		e.cgHeartbeat("g", "a", 0, []string{"t"}, nil, 5000)
		gen := e.classicIn("g", "c")
		e.clock.Advance(testSession / 2)
		if code := e.heartbeat("g", "c", gen, nil); code != 0 && code != kerr.RebalanceInProgress.Code {
			t.Fatalf("heartbeat: %s", kerr.ErrorForCode(code))
		}
		e.clock.Advance(testSession - time.Second)
		if members(e) != 2 {
			t.Fatal("removed before its session expired")
		}
		e.clock.Advance(2 * time.Second)
		if members(e) != 1 {
			t.Fatalf("%d members after the classic member's session expired", members(e))
		}
		if code := e.heartbeat("g", "c", gen, nil); code != kerr.UnknownMemberID.Code {
			t.Fatalf("heartbeat after expiry: %s", kerr.ErrorForCode(code))
		}
	})
	t.Run("timeout=join", func(t *testing.T) {
		e := newConsumerEnv(t, newFakeTopics(map[string]int32{"t": 4}), nil)
		e.cgHeartbeat("g", "a", 0, []string{"t"}, nil, 5000)
		gen := e.classicIn("g", "c")
		e.cgHeartbeat("g", "b", 0, []string{"t"}, nil, 5000) // the group epoch moves
		if code := e.heartbeat("g", "c", gen, nil); code != kerr.RebalanceInProgress.Code {
			t.Fatalf("heartbeat after the epoch moved: %s", kerr.ErrorForCode(code))
		}
		// It keeps heartbeating, never rejoining.
		for range int(testRebalance/time.Second) - 1 {
			e.clock.Advance(time.Second)
			e.heartbeat("g", "c", gen, nil)
		}
		if members(e) != 3 {
			t.Fatal("removed before its rebalance timeout")
		}
		e.clock.Advance(2 * time.Second)
		if members(e) != 2 {
			t.Fatalf("%d members after the join timeout", members(e))
		}
	})
	t.Run("timeout=sync", func(t *testing.T) {
		e := newConsumerEnv(t, newFakeTopics(map[string]int32{"t": 4}), nil)
		e.cgHeartbeat("g", "a", 0, []string{"t"}, nil, 5000)
		j := do[*kmsg.JoinGroupResponse](e, joinReq(9, "g", "c", nil, consumerMeta("t")))
		if j.ErrorCode != 0 {
			t.Fatalf("join: %s", kerr.ErrorForCode(j.ErrorCode))
		}
		for range int(testRebalance/time.Second) - 1 {
			e.clock.Advance(time.Second)
			e.heartbeat("g", "c", j.Generation, nil)
		}
		if members(e) != 2 {
			t.Fatal("removed before its rebalance timeout")
		}
		e.clock.Advance(2 * time.Second)
		if members(e) != 1 {
			t.Fatalf("%d members after the sync timeout", members(e))
		}
	})
}

// TestDowngradeOnSessionTimeout: the consumer-protocol member of a group
// whose other member is classic goes silent; when its session expires the
// group becomes a classic group in PreparingRebalance (Kafka's downgrade in
// consumerGroupFenceMember), and the classic member is told to rejoin;
// under policy "upgrade" the group stays a consumer group.
func TestDowngradeOnSessionTimeout(t *testing.T) {
	for _, policy := range []string{"bidirectional", "upgrade"} {
		t.Run("policy="+policy, func(t *testing.T) {
			e := newConsumerEnv(t, newFakeTopics(map[string]int32{"t": 4}), func(o *Options) {
				o.ConsumerSessionTimeout = 30 * time.Second
				o.ConsumerMigrationPolicy = policy
			})
			e.cgHeartbeat("g", "a", 0, []string{"t"}, nil, 5000)
			gen := e.classicIn("g", "c")
			for range 35 {
				e.clock.Advance(time.Second)
				if code := e.heartbeat("g", "c", gen, nil); code != 0 && code != kerr.RebalanceInProgress.Code && code != kerr.IllegalGeneration.Code {
					t.Fatalf("classic heartbeat: %s", kerr.ErrorForCode(code))
				}
			}
			d := e.describe848("g")
			dg := e.describe("g")
			if policy == "upgrade" {
				if d.ErrorCode != 0 || len(d.Members) != 1 || d.Members[0].MemberID != "c" {
					t.Fatalf("under upgrade: %+v", d)
				}
				return
			}
			if d.ErrorCode != kerr.GroupIDNotFound.Code {
				t.Fatalf("still a consumer group: %+v", d)
			}
			if len(dg.Members) != 1 || dg.Members[0].MemberID != "c" || dg.ProtocolType != "consumer" {
				t.Fatalf("classic group after the downgrade: %+v", dg)
			}
			// The classic member rejoins the classic group it now is.
			ch := e.joinAsync(9, "g", "c", nil, consumerMeta("t"))
			j := await(t, ch)
			if j.ErrorCode != 0 || j.LeaderID != "c" {
				t.Fatalf("rejoin after the downgrade: %+v", j)
			}
		})
	}
}

// FuzzClassicJoinConsumerGroup: a classic JoinGroup into a consumer group
// carries protocol metadata from the input, then syncs and heartbeats.
// Invariants: the coordinator never panics or answers a Go error; malformed
// metadata is refused with an error code and leaves the group as it was;
// partitions are never held twice.
func FuzzClassicJoinConsumerGroup(f *testing.F) {
	f.Add(consumerMeta("t"))
	f.Add([]byte{0, 3, 0, 0, 0, 1, 0, 1, 't', 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 't', 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 5, 0, 2, 'r', '1'})
	f.Add([]byte{0, 0, 0x7f, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, md []byte) {
		e := newConsumerEnv(t, newFakeTopics(map[string]int32{"t": 4}), nil)
		e.cgHeartbeat("g", "a", 0, []string{"t"}, nil, 5000)
		j := do[*kmsg.JoinGroupResponse](e, joinReq(9, "g", "c", nil, md))
		if j.ErrorCode != 0 {
			if n := len(e.describe848("g").Members); n != 1 {
				t.Fatalf("a refused join left %d members", n)
			}
			return
		}
		s := do[*kmsg.SyncGroupResponse](e, syncReq("g", "c", j.Generation, nil, nil))
		if s.ErrorCode == 0 {
			var a kmsg.ConsumerMemberAssignment
			if err := a.ReadFrom(s.MemberAssignment); err != nil {
				t.Fatalf("assignment does not decode: %v", err)
			}
		}
		e.heartbeat("g", "c", j.Generation, nil)
		checkConsumerGroup(t, e)
	})
}

// FuzzUpgradeClassicGroup: a classic group whose member sent metadata and
// an assignment from the input is joined by a ConsumerGroupHeartbeat.
// Invariants: no panic, no Go error; the heartbeat either upgrades the group
// (then partitions are held at most once) or gets GROUP_ID_NOT_FOUND and
// the classic group keeps its member.
func FuzzUpgradeClassicGroup(f *testing.F) {
	asg := kmsg.NewConsumerMemberAssignment()
	asg.Topics = []kmsg.ConsumerMemberAssignmentTopic{{Topic: "t", Partitions: []int32{0, 1, 1, 7, -3}}}
	f.Add(consumerMeta("t"), asg.AppendTo(nil))
	f.Add([]byte{0, 0}, []byte{0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, md, asg []byte) {
		e := newConsumerEnv(t, newFakeTopics(map[string]int32{"t": 4}), func(o *Options) { o.InitialRebalanceDelay = 0 })
		j := await(t, e.joinAsync(9, "g", "", nil, md))
		if j.ErrorCode != 0 {
			t.Fatalf("classic join: %s", kerr.ErrorForCode(j.ErrorCode))
		}
		if s := await(t, async[*kmsg.SyncGroupResponse](e, syncReq("g", j.MemberID, j.Generation, nil, map[string][]byte{j.MemberID: asg}))); s.ErrorCode != 0 {
			t.Fatalf("classic sync: %s", kerr.ErrorForCode(s.ErrorCode))
		}
		r := e.cgHeartbeat("g", "n", 0, []string{"t"}, nil, 5000)
		switch r.ErrorCode {
		case 0:
			if n := len(e.describe848("g").Members); n != 2 {
				t.Fatalf("upgraded group has %d members", n)
			}
			checkConsumerGroup(t, e)
		case kerr.GroupIDNotFound.Code:
			if dg := e.describe("g"); len(dg.Members) != 1 {
				t.Fatalf("refused upgrade: classic group %+v", dg)
			}
		default:
			t.Fatalf("upgrade: %s", kerr.ErrorForCode(r.ErrorCode))
		}
	})
}
