package consumer

import (
	"errors"
	"testing"

	"github.com/sluice/sluice/group/consumer/assignor"
	"github.com/sluice/sluice/offsets"
)

// TestCheckEpoch is Kafka's throwIfConsumerGroupMemberEpochIsInvalid.
func TestCheckEpoch(t *testing.T) {
	m := Member{ID: "m", MemberEpoch: 10, PreviousMemberEpoch: 9, Assigned: a(topic1, 0, 1, topic2, 4)}
	cases := []struct {
		name     string
		received int32
		owned    assignor.Assignment
		fenced   bool
	}{
		{"same epoch", 10, nil, false},
		{"ahead", 11, a(topic1, 0), true},
		{"previous epoch with a subset (lost response)", 9, a(topic1, 0), false},
		{"previous epoch owning nothing", 9, assignor.Assignment{}, false},
		{"previous epoch, owned not reported", 9, nil, true},
		{"previous epoch owning a partition not assigned", 9, a(topic1, 0, 2), true},
		{"previous epoch naming an unassigned topic", 9, a(assignor.TopicID{9}), true},
		{"older than the previous epoch", 8, a(topic1, 0), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckEpoch(m, tc.received, tc.owned)
			if got := errors.Is(err, ErrFencedMemberEpoch); got != tc.fenced || (!tc.fenced && err != nil) {
				t.Fatalf("err %v, fenced %v", err, tc.fenced)
			}
		})
	}
}

func TestLookup(t *testing.T) {
	g := NewGroup("g")
	must(t, g.UpdateMember(Member{ID: "dyn", MemberEpoch: 5, PreviousMemberEpoch: 4}))
	must(t, g.UpdateMember(Member{ID: "static-1", InstanceID: "i1", MemberEpoch: 5, PreviousMemberEpoch: 4, Assigned: a(topic1, 0)}))
	must(t, g.UpdateMember(Member{ID: "static-2", InstanceID: "i2", MemberEpoch: StaticLeaveEpoch, Assigned: a(topic1, 1)}))
	must(t, g.UpdateMember(Member{ID: "classic-4", InstanceID: "i4", MemberEpoch: 5, Assigned: a(topic1, 2),
		Classic: &offsets.ClassicMemberMetadata{SessionTimeoutMs: 6000, SupportedProtocols: []offsets.ClassicProtocol{{Name: "range"}}}}))

	cases := []struct {
		name     string
		h        Heartbeat
		err      error
		isNew    bool
		id       string
		replaces string
	}{
		{name: "new dynamic member", h: Heartbeat{MemberID: "new", MemberEpoch: 0}, isNew: true, id: "new"},
		{name: "known dynamic member", h: Heartbeat{MemberID: "dyn", MemberEpoch: 5}, id: "dyn"},
		{name: "unknown member with an epoch", h: Heartbeat{MemberID: "ghost", MemberEpoch: 3}, err: ErrUnknownMemberID},
		{name: "known member, stale epoch", h: Heartbeat{MemberID: "dyn", MemberEpoch: 3}, err: ErrFencedMemberEpoch},
		{name: "known member, future epoch", h: Heartbeat{MemberID: "dyn", MemberEpoch: 6}, err: ErrFencedMemberEpoch},
		{name: "new static member", h: Heartbeat{MemberID: "s3", InstanceID: "i3", MemberEpoch: 0}, isNew: true, id: "s3"},
		{name: "instance id still held", h: Heartbeat{MemberID: "other", InstanceID: "i1", MemberEpoch: 0}, err: ErrUnreleasedInstanceID},
		{name: "instance id released with -2", h: Heartbeat{MemberID: "back", InstanceID: "i2", MemberEpoch: 0}, isNew: true, id: "back", replaces: "static-2"},
		{name: "instance id of a classic member (upgrade)", h: Heartbeat{MemberID: "up", InstanceID: "i4", MemberEpoch: 0}, isNew: true, id: "up", replaces: "classic-4"},
		{name: "static member heartbeat", h: Heartbeat{MemberID: "static-1", InstanceID: "i1", MemberEpoch: 5}, id: "static-1"},
		{name: "static member fenced by another id", h: Heartbeat{MemberID: "impostor", InstanceID: "i1", MemberEpoch: 5}, err: ErrFencedInstanceID},
		{name: "unknown instance id with an epoch", h: Heartbeat{MemberID: "x", InstanceID: "i9", MemberEpoch: 2}, err: ErrUnknownMemberID},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, isNew, replaces, err := g.Lookup(tc.h)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil || isNew != tc.isNew || m.ID != tc.id || replaces != tc.replaces {
				t.Fatalf("got %+v new=%v replaces=%q err=%v", m, isNew, replaces, err)
			}
		})
	}
	// The replacement of a static member keeps its assignment at epoch 0.
	m, _, _, _ := g.Lookup(Heartbeat{MemberID: "back", InstanceID: "i2", MemberEpoch: 0})
	if m.MemberEpoch != 0 || m.PreviousMemberEpoch != 0 || len(m.Assigned[topic1]) != 1 {
		t.Fatalf("replacement %+v", m)
	}
}

func TestLeave(t *testing.T) {
	g := NewGroup("g")
	must(t, g.UpdateMember(Member{ID: "dyn", MemberEpoch: 5, Assigned: a(topic1, 0)}))
	must(t, g.UpdateMember(Member{ID: "s", InstanceID: "i", MemberEpoch: 5, Assigned: a(topic1, 1), PendingRevocation: a(topic1, 2)}))
	g.Target = map[string]assignor.Assignment{"dyn": a(topic1, 0), "s": a(topic1, 1)}

	if _, err := g.Leave("ghost", "", LeaveEpoch); !errors.Is(err, ErrUnknownMemberID) {
		t.Fatalf("unknown member leave: %v", err)
	}
	if _, err := g.Leave("impostor", "i", StaticLeaveEpoch); !errors.Is(err, ErrFencedInstanceID) {
		t.Fatalf("impostor leave: %v", err)
	}
	removed, err := g.Leave("s", "i", StaticLeaveEpoch)
	if err != nil || removed {
		t.Fatalf("static leave: removed %v, %v", removed, err)
	}
	s, ok := g.Member("s")
	if !ok || s.MemberEpoch != StaticLeaveEpoch || len(s.PendingRevocation) != 0 || len(s.Assigned[topic1]) != 1 {
		t.Fatalf("static member after -2: %+v", s)
	}
	if g.PartitionEpoch(topic1, 1) != StaticLeaveEpoch || g.PartitionEpoch(topic1, 2) != -1 {
		t.Fatalf("partition epochs after -2: %d %d", g.PartitionEpoch(topic1, 1), g.PartitionEpoch(topic1, 2))
	}
	removed, err = g.Leave("dyn", "", LeaveEpoch)
	if err != nil || !removed {
		t.Fatalf("dynamic leave: removed %v, %v", removed, err)
	}
	if _, ok := g.Member("dyn"); ok || g.PartitionEpoch(topic1, 0) != -1 || g.Target["dyn"] != nil {
		t.Fatal("a member that left keeps its partitions")
	}
}

// TestUpdateMemberRefusesDoubleOwnership checks the partition epoch
// invariant: no partition is held by two members; a refused update
// changes nothing.
func TestUpdateMemberRefusesDoubleOwnership(t *testing.T) {
	g := NewGroup("g")
	must(t, g.UpdateMember(Member{ID: "A", MemberEpoch: 3, Assigned: a(topic1, 0, 1)}))
	must(t, g.UpdateMember(Member{ID: "B", MemberEpoch: 3, Assigned: a(topic1, 2)}))
	if err := g.UpdateMember(Member{ID: "B", MemberEpoch: 4, Assigned: a(topic1, 1, 2)}); !errors.Is(err, ErrPartitionEpoch) {
		t.Fatalf("double ownership: %v", err)
	}
	if g.PartitionEpoch(topic1, 2) != 3 || g.PartitionEpoch(topic1, 1) != 3 {
		t.Fatal("a refused update changed the partition epochs")
	}
	if b, _ := g.Member("B"); b.MemberEpoch != 3 {
		t.Fatalf("a refused update stored the member: %+v", b)
	}
	if err := g.UpdateMember(Member{ID: "C", MemberEpoch: 1, PendingRevocation: a(topic1, 0)}); !errors.Is(err, ErrPartitionEpoch) {
		t.Fatalf("pending revocation of a held partition: %v", err)
	}
	if _, ok := g.Member("C"); ok || g.Len() != 2 {
		t.Fatal("a refused new member was stored")
	}
}

// TestRevokeBeforeReassign runs the protocol's central rule through the
// group, the uniform assignor and Reconcile: when a new member joins, a
// partition moves only after its previous owner has revoked it. Each step
// is one heartbeat.
func TestRevokeBeforeReassign(t *testing.T) {
	topics := map[assignor.TopicID]assignor.Topic{topic1: {ID: topic1, Name: "t", Partitions: 4}}
	g := NewGroup("g")
	assign := func() {
		t.Helper()
		var spec assignor.Spec
		spec.Topics = topics
		for _, id := range []string{"A", "B"} {
			if _, ok := g.Member(id); ok {
				spec.Members = append(spec.Members, assignor.Member{ID: id, Topics: []assignor.TopicID{topic1}, Current: g.Target[id]})
			}
		}
		out, err := assignor.Uniform{}.Assign(&spec)
		must(t, err)
		g.SetTarget(g.Epoch, out)
	}
	heartbeat := func(id string, owned assignor.Assignment) Member {
		t.Helper()
		m, _ := g.Member(id)
		next, err := Reconcile(m, Reconciliation{TargetEpoch: g.AssignmentEpoch, Target: g.Target[id], PartitionEpoch: g.PartitionEpoch, Owned: owned})
		must(t, err)
		must(t, g.UpdateMember(next))
		return next
	}

	// A joins alone: epoch 1, all four partitions.
	must(t, g.UpdateMember(Member{ID: "A"}))
	g.BumpEpoch()
	assign()
	if m := heartbeat("A", assignor.Assignment{}); m.State != Stable || m.MemberEpoch != 1 || len(m.Assigned[topic1]) != 4 {
		t.Fatalf("A alone: %+v", m)
	}

	// B joins: epoch 2; the target gives B two of A's partitions.
	must(t, g.UpdateMember(Member{ID: "B"}))
	g.BumpEpoch()
	assign()
	b := heartbeat("B", assignor.Assignment{})
	if b.State != UnreleasedPartitions || b.MemberEpoch != 2 || len(b.Assigned) != 0 {
		t.Fatalf("B must wait for A's partitions: %+v", b)
	}
	am := heartbeat("A", a(topic1, 0, 1, 2, 3))
	if am.State != UnrevokedPartitions || am.MemberEpoch != 1 || len(am.PendingRevocation[topic1]) != 2 {
		t.Fatalf("A must revoke two partitions at epoch 1: %+v", am)
	}
	// A still reports owning everything: nothing moves.
	if am = heartbeat("A", a(topic1, 0, 1, 2, 3)); am.State != UnrevokedPartitions {
		t.Fatalf("A moved on while owning revoked partitions: %+v", am)
	}
	if b = heartbeat("B", assignor.Assignment{}); b.State != UnreleasedPartitions || len(b.Assigned) != 0 {
		t.Fatalf("B got partitions A still owns: %+v", b)
	}
	// A acknowledges the revocation: epoch 2, stable.
	am = heartbeat("A", am.Assigned)
	if am.State != Stable || am.MemberEpoch != 2 || len(am.Assigned[topic1]) != 2 {
		t.Fatalf("A after revoking: %+v", am)
	}
	// Now B gets them.
	b = heartbeat("B", assignor.Assignment{})
	if b.State != Stable || b.MemberEpoch != 2 || len(b.Assigned[topic1]) != 2 {
		t.Fatalf("B after A revoked: %+v", b)
	}
	for p := int32(0); p < 4; p++ {
		if g.PartitionEpoch(topic1, p) != 2 {
			t.Fatalf("partition %d at epoch %d", p, g.PartitionEpoch(topic1, p))
		}
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestCheckSize(t *testing.T) {
	g := NewGroup("g")
	must(t, g.UpdateMember(Member{ID: "A"}))
	must(t, g.UpdateMember(Member{ID: "B"}))
	if err := g.CheckSize("C", 3); err != nil {
		t.Fatalf("room for a third: %v", err)
	}
	if err := g.CheckSize("A", 2); err != nil {
		t.Fatalf("a known member of a full group: %v", err)
	}
	for _, id := range []string{"C", ""} {
		if err := g.CheckSize(id, 2); !errors.Is(err, ErrGroupMaxSizeReached) {
			t.Fatalf("new member %q of a full group: %v", id, err)
		}
	}
}
