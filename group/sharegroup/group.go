// Package sharegroup is the pure state of a share group (KIP-932): its
// epochs, members, target assignment and the simple assignor, as Kafka
// 4.2's modern/share/ShareGroup and ShareGroupMember, with the records of
// each change (package offsets' share records) and their replay. It does
// no I/O and keeps no timers: the group coordinator (group/share_*.go)
// owns those.
//
// A share member never revokes: its assignment moves straight to its
// target (Kafka's ShareGroupAssignmentBuilder), so every member is in state
// Stable (0) and a heartbeat that finds a new target answers it at once
// with the member epoch raised to the assignment epoch.
//
// A Group is not safe for concurrent use; the coordinator changes a Clone
// and installs it once the records of the change are committed.
package sharegroup

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/sluice/sluice/offsets"
)

// TopicID is a topic's UUID.
type TopicID = [16]byte

// Assignment is partitions by topic; each list sorted and unique.
type Assignment map[TopicID][]int32

// Clone returns a deep copy of a.
func (a Assignment) Clone() Assignment {
	if a == nil {
		return nil
	}
	out := make(Assignment, len(a))
	for t, ps := range a {
		out[t] = slices.Clone(ps)
	}
	return out
}

// Equal reports whether a and b hold the same partitions.
func (a Assignment) Equal(b Assignment) bool {
	if len(a) != len(b) {
		return false
	}
	for t, ps := range a {
		if !slices.Equal(ps, b[t]) {
			return false
		}
	}
	return true
}

// Count is the number of partitions in a.
func (a Assignment) Count() int {
	n := 0
	for _, ps := range a {
		n += len(ps)
	}
	return n
}

// Member states, Kafka's MemberState codes. Share members are always
// Stable. Part of the on-disk format (the State of record type 14).
const StateStable int8 = 0

// Epochs with a meaning in ShareGroupHeartbeat.
const (
	JoinEpoch  int32 = 0
	LeaveEpoch int32 = -1
)

// Member is one share group member.
type Member struct {
	ID                  string
	RackID              string // "" when not given (null)
	ClientID            string
	ClientHost          string
	Subscribed          []string // sorted, unique
	MemberEpoch         int32
	PreviousMemberEpoch int32
	State               int8
	Assigned            Assignment
}

func (m Member) clone() Member {
	m.Subscribed = slices.Clone(m.Subscribed)
	m.Assigned = m.Assigned.Clone()
	return m
}

// Group is one share group.
type Group struct {
	ID string
	// Epoch is the group epoch; it moves on every change of membership,
	// subscriptions or subscribed topics' metadata.
	Epoch int32
	// MetadataHash is the hash of the subscribed topics' metadata the
	// epoch was last bumped for.
	MetadataHash int64
	// AssignmentEpoch is the epoch of Target. Invariant: <= Epoch.
	AssignmentEpoch int32
	// Target is each member's target assignment at AssignmentEpoch.
	Target  map[string]Assignment
	members map[string]*Member
}

// NewGroup returns an empty group at epoch 0.
func NewGroup(id string) *Group {
	return &Group{ID: id, Target: map[string]Assignment{}, members: map[string]*Member{}}
}

// Clone returns a deep copy of g.
func (g *Group) Clone() *Group {
	out := *g
	out.Target = make(map[string]Assignment, len(g.Target))
	for id, a := range g.Target {
		out.Target[id] = a.Clone()
	}
	out.members = make(map[string]*Member, len(g.members))
	for id, m := range g.members {
		c := m.clone()
		out.members[id] = &c
	}
	return &out
}

// Len is the number of members.
func (g *Group) Len() int { return len(g.members) }

// Member returns a copy of member id.
func (g *Group) Member(id string) (Member, bool) {
	m, ok := g.members[id]
	if !ok {
		return Member{}, false
	}
	return m.clone(), true
}

// Members returns copies of every member, sorted by id.
func (g *Group) Members() []Member {
	out := make([]Member, 0, len(g.members))
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		out = append(out, g.members[id].clone())
	}
	return out
}

// SetMember adds or replaces m.
func (g *Group) SetMember(m Member) {
	c := m.clone()
	g.members[m.ID] = &c
}

// RemoveMember removes member id and its target.
func (g *Group) RemoveMember(id string) {
	delete(g.members, id)
	delete(g.Target, id)
}

// State is Kafka's ShareGroupState name: Empty or Stable.
func (g *Group) State() string {
	if len(g.members) == 0 {
		return "Empty"
	}
	return "Stable"
}

// SubscribedTopics returns the topic names any member subscribes to,
// sorted.
func (g *Group) SubscribedTopics() []string {
	set := map[string]bool{}
	for _, m := range g.members {
		for _, t := range m.Subscribed {
			set[t] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// Errors of CheckEpoch and Lookup, for the coordinator to map to Kafka's
// codes (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID).
var (
	ErrFencedEpoch   = errors.New("sharegroup: fenced member epoch")
	ErrUnknownMember = errors.New("sharegroup: unknown member")
)

// Lookup returns member id for a heartbeat at epoch, as Kafka's
// getOrMaybeSubscribeShareGroupMember: a new member (isNew) when absent and
// epoch is JoinEpoch; ErrUnknownMember when absent otherwise;
// ErrFencedEpoch when epoch is neither the member's epoch nor its previous
// one.
func (g *Group) Lookup(id string, epoch int32) (m Member, isNew bool, err error) {
	cur, ok := g.members[id]
	if !ok {
		if epoch != JoinEpoch {
			return Member{}, false, fmt.Errorf("%w: member %s is not a member of group %s", ErrUnknownMember, id, g.ID)
		}
		return Member{ID: id, State: StateStable}, true, nil
	}
	if epoch > cur.MemberEpoch {
		return Member{}, false, fmt.Errorf("%w: the share group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.",
			ErrFencedEpoch, epoch, cur.MemberEpoch)
	}
	if epoch < cur.MemberEpoch && epoch != cur.PreviousMemberEpoch {
		return Member{}, false, fmt.Errorf("%w: the share group member has a smaller member epoch (%d) than the one known by the group coordinator (%d), and it does not match the previous member epoch (%d). The member must abandon all its partitions and rejoin.",
			ErrFencedEpoch, epoch, cur.MemberEpoch, cur.PreviousMemberEpoch)
	}
	return cur.clone(), false, nil
}

// Reconcile returns m moved to the target assignment of epoch
// targetEpoch, as Kafka's ShareGroupAssignmentBuilder: when m's epoch is
// behind, it takes the target at once (a share member has nothing to
// revoke) and its epoch becomes targetEpoch.
func Reconcile(m Member, targetEpoch int32, target Assignment) Member {
	if m.MemberEpoch == targetEpoch && m.Assigned.Equal(target) {
		return m
	}
	if m.MemberEpoch != targetEpoch {
		m.PreviousMemberEpoch = m.MemberEpoch
		m.MemberEpoch = targetEpoch
	}
	m.State = StateStable
	m.Assigned = target.Clone()
	if m.Assigned == nil {
		m.Assigned = Assignment{}
	}
	return m
}

// ---- records ----

func tps(a Assignment) []offsets.ConsumerTopicPartitions {
	out := make([]offsets.ConsumerTopicPartitions, 0, len(a))
	for _, t := range slices.SortedFunc(maps.Keys(a), compareID) {
		out = append(out, offsets.ConsumerTopicPartitions{TopicID: t, Partitions: slices.Clone(a[t])})
	}
	return out
}

func fromTPs(ts []offsets.ConsumerTopicPartitions) Assignment {
	a := Assignment{}
	for _, t := range ts {
		ps := append(slices.Clone(a[t.TopicID]), t.Partitions...)
		slices.Sort(ps)
		a[t.TopicID] = slices.Compact(ps)
	}
	return a
}

func compareID(a, b TopicID) int { return strings.Compare(string(a[:]), string(b[:])) }

// EpochRecord is g's ShareGroupMetadata record.
func EpochRecord(g *Group) offsets.ShareRecord {
	return offsets.ShareRecord{Key: offsets.ShareKey{Type: offsets.ShareGroupMetadataType, Group: g.ID},
		Value: offsets.ShareGroupMetadataValue{Epoch: g.Epoch, MetadataHash: g.MetadataHash}}
}

// MemberMetadataRecord is m's ShareGroupMemberMetadata record.
func MemberMetadataRecord(group string, m Member) offsets.ShareRecord {
	v := offsets.ShareMemberMetadataValue{ClientID: m.ClientID, ClientHost: m.ClientHost, SubscribedTopicNames: slices.Clone(m.Subscribed)}
	if m.RackID != "" {
		r := m.RackID
		v.RackID = &r
	}
	return offsets.ShareRecord{Key: offsets.ShareKey{Type: offsets.ShareGroupMemberMetadataType, Group: group, Member: m.ID}, Value: v}
}

// CurrentAssignmentRecord is m's ShareGroupCurrentMemberAssignment record.
func CurrentAssignmentRecord(group string, m Member) offsets.ShareRecord {
	return offsets.ShareRecord{Key: offsets.ShareKey{Type: offsets.ShareGroupCurrentMemberAssignmentType, Group: group, Member: m.ID},
		Value: offsets.ShareCurrentMemberAssignmentValue{MemberEpoch: m.MemberEpoch, PreviousMemberEpoch: m.PreviousMemberEpoch,
			State: m.State, AssignedPartitions: tps(m.Assigned)}}
}

// TargetMemberRecord is member id's ShareGroupTargetAssignmentMember record.
func TargetMemberRecord(group, id string, a Assignment) offsets.ShareRecord {
	return offsets.ShareRecord{Key: offsets.ShareKey{Type: offsets.ShareGroupTargetAssignmentMemberType, Group: group, Member: id},
		Value: offsets.ShareTargetAssignmentMemberValue{TopicPartitions: tps(a)}}
}

// TargetEpochRecord is g's ShareGroupTargetAssignmentMetadata record.
func TargetEpochRecord(g *Group) offsets.ShareRecord {
	return offsets.ShareRecord{Key: offsets.ShareKey{Type: offsets.ShareGroupTargetAssignmentMetadataType, Group: g.ID},
		Value: offsets.ShareTargetAssignmentMetadataValue{AssignmentEpoch: g.AssignmentEpoch}}
}

// MemberTombstones are the records removing member id, in Kafka's order
// (current assignment, target, subscription).
func MemberTombstones(group, id string) []offsets.ShareRecord {
	return []offsets.ShareRecord{
		{Key: offsets.ShareKey{Type: offsets.ShareGroupCurrentMemberAssignmentType, Group: group, Member: id}},
		{Key: offsets.ShareKey{Type: offsets.ShareGroupTargetAssignmentMemberType, Group: group, Member: id}},
		{Key: offsets.ShareKey{Type: offsets.ShareGroupMemberMetadataType, Group: group, Member: id}},
	}
}

// GroupTombstones are the records deleting an empty group, as Kafka's
// ShareGroup.createGroupTombstoneRecords: target epoch, state partition
// metadata, group epoch.
func GroupTombstones(group string) []offsets.ShareRecord {
	return []offsets.ShareRecord{
		{Key: offsets.ShareKey{Type: offsets.ShareGroupTargetAssignmentMetadataType, Group: group}},
		{Key: offsets.ShareKey{Type: offsets.ShareGroupStatePartitionMetadataType, Group: group}},
		{Key: offsets.ShareKey{Type: offsets.ShareGroupMetadataType, Group: group}},
	}
}

// ErrReplay marks a record that does not apply to the group.
var ErrReplay = errors.New("sharegroup: record does not replay")

// Replay applies one record of g (a tombstone when Value is nil), as
// Kafka's GroupMetadataManager.replay for share records. Type 9 (Kafka
// 4.0's partition metadata) and 15 (the share-partition side's) change
// nothing here.
func (g *Group) Replay(r offsets.ShareRecord) error {
	if r.Key.Group != g.ID {
		return fmt.Errorf("%w: record of group %q replayed into %q", ErrReplay, r.Key.Group, g.ID)
	}
	id := r.Key.Member
	switch v := r.Value.(type) {
	case nil:
		switch r.Key.Type {
		case offsets.ShareGroupMemberMetadataType:
			delete(g.members, id)
		case offsets.ShareGroupTargetAssignmentMemberType:
			delete(g.Target, id)
		case offsets.ShareGroupCurrentMemberAssignmentType:
			if m := g.members[id]; m != nil {
				m.MemberEpoch, m.PreviousMemberEpoch, m.Assigned = 0, 0, Assignment{}
			}
		case offsets.ShareGroupMetadataType:
			*g = *NewGroup(g.ID)
		case offsets.ShareGroupTargetAssignmentMetadataType:
			g.AssignmentEpoch = 0
		}
	case offsets.ShareMemberMetadataValue:
		m := g.members[id]
		if m == nil {
			m = &Member{ID: id, State: StateStable, Assigned: Assignment{}}
			g.members[id] = m
		}
		m.RackID = ""
		if v.RackID != nil {
			m.RackID = *v.RackID
		}
		m.ClientID, m.ClientHost = v.ClientID, v.ClientHost
		subs := slices.Clone(v.SubscribedTopicNames)
		slices.Sort(subs)
		m.Subscribed = slices.Compact(subs)
	case offsets.ShareGroupMetadataValue:
		g.Epoch, g.MetadataHash = v.Epoch, v.MetadataHash
	case offsets.ShareTargetAssignmentMetadataValue:
		g.AssignmentEpoch = v.AssignmentEpoch
	case offsets.ShareTargetAssignmentMemberValue:
		g.Target[id] = fromTPs(v.TopicPartitions)
	case offsets.ShareCurrentMemberAssignmentValue:
		m := g.members[id]
		if m == nil {
			// Kafka writes the metadata first; a current assignment alone
			// makes a member without subscription, as Kafka's replay.
			m = &Member{ID: id}
			g.members[id] = m
		}
		m.MemberEpoch, m.PreviousMemberEpoch, m.State = v.MemberEpoch, v.PreviousMemberEpoch, v.State
		m.Assigned = fromTPs(v.AssignedPartitions)
	case offsets.SharePartitionMetadataValue, offsets.ShareStatePartitionMetadataValue:
	default:
		return fmt.Errorf("%w: unexpected value %T", ErrReplay, v)
	}
	return nil
}
