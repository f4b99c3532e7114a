package group

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestOffsetCommitFetch(t *testing.T) {
	e := newEnv(t, nil)
	ids, gen := e.stableGroup("g", 2)
	tests := []struct {
		name     string
		group    string
		member   string
		gen      int32
		want     int16
		stored   bool
		offset   int64
		checkOff int64
	}{
		{"member commit", "g", ids[1], gen, 0, true, 10, 10},
		{"member, old generation", "g", ids[1], gen - 1, kerr.IllegalGeneration.Code, false, 11, 10},
		{"unknown member", "g", "ghost", gen, kerr.UnknownMemberID.Code, false, 12, 10},
		{"simple commit into a group with members", "g", "", -1, kerr.UnknownMemberID.Code, false, 13, 10},
		{"simple commit, new group", "simple", "", -1, 0, true, 5, 5},
		{"simple commit again", "simple", "", -1, 0, true, 6, 6},
		{"member of an unknown group", "nogroup", "x", 3, kerr.IllegalGeneration.Code, false, 1, -1},
		{"empty group id", "", "", -1, kerr.InvalidGroupID.Code, false, 1, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := e.commit(tt.group, tt.member, tt.gen, "t", 0, tt.offset); got != tt.want {
				t.Fatalf("commit: %d, want %d", got, tt.want)
			}
			if tt.group == "" {
				return
			}
			if got := e.fetch(tt.group, "t", 0); got != tt.checkOff {
				t.Fatalf("fetched %d, want %d", got, tt.checkOff)
			}
		})
	}
	t.Run("unknown partition", func(t *testing.T) {
		if got := e.fetch("g", "t", 7); got != -1 {
			t.Fatalf("fetched %d, want -1", got)
		}
	})
	t.Run("v8 several groups, all partitions", func(t *testing.T) {
		r := kmsg.NewPtrOffsetFetchRequest()
		r.Version = 8
		r.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g"}, {Group: "simple"}, {Group: "none"}}
		resp := do[*kmsg.OffsetFetchResponse](e, r)
		want := map[string]int64{"g": 10, "simple": 6}
		for _, g := range resp.Groups {
			if g.ErrorCode != 0 {
				t.Fatalf("group %s: error %d", g.Group, g.ErrorCode)
			}
			if w, ok := want[g.Group]; !ok {
				if len(g.Topics) != 0 {
					t.Fatalf("group %s: %d topics, want none", g.Group, len(g.Topics))
				}
			} else if len(g.Topics) != 1 || g.Topics[0].Partitions[0].Offset != w {
				t.Fatalf("group %s: %+v, want offset %d", g.Group, g.Topics, w)
			}
		}
	})
	t.Run("commit while completing rebalance", func(t *testing.T) {
		e := newEnv(t, nil)
		ids, gen := e.stableGroup("g", 2)
		ja := async[*kmsg.JoinGroupResponse](e, joinReq(9, "g", ids[0], nil, consumerMeta("t")))
		e.waitState("g", "PreparingRebalance")
		// Commits are allowed while preparing.
		if got := e.commit("g", ids[1], gen, "t", 0, 1); got != 0 {
			t.Fatalf("commit while preparing: %d", got)
		}
		rb := do[*kmsg.JoinGroupResponse](e, joinReq(9, "g", ids[1], nil, consumerMeta("t")))
		await(t, ja)
		if got := e.commit("g", ids[1], rb.Generation, "t", 0, 2); got != kerr.RebalanceInProgress.Code {
			t.Fatalf("commit while completing: %d, want REBALANCE_IN_PROGRESS", got)
		}
	})
}

func TestRestartRestoresGroupsAndOffsets(t *testing.T) {
	e := newEnv(t, nil)
	ids, gen := e.stableGroup("g", 2)
	if got := e.commit("g", ids[0], gen, "t", 0, 42); got != 0 {
		t.Fatal(got)
	}
	if got := e.commit("simple", "", -1, "u", 3, 7); got != 0 {
		t.Fatal(got)
	}
	e.restart()

	d := e.describe("g")
	if d.State != "Stable" || len(d.Members) != 2 || d.Protocol != "range" {
		t.Fatalf("restored group: state %s members %d protocol %q", d.State, len(d.Members), d.Protocol)
	}
	for _, m := range d.Members {
		want := "a-0"
		if m.MemberID == ids[1] {
			want = "a-1"
		}
		if string(m.MemberAssignment) != want {
			t.Fatalf("member %s assignment %q, want %q", m.MemberID, m.MemberAssignment, want)
		}
	}
	if got := e.fetch("g", "t", 0); got != 42 {
		t.Fatalf("restored offset %d, want 42", got)
	}
	if got := e.fetch("simple", "u", 3); got != 7 {
		t.Fatalf("restored simple offset %d, want 7", got)
	}
	// ids[0] keeps heartbeating across the restart; ids[1] died with it.
	for i := 0; i < 2; i++ {
		if code := e.heartbeat("g", ids[0], gen, nil); code != 0 {
			t.Fatalf("heartbeat after restart: %d", code)
		}
		e.clock.Advance(testSession * 6 / 10)
	}
	if code := e.heartbeat("g", ids[0], gen, nil); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("heartbeat after the dead member expired: %d, want REBALANCE_IN_PROGRESS", code)
	}
	r := do[*kmsg.JoinGroupResponse](e, joinReq(9, "g", ids[0], nil, consumerMeta("t")))
	if r.ErrorCode != 0 || r.Generation != gen+1 || len(r.Members) != 1 {
		t.Fatalf("rejoin: error %d generation %d members %d", r.ErrorCode, r.Generation, len(r.Members))
	}

	// An Empty group is saved Empty and comes back Empty.
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Version, leave.Group = 4, "g"
	leave.Members = []kmsg.LeaveGroupRequestMember{{MemberID: ids[0]}}
	do[*kmsg.LeaveGroupResponse](e, leave)
	e.restart()
	if d := e.describe("g"); d.State != "Empty" || d.ProtocolType != "consumer" {
		t.Fatalf("after restart: state %s type %q, want Empty consumer", d.State, d.ProtocolType)
	}
	if got := e.fetch("g", "t", 0); got != 42 {
		t.Fatalf("offset %d, want 42", got)
	}
}

func TestOffsetRetention(t *testing.T) {
	const retention = 24 * time.Hour
	e := newEnv(t, func(o *Options) { o.OffsetsRetention = retention })

	// A consumer group that went Empty: offsets expire a retention after
	// the later of the state change and the commit.
	ids, gen := e.stableGroup("g", 1)
	if got := e.commit("g", ids[0], gen, "t", 0, 1); got != 0 {
		t.Fatal(got)
	}
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Version, leave.Group = 0, "g"
	leave.MemberID = ids[0]
	do[*kmsg.LeaveGroupResponse](e, leave)

	// A simple group: by commit time. Its second partition is committed later.
	if got := e.commit("simple", "", -1, "t", 0, 1); got != 0 {
		t.Fatal(got)
	}
	e.clock.Advance(time.Hour)
	if got := e.commit("simple", "", -1, "t", 1, 1); got != 0 {
		t.Fatal(got)
	}

	steps := []struct {
		name        string
		advance     time.Duration
		wantExpired int
		wantG       int64
		wantSimple  [2]int64
	}{
		{"before retention", retention - 2*time.Hour, 0, 1, [2]int64{1, 1}},
		{"first simple offset expires", 90 * time.Minute, 2, -1, [2]int64{-1, 1}},
		{"second simple offset expires", time.Hour, 1, -1, [2]int64{-1, -1}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			e.clock.Advance(s.advance)
			n, err := e.c.ExpireOffsets()
			if err != nil || n != s.wantExpired {
				t.Fatalf("expired %d (%v), want %d", n, err, s.wantExpired)
			}
			if got := e.fetch("g", "t", 0); got != s.wantG {
				t.Fatalf("g offset %d, want %d", got, s.wantG)
			}
			for p, want := range s.wantSimple {
				if got := e.fetch("simple", "t", int32(p)); got != want {
					t.Fatalf("simple partition %d offset %d, want %d", p, got, want)
				}
			}
		})
	}
	// Groups left without offsets are gone.
	r := kmsg.NewPtrListGroupsRequest()
	r.Version = 4
	if groups := do[*kmsg.ListGroupsResponse](e, r).Groups; len(groups) != 0 {
		t.Fatalf("groups left: %+v", groups)
	}
	e.restart()
	if d := e.describe("g"); d.State != "Dead" {
		t.Fatalf("after restart: %s, want Dead (unknown)", d.State)
	}
}

func TestOffsetRetentionPeriodicSweep(t *testing.T) {
	e := newEnv(t, func(o *Options) {
		o.OffsetsRetention = time.Hour
		o.RetentionCheckInterval = time.Minute
	})
	if got := e.commit("simple", "", -1, "t", 0, 1); got != 0 {
		t.Fatal(got)
	}
	e.clock.Advance(time.Hour + time.Minute)
	if got := e.fetch("simple", "t", 0); got != -1 {
		t.Fatalf("offset %d after the sweep, want -1", got)
	}
}

func TestExplicitRetentionV2(t *testing.T) {
	e := newEnv(t, nil)
	r := kmsg.NewPtrOffsetCommitRequest()
	r.Version = 2
	r.Group, r.Generation, r.RetentionTimeMillis = "simple", -1, int64(time.Minute/time.Millisecond)
	p := kmsg.NewOffsetCommitRequestTopicPartition()
	p.Offset = 3
	r.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{p}}}
	if code := do[*kmsg.OffsetCommitResponse](e, r).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatal(code)
	}
	e.clock.Advance(time.Minute)
	if n, err := e.c.ExpireOffsets(); n != 1 || err != nil {
		t.Fatalf("expired %d (%v), want 1", n, err)
	}
}
