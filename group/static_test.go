package group

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// staticGroup brings two static members "a" (leader) and "b" to Stable.
func (e *env) staticGroup(version int16) (ids map[string]string, gen int32) {
	e.t.Helper()
	ids = map[string]string{}
	chans := map[string]<-chan *kmsg.JoinGroupResponse{}
	for _, inst := range []string{"a", "b"} {
		inst := inst
		chans[inst] = e.joinAsync(version, "g", "", &inst, consumerMeta("t"))
		e.waitMembers("g", len(chans))
	}
	e.clock.Advance(2 * initialDelay)
	var leader string
	for inst, ch := range chans {
		r := await(e.t, ch)
		if r.ErrorCode != 0 {
			e.t.Fatalf("join %s: %d", inst, r.ErrorCode)
		}
		ids[inst], gen, leader = r.MemberID, r.Generation, r.LeaderID
	}
	if leader != ids["a"] {
		e.t.Fatalf("leader %s, want a's %s", leader, ids["a"])
	}
	a, b := "a", "b"
	sb := async[*kmsg.SyncGroupResponse](e, syncReq("g", ids["b"], gen, &b, nil))
	if r := do[*kmsg.SyncGroupResponse](e, syncReq("g", ids["a"], gen, &a, map[string][]byte{ids["a"]: []byte("A"), ids["b"]: []byte("B")})); r.ErrorCode != 0 {
		e.t.Fatalf("sync a: %d", r.ErrorCode)
	}
	if r := await(e.t, sb); r.ErrorCode != 0 || string(r.MemberAssignment) != "B" {
		e.t.Fatalf("sync b: %d %q", r.ErrorCode, r.MemberAssignment)
	}
	return ids, gen
}

func TestStaticMemberRestart(t *testing.T) {
	tests := []struct {
		name       string
		version    int16
		restart    string // instance id that restarts
		wantLeader func(ids map[string]string, newID string) string
		wantSkip   bool
		wantMeta   int // member metadata entries in the answer
	}{
		{"follower v5", 5, "b", func(ids map[string]string, _ string) string { return ids["a"] }, false, 0},
		{"follower v9", 9, "b", func(ids map[string]string, _ string) string { return ids["a"] }, false, 0},
		// Before v9 a restarted leader is told the old leader id, so it
		// does not assign; from v9 it leads with skip_assignment.
		{"leader v8", 8, "a", func(ids map[string]string, _ string) string { return ids["a"] }, false, 0},
		{"leader v9", 9, "a", func(_ map[string]string, newID string) string { return newID }, true, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nil)
			ids, gen := e.staticGroup(tt.version)
			inst := tt.restart
			r := do[*kmsg.JoinGroupResponse](e, joinReq(tt.version, "g", "", &inst, consumerMeta("t")))
			if r.ErrorCode != 0 || r.MemberID == "" || r.MemberID == ids[inst] {
				t.Fatalf("rejoin: error %d member %q (old %q)", r.ErrorCode, r.MemberID, ids[inst])
			}
			if r.Generation != gen {
				t.Fatalf("generation %d, want %d (no rebalance)", r.Generation, gen)
			}
			if want := tt.wantLeader(ids, r.MemberID); r.LeaderID != want {
				t.Fatalf("leader %q, want %q", r.LeaderID, want)
			}
			if r.SkipAssignment != tt.wantSkip || len(r.Members) != tt.wantMeta {
				t.Fatalf("skip %v members %d, want %v %d", r.SkipAssignment, len(r.Members), tt.wantSkip, tt.wantMeta)
			}
			if st := e.describe("g").State; st != "Stable" {
				t.Fatalf("state %s, want Stable", st)
			}
			s := do[*kmsg.SyncGroupResponse](e, syncReq("g", r.MemberID, gen, &inst, nil))
			want := map[string]string{"a": "A", "b": "B"}[inst]
			if s.ErrorCode != 0 || !bytes.Equal(s.MemberAssignment, []byte(want)) {
				t.Fatalf("sync: error %d assignment %q, want %q", s.ErrorCode, s.MemberAssignment, want)
			}
			if code := e.heartbeat("g", ids[inst], gen, &inst); code != kerr.FencedInstanceID.Code {
				t.Fatalf("old member heartbeat: %d, want FENCED_INSTANCE_ID", code)
			}
			if code := e.heartbeat("g", r.MemberID, gen, &inst); code != 0 {
				t.Fatalf("new member heartbeat: %d", code)
			}
			other := map[string]string{"a": "b", "b": "a"}[inst]
			if code := e.heartbeat("g", ids[other], gen, &other); code != 0 {
				t.Fatalf("other member heartbeat: %d, want no rebalance", code)
			}
		})
	}
}

// TestStaticMemberRestartClientState: a restarted consumer's metadata
// differs from what it last sent in its client state (generation, owned
// partitions, user data), not in its topics; that must not rebalance, or
// every restart of a cooperative-sticky or franz-go static member would.
func TestStaticMemberRestartClientState(t *testing.T) {
	e := newEnv(t, nil)
	ids, gen := e.staticGroup(9)
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Version = 3
	meta.Topics = []string{"t"}
	meta.Generation = -1
	meta.UserData = []byte("fresh")
	b := "b"
	// Without the fix the join waits for a rebalance (a never rejoins
	// here, and the fake clock does not move): await fails it.
	r := await(t, async[*kmsg.JoinGroupResponse](e, joinReq(9, "g", "", &b, meta.AppendTo(nil))))
	if r.ErrorCode != 0 || r.Generation != gen || r.MemberID == ids["b"] {
		t.Fatalf("rejoin: error %d generation %d (want %d) member %q", r.ErrorCode, r.Generation, gen, r.MemberID)
	}
	if st := e.describe("g").State; st != "Stable" {
		t.Fatalf("state %s, want Stable", st)
	}
}

func TestStaticMemberChangedMetadataRebalances(t *testing.T) {
	e := newEnv(t, nil)
	ids, gen := e.staticGroup(9)
	b := "b"
	j := async[*kmsg.JoinGroupResponse](e, joinReq(9, "g", "", &b, consumerMeta("t", "u")))
	e.waitState("g", "PreparingRebalance")
	a := "a"
	if code := e.heartbeat("g", ids["a"], gen, &a); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("a heartbeat: %d, want REBALANCE_IN_PROGRESS", code)
	}
	ra := do[*kmsg.JoinGroupResponse](e, joinReq(9, "g", ids["a"], &a, consumerMeta("t")))
	rb := await(t, j)
	if ra.Generation != gen+1 || rb.Generation != gen+1 || rb.ErrorCode != 0 {
		t.Fatalf("generations %d %d (error %d), want %d", ra.Generation, rb.Generation, rb.ErrorCode, gen+1)
	}
}

func TestLeaveGroup(t *testing.T) {
	e := newEnv(t, nil)
	ids, gen := e.staticGroup(9)
	a, b := "a", "b"
	nobody := "nobody"
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version = 5
	req.Group = "g"
	req.Members = []kmsg.LeaveGroupRequestMember{
		{MemberID: ids["a"], InstanceID: &a},
		{MemberID: "", InstanceID: &b}, // administrative removal by instance id
		{MemberID: "", InstanceID: &nobody},
		{MemberID: "ghost"},
		{MemberID: "wrong", InstanceID: &a}, // a is gone by now: unknown
	}
	resp := do[*kmsg.LeaveGroupResponse](e, req)
	want := []int16{0, 0, kerr.UnknownMemberID.Code, kerr.UnknownMemberID.Code, kerr.UnknownMemberID.Code}
	if resp.ErrorCode != 0 || len(resp.Members) != len(want) {
		t.Fatalf("error %d members %d", resp.ErrorCode, len(resp.Members))
	}
	for i, m := range resp.Members {
		t.Run(req.Members[i].MemberID, func(t *testing.T) {
			if m.ErrorCode != want[i] {
				t.Fatalf("member %d: error %d, want %d", i, m.ErrorCode, want[i])
			}
		})
	}
	d := e.describe("g")
	if d.State != "Empty" || len(d.Members) != 0 {
		t.Fatalf("after leave: state %s members %d", d.State, len(d.Members))
	}
	if code := e.heartbeat("g", ids["a"], gen, nil); code != kerr.UnknownMemberID.Code {
		t.Fatalf("heartbeat after leave: %d", code)
	}

	t.Run("v0 single member", func(t *testing.T) {
		e := newEnv(t, nil)
		ids, _ := e.stableGroup("g", 2)
		for _, tc := range []struct {
			id   string
			want int16
		}{{ids[1], 0}, {ids[1], kerr.UnknownMemberID.Code}} {
			r := kmsg.NewPtrLeaveGroupRequest()
			r.Version, r.Group, r.MemberID = 0, "g", tc.id
			if got := do[*kmsg.LeaveGroupResponse](e, r).ErrorCode; got != tc.want {
				t.Fatalf("leave %s: %d, want %d", tc.id, got, tc.want)
			}
		}
		if code := e.heartbeat("g", ids[0], 1, nil); code != kerr.RebalanceInProgress.Code {
			t.Fatalf("remaining member heartbeat: %d, want REBALANCE_IN_PROGRESS", code)
		}
	})
}
