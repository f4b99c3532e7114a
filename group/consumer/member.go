// Package consumer is the state machine of a next-generation consumer group
// (KIP-848), as Kafka 4.x's group coordinator runs it, without I/O: the
// group epoch, the target assignment and its epoch, each member's epochs
// and state, the reconciliation of a member's current assignment towards
// its target (Kafka's CurrentAssignmentBuilder), and the rules that accept
// or refuse a heartbeat's member id, instance id and member epoch
// (UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH, UNRELEASED_INSTANCE_ID,
// FENCED_INSTANCE_ID, GROUP_MAX_SIZE_REACHED).
//
// The epochs, as Kafka keeps them:
//
//   - The group epoch is bumped whenever the group's members or their
//     subscriptions (or the subscribed topics' metadata) change.
//   - The target assignment epoch is the group epoch the target assignment
//     was computed at; the coordinator recomputes the target (an assignor
//     of group/consumer/assignor) when it lags the group epoch.
//   - A member's epoch reaches the target assignment epoch once it has
//     revoked every partition the target takes from it; until then it stays
//     where it was, in UnrevokedPartitions. A partition is given to its new
//     owner only once its previous owner no longer holds it (partition
//     epochs, below); until then the new owner is in UnreleasedPartitions.
//
// records.go turns a group into its __consumer_offsets records (the
// encodings are offsets/consumerformat.go's) and replays them, so that a
// coordinator failover restores every member's epochs and assignment.
//
// Nothing here is safe for concurrent use: the coordinator serializes the
// requests of a group. The wiring (ConsumerGroupHeartbeat and
// ConsumerGroupDescribe, timers, the replay loop) lives elsewhere.
package consumer

import (
	"errors"

	"github.com/sluice/sluice/group/consumer/assignor"
	"github.com/sluice/sluice/internal/errcode"
	"github.com/sluice/sluice/offsets"
)

// Special member epochs of ConsumerGroupHeartbeat, as Kafka's.
const (
	JoinEpoch        int32 = 0  // a member joining (or rejoining after a fence)
	LeaveEpoch       int32 = -1 // a member leaving the group
	StaticLeaveEpoch int32 = -2 // a static member leaving temporarily: it keeps its assignment
)

// Errors of the state machine, each the Kafka error code the coordinator
// answers with: they are package errcode's sentinels, which errcode.Code
// maps.
var (
	// ErrFencedMemberEpoch: the member's epoch is ahead of the
	// coordinator's, or behind it and not the previous epoch with a subset
	// of the assignment (FENCED_MEMBER_EPOCH). The member must give up its
	// partitions and rejoin with epoch 0.
	ErrFencedMemberEpoch = errcode.ErrFencedMemberEpoch
	// ErrUnknownMemberID: a member id (or an instance id) the group does
	// not know, with a non-zero epoch (UNKNOWN_MEMBER_ID).
	ErrUnknownMemberID = errcode.ErrUnknownMemberID
	// ErrUnreleasedInstanceID: a static member joins with an instance id
	// still held by a member that did not leave with epoch -2
	// (UNRELEASED_INSTANCE_ID).
	ErrUnreleasedInstanceID = errcode.ErrUnreleasedInstanceID
	// ErrFencedInstanceID: a member id that is not the current holder of
	// the instance id it names (FENCED_INSTANCE_ID).
	ErrFencedInstanceID = errcode.ErrFencedInstanceID
	// ErrGroupMaxSizeReached: a new member would take the group past
	// group.consumer.max.size (GROUP_MAX_SIZE_REACHED).
	ErrGroupMaxSizeReached = errcode.ErrGroupMaxSizeReached
	// ErrPartitionEpoch marks a broken invariant of partition epochs: a
	// partition given to two members at once, or released at an epoch it
	// was not held at. It means a bug in the caller, never a client's fault.
	ErrPartitionEpoch = errors.New("consumer: partition epoch invariant broken")
)

// MemberState is a member's reconciliation state. The values are Kafka's
// MemberState and the State field of ConsumerGroupCurrentMemberAssignment
// records. Part of the on-disk format: do not change.
type MemberState int8

const (
	// Stable: the member has its whole target assignment at the target
	// assignment epoch (or is waiting for a new target).
	Stable MemberState = 0
	// UnrevokedPartitions: the member must revoke PendingRevocation before
	// it may advance; it stays at its epoch.
	UnrevokedPartitions MemberState = 1
	// UnreleasedPartitions: the member is at the target epoch but some of
	// its target partitions are still held by their previous owners.
	UnreleasedPartitions MemberState = 2
	// Unknown: a state this code does not know (written by a newer
	// coordinator); the member is fenced until it rejoins with nothing.
	Unknown MemberState = 127
)

// String returns Kafka's name of the state.
func (s MemberState) String() string {
	switch s {
	case Stable:
		return "STABLE"
	case UnrevokedPartitions:
		return "UNREVOKED_PARTITIONS"
	case UnreleasedPartitions:
		return "UNRELEASED_PARTITIONS"
	}
	return "UNKNOWN"
}

// MemberStateOf returns the state of a record's State byte; a value this
// code does not know is Unknown, as Kafka's MemberState.fromValue.
func MemberStateOf(v int8) MemberState {
	switch s := MemberState(v); s {
	case Stable, UnrevokedPartitions, UnreleasedPartitions:
		return s
	}
	return Unknown
}

// Member is one member of a consumer group. Its assignments hold sorted
// partition slices (as assignor outputs); a Member value is not modified
// by this package once built: transitions return new values.
type Member struct {
	ID         string
	InstanceID string // "" for a dynamic member
	RackID     string
	ClientID   string
	ClientHost string

	SubscribedTopicNames []string
	SubscribedTopicRegex string
	ServerAssignor       string
	RebalanceTimeoutMs   int32

	// Classic is set for a member that speaks the classic protocol
	// (JoinGroup/SyncGroup/Heartbeat) inside this consumer group, after an
	// online migration (KIP-848): its session timeout and the protocols
	// of its last JoinGroup. nil for a member of the consumer protocol.
	// Shared, never modified: a change installs a new value.
	Classic *offsets.ClassicMemberMetadata

	State               MemberState
	MemberEpoch         int32
	PreviousMemberEpoch int32
	// Assigned is what the member owns or is being given.
	Assigned assignor.Assignment
	// PendingRevocation is what it must give up (UnrevokedPartitions).
	PendingRevocation assignor.Assignment
}

// withEpoch returns m moved to epoch e, remembering its epoch as the
// previous one (Kafka's Builder.updateMemberEpoch).
func (m Member) withEpoch(e int32) Member {
	m.PreviousMemberEpoch = m.MemberEpoch
	m.MemberEpoch = e
	return m
}

// UsesClassic reports whether m speaks the classic protocol.
func (m Member) UsesClassic() bool { return m.Classic != nil }
