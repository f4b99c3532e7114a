package consumer

import (
	"errors"
	"reflect"
	"testing"

	"github.com/sluice/sluice/group/consumer/assignor"
)

var (
	topic1 = assignor.TopicID{1}
	topic2 = assignor.TopicID{2}
)

// a builds an assignment: a(topic1, 1, 2, topic2, 3) is {topic1: [1 2],
// topic2: [3]}.
func a(kv ...any) assignor.Assignment {
	out := assignor.Assignment{}
	var t assignor.TopicID
	for _, x := range kv {
		switch v := x.(type) {
		case assignor.TopicID:
			t = v
			out[t] = nil
		case int:
			out[t] = append(out[t], int32(v))
		}
	}
	return out
}

func epochAlways(e int32) func(assignor.TopicID, int32) int32 {
	return func(assignor.TopicID, int32) int32 { return e }
}

// normalize makes nil and empty assignments compare equal.
func normalize(m Member) Member {
	if len(m.Assigned) == 0 {
		m.Assigned = nil
	}
	if len(m.PendingRevocation) == 0 {
		m.PendingRevocation = nil
	}
	return m
}

// TestReconcile ports the facts of Kafka's CurrentAssignmentBuilderTest
// (trunk, Kafka 4.x): member state, epochs and assignment before, the
// target and what the heartbeat reports, and the member after.
func TestReconcile(t *testing.T) {
	cases := []struct {
		name   string
		member Member
		r      Reconciliation
		want   Member // zero: the member is unchanged
	}{
		{
			name:   "stable to stable",
			member: Member{State: Stable, MemberEpoch: 10, PreviousMemberEpoch: 10, Assigned: a(topic1, 1, 2, 3, topic2, 4, 5, 6)},
			r:      Reconciliation{TargetEpoch: 11, Target: a(topic1, 1, 2, 3, topic2, 4, 5, 6), PartitionEpoch: epochAlways(10)},
			want:   Member{State: Stable, MemberEpoch: 11, PreviousMemberEpoch: 10, Assigned: a(topic1, 1, 2, 3, topic2, 4, 5, 6)},
		},
		{
			name:   "stable to stable with new partitions",
			member: Member{State: Stable, MemberEpoch: 10, PreviousMemberEpoch: 10, Assigned: a(topic1, 1, 2, 3, topic2, 4, 5, 6)},
			r:      Reconciliation{TargetEpoch: 11, Target: a(topic1, 1, 2, 3, 4, topic2, 4, 5, 6, 7), PartitionEpoch: epochAlways(-1)},
			want:   Member{State: Stable, MemberEpoch: 11, PreviousMemberEpoch: 10, Assigned: a(topic1, 1, 2, 3, 4, topic2, 4, 5, 6, 7)},
		},
		{
			name:   "stable to unrevoked partitions",
			member: Member{State: Stable, MemberEpoch: 10, PreviousMemberEpoch: 10, Assigned: a(topic1, 1, 2, 3, topic2, 4, 5, 6)},
			r:      Reconciliation{TargetEpoch: 11, Target: a(topic1, 2, 3, 4, topic2, 5, 6, 7), PartitionEpoch: epochAlways(-1)},
			want: Member{State: UnrevokedPartitions, MemberEpoch: 10, PreviousMemberEpoch: 10,
				Assigned: a(topic1, 2, 3, topic2, 5, 6), PendingRevocation: a(topic1, 1, topic2, 4)},
		},
		{
			name:   "stable to unreleased partitions",
			member: Member{State: Stable, MemberEpoch: 10, PreviousMemberEpoch: 10, Assigned: a(topic1, 1, 2, 3, topic2, 4, 5, 6)},
			r:      Reconciliation{TargetEpoch: 11, Target: a(topic1, 1, 2, 3, 4, topic2, 4, 5, 6, 7), PartitionEpoch: epochAlways(10)},
			want:   Member{State: UnreleasedPartitions, MemberEpoch: 11, PreviousMemberEpoch: 10, Assigned: a(topic1, 1, 2, 3, topic2, 4, 5, 6)},
		},
		{
			// Partition 6 of topic2 leaves the target, but the member
			// reports owning nothing: no revocation to wait for.
			name:   "stable to unreleased partitions when the owned partitions lack the revoked ones",
			member: Member{State: Stable, MemberEpoch: 10, PreviousMemberEpoch: 10, Assigned: a(topic1, 1, 2, 3, topic2, 4, 5, 6)},
			r: Reconciliation{TargetEpoch: 11, Target: a(topic1, 1, 2, 3, topic2, 4, 5, 7), Owned: assignor.Assignment{},
				PartitionEpoch: func(t assignor.TopicID, _ int32) int32 {
					if t == topic2 {
						return 10
					}
					return -1
				}},
			want: Member{State: UnreleasedPartitions, MemberEpoch: 11, PreviousMemberEpoch: 10, Assigned: a(topic1, 1, 2, 3, topic2, 4, 5)},
		},
		{
			name: "unrevoked partitions to stable",
			member: Member{State: UnrevokedPartitions, MemberEpoch: 10, PreviousMemberEpoch: 10,
				Assigned: a(topic1, 2, 3, topic2, 5, 6), PendingRevocation: a(topic1, 1, topic2, 4)},
			r: Reconciliation{TargetEpoch: 11, Target: a(topic1, 2, 3, topic2, 5, 6), PartitionEpoch: epochAlways(-1),
				Owned: a(topic1, 2, 3, topic2, 5, 6)},
			want: Member{State: Stable, MemberEpoch: 11, PreviousMemberEpoch: 10, Assigned: a(topic1, 2, 3, topic2, 5, 6)},
		},
		{
			name: "remains in unrevoked partitions: owned not reported",
			member: Member{State: UnrevokedPartitions, MemberEpoch: 10, PreviousMemberEpoch: 10,
				Assigned: a(topic1, 2, 3, topic2, 5, 6), PendingRevocation: a(topic1, 1, topic2, 4)},
			r: Reconciliation{TargetEpoch: 12, Target: a(topic1, 3, topic2, 6), PartitionEpoch: epochAlways(-1)},
		},
		{
			name: "remains in unrevoked partitions: still owns topic1-1",
			member: Member{State: UnrevokedPartitions, MemberEpoch: 10, PreviousMemberEpoch: 10,
				Assigned: a(topic1, 2, 3, topic2, 5, 6), PendingRevocation: a(topic1, 1, topic2, 4)},
			r: Reconciliation{TargetEpoch: 12, Target: a(topic1, 3, topic2, 6), PartitionEpoch: epochAlways(-1),
				Owned: a(topic1, 1, 2, 3, topic2, 5, 6)},
		},
		{
			name: "remains in unrevoked partitions: still owns topic2-4",
			member: Member{State: UnrevokedPartitions, MemberEpoch: 10, PreviousMemberEpoch: 10,
				Assigned: a(topic1, 2, 3, topic2, 5, 6), PendingRevocation: a(topic1, 1, topic2, 4)},
			r: Reconciliation{TargetEpoch: 12, Target: a(topic1, 3, topic2, 6), PartitionEpoch: epochAlways(-1),
				Owned: a(topic1, 2, 3, topic2, 4, 5, 6)},
		},
		{
			// Trunk: the member stays at epoch 10 (Kafka before the fix
			// moved it to 11).
			name: "unrevoked partitions to unrevoked partitions",
			member: Member{State: UnrevokedPartitions, MemberEpoch: 10, PreviousMemberEpoch: 10,
				Assigned: a(topic1, 2, 3, topic2, 5, 6), PendingRevocation: a(topic1, 1, topic2, 4)},
			r: Reconciliation{TargetEpoch: 12, Target: a(topic1, 3, topic2, 6), PartitionEpoch: epochAlways(-1),
				Owned: a(topic1, 2, 3, topic2, 5, 6)},
			want: Member{State: UnrevokedPartitions, MemberEpoch: 10, PreviousMemberEpoch: 10,
				Assigned: a(topic1, 3, topic2, 6), PendingRevocation: a(topic1, 2, topic2, 5)},
		},
		{
			name: "unrevoked partitions to unreleased partitions",
			member: Member{State: UnrevokedPartitions, MemberEpoch: 11, PreviousMemberEpoch: 10,
				Assigned: a(topic1, 2, 3, topic2, 5, 6)},
			r: Reconciliation{TargetEpoch: 11, Target: a(topic1, 2, 3, 4, topic2, 5, 6, 7), PartitionEpoch: epochAlways(10),
				Owned: a(topic1, 2, 3, topic2, 5, 6)},
			want: Member{State: UnreleasedPartitions, MemberEpoch: 11, PreviousMemberEpoch: 11, Assigned: a(topic1, 2, 3, topic2, 5, 6)},
		},
		{
			// Partition 4 was being revoked from this member and is back
			// in the target: it holds it itself, so it is not unreleased.
			name: "unrevoked partitions to stable with a returned partition pending revocation",
			member: Member{State: UnrevokedPartitions, MemberEpoch: 10, PreviousMemberEpoch: 10,
				Assigned: a(topic1, 2, 3, topic2, 5, 6), PendingRevocation: a(topic1, 4)},
			r: Reconciliation{TargetEpoch: 12, Target: a(topic1, 2, 3, 4, topic2, 5, 6, 7),
				PartitionEpoch: func(t assignor.TopicID, p int32) int32 {
					if (t == topic1 && p >= 2 && p <= 4) || (t == topic2 && (p == 5 || p == 6)) {
						return 10
					}
					return -1
				},
				Owned: a(topic1, 2, 3, topic2, 5, 6)},
			want: Member{State: Stable, MemberEpoch: 12, PreviousMemberEpoch: 10, Assigned: a(topic1, 2, 3, 4, topic2, 5, 6, 7)},
		},
		{
			name:   "unreleased partitions to stable",
			member: Member{State: UnreleasedPartitions, MemberEpoch: 11, PreviousMemberEpoch: 11, Assigned: a(topic1, 2, 3, topic2, 5, 6)},
			r:      Reconciliation{TargetEpoch: 12, Target: a(topic1, 2, 3, topic2, 5, 6), PartitionEpoch: epochAlways(10)},
			want:   Member{State: Stable, MemberEpoch: 12, PreviousMemberEpoch: 11, Assigned: a(topic1, 2, 3, topic2, 5, 6)},
		},
		{
			name:   "unreleased partitions to stable with new partitions",
			member: Member{State: UnreleasedPartitions, MemberEpoch: 11, PreviousMemberEpoch: 11, Assigned: a(topic1, 2, 3, topic2, 5, 6)},
			r:      Reconciliation{TargetEpoch: 11, Target: a(topic1, 2, 3, 4, topic2, 5, 6, 7), PartitionEpoch: epochAlways(-1)},
			want:   Member{State: Stable, MemberEpoch: 11, PreviousMemberEpoch: 11, Assigned: a(topic1, 2, 3, 4, topic2, 5, 6, 7)},
		},
		{
			// Nothing changes, but Kafka rebuilds the member; its fields
			// are equal to the old ones.
			name:   "unreleased partitions to unreleased partitions",
			member: Member{State: UnreleasedPartitions, MemberEpoch: 11, PreviousMemberEpoch: 11, Assigned: a(topic1, 2, 3, topic2, 5, 6)},
			r:      Reconciliation{TargetEpoch: 11, Target: a(topic1, 2, 3, 4, topic2, 5, 6, 7), PartitionEpoch: epochAlways(10)},
			want:   Member{State: UnreleasedPartitions, MemberEpoch: 11, PreviousMemberEpoch: 11, Assigned: a(topic1, 2, 3, topic2, 5, 6)},
		},
		{
			name:   "unreleased partitions to unrevoked partitions",
			member: Member{State: UnreleasedPartitions, MemberEpoch: 11, PreviousMemberEpoch: 11, Assigned: a(topic1, 2, 3, topic2, 5, 6)},
			r:      Reconciliation{TargetEpoch: 12, Target: a(topic1, 3, topic2, 6), PartitionEpoch: epochAlways(10)},
			want: Member{State: UnrevokedPartitions, MemberEpoch: 11, PreviousMemberEpoch: 11,
				Assigned: a(topic1, 3, topic2, 6), PendingRevocation: a(topic1, 2, topic2, 5)},
		},
		{
			name: "unknown state rejoining with nothing owned",
			member: Member{State: Unknown, MemberEpoch: 11, PreviousMemberEpoch: 11,
				Assigned: a(topic1, 3, topic2, 6), PendingRevocation: a(topic1, 2, topic2, 5)},
			r:    Reconciliation{TargetEpoch: 12, Target: a(topic1, 3, topic2, 6), PartitionEpoch: epochAlways(11), Owned: assignor.Assignment{}},
			want: Member{State: Stable, MemberEpoch: 12, PreviousMemberEpoch: 11, Assigned: a(topic1, 3, topic2, 6)},
		},
		{
			// The member no longer subscribes to topic2: its partitions
			// leave even though the target still lists them.
			name:   "unsubscribed topic is revoked",
			member: Member{State: Stable, MemberEpoch: 10, PreviousMemberEpoch: 9, Assigned: a(topic1, 1, topic2, 2)},
			r: Reconciliation{TargetEpoch: 11, Target: a(topic1, 1, topic2, 2), PartitionEpoch: epochAlways(-1),
				Subscribed: map[assignor.TopicID]bool{topic1: true}},
			want: Member{State: UnrevokedPartitions, MemberEpoch: 10, PreviousMemberEpoch: 10,
				Assigned: a(topic1, 1), PendingRevocation: a(topic2, 2)},
		},
		{
			name:   "subscription consistency enforced at the target epoch",
			member: Member{State: Stable, MemberEpoch: 11, PreviousMemberEpoch: 10, Assigned: a(topic1, 1, topic2, 2)},
			r: Reconciliation{TargetEpoch: 11, Target: a(topic1, 1, topic2, 2), PartitionEpoch: epochAlways(-1),
				Subscribed: map[assignor.TopicID]bool{topic1: true}, EnforceSubscriptionConsistency: true,
				Owned: a(topic1, 1, topic2, 2)},
			want: Member{State: UnrevokedPartitions, MemberEpoch: 11, PreviousMemberEpoch: 11,
				Assigned: a(topic1, 1), PendingRevocation: a(topic2, 2)},
		},
		{
			name:   "subscription consistency: already revoked, the assignment shrinks",
			member: Member{State: Stable, MemberEpoch: 11, PreviousMemberEpoch: 10, Assigned: a(topic1, 1, topic2, 2)},
			r: Reconciliation{TargetEpoch: 11, Target: a(topic1, 1, topic2, 2), PartitionEpoch: epochAlways(-1),
				Subscribed: map[assignor.TopicID]bool{topic1: true}, EnforceSubscriptionConsistency: true,
				Owned: a(topic1, 1)},
			want: Member{State: Stable, MemberEpoch: 11, PreviousMemberEpoch: 11, Assigned: a(topic1, 1)},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.member.ID = "member"
			got, err := Reconcile(tc.member, tc.r)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want
			if reflect.DeepEqual(want, Member{}) {
				want = tc.member
			} else {
				want.ID = "member"
			}
			if !reflect.DeepEqual(normalize(got), normalize(want)) {
				t.Fatalf("\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

// TestReconcileUnknownStateFences is Kafka's testUnknownState: a member in
// a state this code does not know is fenced until it rejoins owning
// nothing (a null owned field does not count as nothing).
func TestReconcileUnknownStateFences(t *testing.T) {
	m := Member{ID: "member", State: Unknown, MemberEpoch: 11, PreviousMemberEpoch: 11,
		Assigned: a(topic1, 3, topic2, 6), PendingRevocation: a(topic1, 2, topic2, 5)}
	for _, owned := range []assignor.Assignment{nil, a(topic1, 3), a(topic2)} {
		_, err := Reconcile(m, Reconciliation{TargetEpoch: 12, Target: a(topic1, 3, topic2, 6), PartitionEpoch: epochAlways(10), Owned: owned})
		if !errors.Is(err, ErrFencedMemberEpoch) {
			t.Fatalf("owned %v: err %v, want ErrFencedMemberEpoch", owned, err)
		}
	}
	if MemberStateOf(5) != Unknown || MemberStateOf(1) != UnrevokedPartitions || Unknown.String() != "UNKNOWN" {
		t.Fatal("MemberStateOf does not map unknown bytes to Unknown")
	}
}
