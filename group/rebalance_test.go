package group

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestJoinSyncThreeMembers(t *testing.T) {
	e := newEnv(t, nil)
	chans := []<-chan *kmsg.JoinGroupResponse{}
	for i := 0; i < 3; i++ {
		chans = append(chans, e.joinAsync(9, "g", "", nil, consumerMeta("t", fmt.Sprint("m", i))))
	}
	e.waitMembers("g", 3)
	if st := e.describe("g").State; st != "PreparingRebalance" {
		t.Fatalf("state while the initial delay runs = %s, want PreparingRebalance", st)
	}
	e.clock.Advance(initialDelay)
	if st := e.describe("g").State; st != "PreparingRebalance" {
		t.Fatalf("state after one initial delay = %s, want PreparingRebalance (extended)", st)
	}
	e.clock.Advance(initialDelay)

	var resps []*kmsg.JoinGroupResponse
	for _, ch := range chans {
		resps = append(resps, await(t, ch))
	}
	leaderID := resps[0].LeaderID
	var leader *kmsg.JoinGroupResponse
	for _, r := range resps {
		t.Run("join/"+r.MemberID, func(t *testing.T) {
			if r.ErrorCode != 0 || r.Generation != 1 || r.LeaderID != leaderID {
				t.Fatalf("error %d generation %d leader %q, want 0, 1, %q", r.ErrorCode, r.Generation, r.LeaderID, leaderID)
			}
			if r.Protocol == nil || *r.Protocol != "range" || r.ProtocolType == nil || *r.ProtocolType != "consumer" {
				t.Fatalf("protocol %v type %v", r.Protocol, r.ProtocolType)
			}
			if r.MemberID == leaderID {
				leader = r
				if len(r.Members) != 3 {
					t.Fatalf("leader got %d members' metadata, want 3", len(r.Members))
				}
			} else if len(r.Members) != 0 {
				t.Fatalf("follower got %d members' metadata, want 0", len(r.Members))
			}
		})
	}
	if leader == nil {
		t.Fatal("no leader")
	}
	assign := map[string][]byte{}
	for _, m := range leader.Members {
		var md kmsg.ConsumerMemberMetadata
		if err := md.ReadFrom(m.ProtocolMetadata); err != nil {
			t.Fatal(err)
		}
		assign[m.MemberID] = []byte("for " + md.Topics[1])
	}
	var syncs = map[string]<-chan *kmsg.SyncGroupResponse{}
	for _, r := range resps {
		if r.MemberID != leaderID {
			syncs[r.MemberID] = async[*kmsg.SyncGroupResponse](e, syncReq("g", r.MemberID, 1, nil, nil))
		}
	}
	ls := do[*kmsg.SyncGroupResponse](e, syncReq("g", leaderID, 1, nil, assign))
	if ls.ErrorCode != 0 || !bytes.Equal(ls.MemberAssignment, assign[leaderID]) {
		t.Fatalf("leader sync: error %d assignment %q", ls.ErrorCode, ls.MemberAssignment)
	}
	for id, ch := range syncs {
		r := await(t, ch)
		if r.ErrorCode != 0 || !bytes.Equal(r.MemberAssignment, assign[id]) {
			t.Fatalf("sync %s: error %d assignment %q, want %q", id, r.ErrorCode, r.MemberAssignment, assign[id])
		}
	}
	d := e.describe("g")
	if d.State != "Stable" || d.Protocol != "range" || len(d.Members) != 3 {
		t.Fatalf("describe: state %s protocol %s members %d", d.State, d.Protocol, len(d.Members))
	}
	for _, m := range d.Members {
		if !bytes.Equal(m.MemberAssignment, assign[m.MemberID]) {
			t.Fatalf("describe member %s assignment %q", m.MemberID, m.MemberAssignment)
		}
	}
	for _, r := range resps {
		if code := e.heartbeat("g", r.MemberID, 1, nil); code != 0 {
			t.Fatalf("heartbeat: %d", code)
		}
	}
}

func TestMemberIDRequired(t *testing.T) {
	for v := int16(0); v <= 9; v++ {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			e := newEnv(t, func(o *Options) { o.InitialRebalanceDelay = 0 })
			r := do[*kmsg.JoinGroupResponse](e, joinReq(v, "g", "", nil, consumerMeta("t")))
			if r.MemberID == "" {
				t.Fatal("no member id")
			}
			if v >= 4 {
				if r.ErrorCode != kerr.MemberIDRequired.Code || r.Generation != -1 {
					t.Fatalf("error %d generation %d, want MEMBER_ID_REQUIRED, -1", r.ErrorCode, r.Generation)
				}
				r = do[*kmsg.JoinGroupResponse](e, joinReq(v, "g", r.MemberID, nil, consumerMeta("t")))
			}
			if r.ErrorCode != 0 || r.Generation != 1 || r.LeaderID != r.MemberID {
				t.Fatalf("join: error %d generation %d leader %q member %q", r.ErrorCode, r.Generation, r.LeaderID, r.MemberID)
			}
		})
	}
}

func TestJoinErrors(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.InitialRebalanceDelay = 0 })
	ids, gen := e.stableGroup("g", 1)
	_ = gen
	tests := []struct {
		name string
		req  func() *kmsg.JoinGroupRequest
		want int16
	}{
		{"session too short", func() *kmsg.JoinGroupRequest {
			r := joinReq(9, "g", "", nil, nil)
			r.SessionTimeoutMillis = 10
			return r
		}, kerr.InvalidSessionTimeout.Code},
		{"session too long", func() *kmsg.JoinGroupRequest {
			r := joinReq(9, "g", "", nil, nil)
			r.SessionTimeoutMillis = 1 << 30
			return r
		}, kerr.InvalidSessionTimeout.Code},
		{"empty group id", func() *kmsg.JoinGroupRequest { return joinReq(9, "", "", nil, nil) }, kerr.InvalidGroupID.Code},
		{"unknown member", func() *kmsg.JoinGroupRequest { return joinReq(9, "g", "nobody", nil, nil) }, kerr.UnknownMemberID.Code},
		{"unknown member, unknown group", func() *kmsg.JoinGroupRequest { return joinReq(9, "other", "nobody", nil, nil) }, kerr.UnknownMemberID.Code},
		{"other protocol type", func() *kmsg.JoinGroupRequest {
			r := joinReq(9, "g", "", nil, nil)
			r.ProtocolType = "connect"
			return r
		}, kerr.InconsistentGroupProtocol.Code},
		{"no common protocol", func() *kmsg.JoinGroupRequest {
			r := joinReq(9, "g", "", nil, nil)
			r.Protocols[0].Name = "roundrobin"
			return r
		}, kerr.InconsistentGroupProtocol.Code},
		{"empty protocols in new group", func() *kmsg.JoinGroupRequest {
			r := joinReq(9, "new", "", nil, nil)
			r.Protocols = nil
			return r
		}, kerr.InconsistentGroupProtocol.Code},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if r := do[*kmsg.JoinGroupResponse](e, tt.req()); r.ErrorCode != tt.want {
				t.Fatalf("error %d, want %d", r.ErrorCode, tt.want)
			}
		})
	}
	if st := e.describe("g").State; st != "Stable" || len(e.describe("g").Members) != len(ids) {
		t.Fatalf("failed joins disturbed the group: %s", st)
	}
}

func TestSessionExpiry(t *testing.T) {
	e := newEnv(t, nil)
	ids, gen := e.stableGroup("g", 3)
	a, b, dead := ids[0], ids[1], ids[2]

	// a and b heartbeat at 6s intervals; dead does not.
	e.clock.Advance(testSession * 6 / 10)
	for _, id := range []string{a, b} {
		if code := e.heartbeat("g", id, gen, nil); code != 0 {
			t.Fatalf("heartbeat %s: %d", id, code)
		}
	}
	e.clock.Advance(testSession * 6 / 10) // dead's session expires
	for _, id := range []string{a, b} {
		if code := e.heartbeat("g", id, gen, nil); code != kerr.RebalanceInProgress.Code {
			t.Fatalf("heartbeat %s after expiry: %d, want REBALANCE_IN_PROGRESS", id, code)
		}
	}
	if code := e.heartbeat("g", dead, gen, nil); code != kerr.UnknownMemberID.Code {
		t.Fatalf("expired member heartbeat: %d, want UNKNOWN_MEMBER_ID", code)
	}
	ja := async[*kmsg.JoinGroupResponse](e, joinReq(9, "g", a, nil, consumerMeta("t")))
	jb := async[*kmsg.JoinGroupResponse](e, joinReq(9, "g", b, nil, consumerMeta("t")))
	ra, rb := await(t, ja), await(t, jb)
	for _, r := range []*kmsg.JoinGroupResponse{ra, rb} {
		if r.ErrorCode != 0 || r.Generation != gen+1 {
			t.Fatalf("rejoin %s: error %d generation %d, want %d", r.MemberID, r.ErrorCode, r.Generation, gen+1)
		}
	}
	leader := ra
	if rb.MemberID == rb.LeaderID {
		leader = rb
	}
	if len(leader.Members) != 2 {
		t.Fatalf("leader sees %d members, want 2", len(leader.Members))
	}
}

func TestRebalanceTimeoutRemovesLaggard(t *testing.T) {
	e := newEnv(t, nil)
	ids, gen := e.stableGroup("g", 2)
	leader, laggard := ids[0], ids[1]
	// The leader rejoining starts a rebalance; the laggard never rejoins
	// but keeps heartbeating, so only the rebalance timeout removes it.
	j := async[*kmsg.JoinGroupResponse](e, joinReq(9, "g", leader, nil, consumerMeta("t")))
	e.waitState("g", "PreparingRebalance")
	for i := 0; i < 4; i++ {
		if code := e.heartbeat("g", laggard, gen, nil); code != kerr.RebalanceInProgress.Code {
			t.Fatalf("laggard heartbeat: %d", code)
		}
		e.clock.Advance(testRebalance / 4)
	}
	r := await(t, j)
	if r.ErrorCode != 0 || r.Generation != gen+1 || len(r.Members) != 1 || r.Members[0].MemberID != leader {
		t.Fatalf("join: error %d generation %d members %v", r.ErrorCode, r.Generation, r.Members)
	}
	if code := e.heartbeat("g", laggard, gen, nil); code != kerr.UnknownMemberID.Code {
		t.Fatalf("removed laggard heartbeat: %d, want UNKNOWN_MEMBER_ID", code)
	}
	s := do[*kmsg.SyncGroupResponse](e, syncReq("g", leader, r.Generation, nil, nil))
	if s.ErrorCode != 0 || e.describe("g").State != "Stable" {
		t.Fatalf("sync: %d state %s", s.ErrorCode, e.describe("g").State)
	}
}

func (e *env) waitState(group, state string) {
	e.t.Helper()
	for i := 0; i < 2000; i++ {
		if e.describe(group).State == state {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	e.t.Fatalf("group %s never reached %s", group, state)
}
