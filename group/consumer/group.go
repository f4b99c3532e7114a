package consumer

import (
	"fmt"
	"maps"
	"slices"

	"github.com/sluice/sluice/group/consumer/assignor"
	"github.com/sluice/sluice/offsets"
)

// Group is the state of one consumer group: its epochs, its members, its
// target assignment and who holds each partition at which epoch.
//
// Invariants (checked by UpdateMember and RemoveMember):
//   - a partition is in at most one member's Assigned or PendingRevocation;
//   - partitionEpochs[t][p] is the MemberEpoch of the member that holds
//     partition p of t in Assigned or PendingRevocation; absent when none.
type Group struct {
	ID string
	// Epoch is the group epoch.
	Epoch int32
	// AssignmentEpoch is the epoch of Target (<= Epoch).
	AssignmentEpoch int32
	// Target is the target assignment, by member id.
	Target map[string]assignor.Assignment
	// Regexes are the group's resolved regex subscriptions, by regex.
	Regexes map[string]ResolvedRegex

	members         map[string]Member
	static          map[string]string // instance id -> member id
	partitionEpochs map[assignor.TopicID]map[int32]int32
}

// NewGroup returns an empty group at epoch 0.
func NewGroup(id string) *Group {
	return &Group{
		ID:              id,
		Target:          map[string]assignor.Assignment{},
		Regexes:         map[string]ResolvedRegex{},
		members:         map[string]Member{},
		static:          map[string]string{},
		partitionEpochs: map[assignor.TopicID]map[int32]int32{},
	}
}

// Member returns the member with id, if any.
func (g *Group) Member(id string) (Member, bool) {
	m, ok := g.members[id]
	return m, ok
}

// Len returns the number of members.
func (g *Group) Len() int { return len(g.members) }

// StaticMember returns the member holding instance id, if any.
func (g *Group) StaticMember(instanceID string) (Member, bool) {
	id, ok := g.static[instanceID]
	if !ok {
		return Member{}, false
	}
	return g.Member(id)
}

// PartitionEpoch returns the epoch at which partition p of t is held, or -1
// when no member holds it. It is Reconciliation.PartitionEpoch.
func (g *Group) PartitionEpoch(t assignor.TopicID, p int32) int32 {
	if e, ok := g.partitionEpochs[t][p]; ok {
		return e
	}
	return -1
}

// UpdateMember stores m, replacing the member of the same id, and moves
// the partition epochs from the old member's partitions to m's. It fails
// with ErrPartitionEpoch, changing nothing, when m would hold a partition
// another member holds.
func (g *Group) UpdateMember(m Member) error {
	old, had := g.members[m.ID]
	if had {
		g.release(old)
	}
	if err := g.claim(m); err != nil {
		if had {
			// Restore the old claims: they were consistent before.
			_ = g.claim(old)
		}
		return err
	}
	g.members[m.ID] = m
	if had && old.InstanceID != "" && old.InstanceID != m.InstanceID && g.static[old.InstanceID] == m.ID {
		delete(g.static, old.InstanceID)
	}
	if m.InstanceID != "" {
		g.static[m.InstanceID] = m.ID
	}
	return nil
}

// RemoveMember removes member id, its partition epochs and its target
// assignment. It does not bump the group epoch (BumpEpoch does).
func (g *Group) RemoveMember(id string) {
	old, ok := g.members[id]
	if !ok {
		return
	}
	g.release(old)
	delete(g.members, id)
	delete(g.Target, id)
	if old.InstanceID != "" && g.static[old.InstanceID] == id {
		delete(g.static, old.InstanceID)
	}
}

// BumpEpoch raises the group epoch by one, as Kafka does when members join
// or leave or change their subscription, or the subscribed topics change.
func (g *Group) BumpEpoch() { g.Epoch++ }

// SetTarget installs a new target assignment computed at epoch (normally
// g.Epoch), replacing the old one for every member named in target;
// members absent from it get an empty target.
func (g *Group) SetTarget(epoch int32, target map[string]assignor.Assignment) {
	g.AssignmentEpoch = epoch
	g.Target = make(map[string]assignor.Assignment, len(g.members))
	for id := range g.members {
		if a, ok := target[id]; ok {
			g.Target[id] = a
		} else {
			g.Target[id] = assignor.Assignment{}
		}
	}
}

// release drops m's partition epochs. REQUIRES: m's claims are stored.
func (g *Group) release(m Member) {
	for _, a := range []assignor.Assignment{m.Assigned, m.PendingRevocation} {
		for t, ps := range a {
			pe := g.partitionEpochs[t]
			for _, p := range ps {
				delete(pe, p)
			}
			if len(pe) == 0 {
				delete(g.partitionEpochs, t)
			}
		}
	}
}

// claim records m's partitions at m's epoch, or fails, undoing what it
// did, if any is held already.
func (g *Group) claim(m Member) error {
	var done []struct {
		t assignor.TopicID
		p int32
	}
	for _, a := range []assignor.Assignment{m.Assigned, m.PendingRevocation} {
		for t, ps := range a {
			for _, p := range ps {
				if e, held := g.partitionEpochs[t][p]; held {
					for _, d := range done {
						delete(g.partitionEpochs[d.t], d.p)
						if len(g.partitionEpochs[d.t]) == 0 {
							delete(g.partitionEpochs, d.t)
						}
					}
					return fmt.Errorf("%w: member %s cannot take %x-%d at epoch %d: held at epoch %d",
						ErrPartitionEpoch, m.ID, t, p, m.MemberEpoch, e)
				}
				if g.partitionEpochs[t] == nil {
					g.partitionEpochs[t] = map[int32]int32{}
				}
				g.partitionEpochs[t][p] = m.MemberEpoch
				done = append(done, struct {
					t assignor.TopicID
					p int32
				}{t, p})
			}
		}
	}
	return nil
}

// CheckSize is Kafka's throwIfConsumerGroupIsFull: with maxSize members
// already, only a known member id may heartbeat; an empty member id (a
// client that lets the coordinator pick one) or an unknown one gets
// ErrGroupMaxSizeReached.
func (g *Group) CheckSize(memberID string, maxSize int) error {
	if len(g.members) < maxSize {
		return nil
	}
	if _, known := g.members[memberID]; known && memberID != "" {
		return nil
	}
	return fmt.Errorf("%w: group %s has reached its maximum capacity of %d members", ErrGroupMaxSizeReached, g.ID, maxSize)
}

// Heartbeat is what a ConsumerGroupHeartbeat says about who is calling.
type Heartbeat struct {
	MemberID    string
	InstanceID  string // "" for a dynamic member
	MemberEpoch int32
	// Owned is the member's owned partitions; nil when the request's field
	// was null (not reported).
	Owned assignor.Assignment
}

// Lookup finds the member a heartbeat with a non-negative epoch speaks for,
// as Kafka's getOrMaybeSubscribe{Dynamic,Static}ConsumerGroupMember, and
// checks its epoch:
//
//   - epoch 0, dynamic: the member if known (its epoch is then checked),
//     else a new member (isNew).
//   - epoch 0, static: a new member if the instance id is free; if the
//     instance id is held by a member that left with epoch -2, or by a
//     member of the classic protocol, a copy of that member under the new
//     member id at epoch 0 (isNew and replaces names the old member id,
//     which the caller removes); if it is held by a member that did not
//     leave, ErrUnreleasedInstanceID.
//   - epoch > 0: the member must exist (ErrUnknownMemberID); a static
//     heartbeat must come from the instance id's current member id
//     (ErrFencedInstanceID); the epoch must pass CheckEpoch.
//
// Leaving (epochs -1 and -2) is Leave's.
func (g *Group) Lookup(h Heartbeat) (m Member, isNew bool, replaces string, err error) {
	create := h.MemberEpoch == JoinEpoch
	if h.InstanceID == "" {
		if m, ok := g.members[h.MemberID]; ok {
			return m, false, "", CheckEpoch(m, h.MemberEpoch, h.Owned)
		}
		if !create {
			return Member{}, false, "", fmt.Errorf("%w: member %s is not a member of group %s", ErrUnknownMemberID, h.MemberID, g.ID)
		}
		return Member{ID: h.MemberID}, true, "", nil
	}

	old, held := g.StaticMember(h.InstanceID)
	if create {
		if !held {
			// As Kafka's getOrMaybeCreateMember: an existing member id is
			// returned as is, without an epoch check.
			if m, ok := g.members[h.MemberID]; ok {
				return m, false, "", nil
			}
			return Member{ID: h.MemberID, InstanceID: h.InstanceID}, true, "", nil
		}
		// A classic member's instance is taken over at once (Kafka checks
		// the release only when both speak the consumer protocol): a
		// static classic consumer restarted with the new protocol.
		if old.MemberEpoch != StaticLeaveEpoch && !old.UsesClassic() {
			return Member{}, false, "", fmt.Errorf("%w: static member %s with instance id %s cannot join: the instance id is owned by member %s",
				ErrUnreleasedInstanceID, h.MemberID, h.InstanceID, old.ID)
		}
		m := old
		m.ID, m.MemberEpoch, m.PreviousMemberEpoch = h.MemberID, 0, 0
		return m, true, old.ID, nil
	}
	if !held {
		return Member{}, false, "", fmt.Errorf("%w: instance id %s is unknown", ErrUnknownMemberID, h.InstanceID)
	}
	if old.ID != h.MemberID {
		return Member{}, false, "", fmt.Errorf("%w: static member %s with instance id %s was fenced by member %s",
			ErrFencedInstanceID, h.MemberID, h.InstanceID, old.ID)
	}
	return old, false, "", CheckEpoch(old, h.MemberEpoch, h.Owned)
}

// Leave handles a heartbeat with epoch -1 (leave) or -2 (static member
// leaving temporarily), as Kafka's consumerGroupLeave. A dynamic member, or
// a static one with -1, is removed (with its target assignment; the caller
// bumps the group epoch: removed is true). A static member with -2 stays, at
// epoch -2, keeping its assignment but nothing pending revocation, so that
// the same instance can rejoin and get it back.
func (g *Group) Leave(memberID, instanceID string, epoch int32) (removed bool, err error) {
	var m Member
	if instanceID == "" {
		var ok bool
		if m, ok = g.members[memberID]; !ok {
			return false, fmt.Errorf("%w: member %s is not a member of group %s", ErrUnknownMemberID, memberID, g.ID)
		}
	} else {
		var ok bool
		if m, ok = g.StaticMember(instanceID); !ok {
			return false, fmt.Errorf("%w: instance id %s is unknown", ErrUnknownMemberID, instanceID)
		}
		if m.ID != memberID {
			return false, fmt.Errorf("%w: static member %s with instance id %s was fenced by member %s",
				ErrFencedInstanceID, memberID, instanceID, m.ID)
		}
		if epoch == StaticLeaveEpoch {
			m.MemberEpoch = StaticLeaveEpoch
			m.PendingRevocation = assignor.Assignment{}
			return false, g.UpdateMember(m)
		}
	}
	g.RemoveMember(m.ID)
	return true, nil
}

// CheckEpoch is Kafka's throwIfConsumerGroupMemberEpochIsInvalid: a
// received epoch ahead of the member's is fenced; one behind it is fenced
// too unless it is the member's previous epoch and owned (reported) is a
// subset of its assignment (the response that bumped the epoch was lost).
func CheckEpoch(m Member, received int32, owned assignor.Assignment) error {
	switch {
	case received > m.MemberEpoch:
		return fmt.Errorf("%w: member %s sent epoch %d, ahead of %d; it must abandon its partitions and rejoin",
			ErrFencedMemberEpoch, m.ID, received, m.MemberEpoch)
	case received < m.MemberEpoch:
		if received != m.PreviousMemberEpoch || !subset(owned, m.Assigned) {
			return fmt.Errorf("%w: member %s sent epoch %d, behind %d; it must abandon its partitions and rejoin",
				ErrFencedMemberEpoch, m.ID, received, m.MemberEpoch)
		}
	}
	return nil
}

// subset reports whether owned (reported, so non-nil) is within assigned.
// A topic listed in owned must be in assigned, even with no partitions, as
// Kafka's isSubset.
func subset(owned, assigned assignor.Assignment) bool {
	if owned == nil {
		return false
	}
	for t, ps := range owned {
		as, ok := assigned[t]
		if !ok {
			return false
		}
		for _, p := range ps {
			if !has(as, p) {
				return false
			}
		}
	}
	return true
}

// Clone returns a copy of g that shares nothing mutable with it (member
// values and assignment slices are never modified in place, so they are
// shared). The coordinator changes a clone and installs it only once the
// records of the change are durable, so a failed append leaves the group
// as it was.
func (g *Group) Clone() *Group {
	c := &Group{
		ID:              g.ID,
		Epoch:           g.Epoch,
		AssignmentEpoch: g.AssignmentEpoch,
		Target:          maps.Clone(g.Target),
		Regexes:         maps.Clone(g.Regexes),
		members:         maps.Clone(g.members),
		static:          maps.Clone(g.static),
		partitionEpochs: make(map[assignor.TopicID]map[int32]int32, len(g.partitionEpochs)),
	}
	if c.Regexes == nil {
		c.Regexes = map[string]ResolvedRegex{}
	}
	for t, pe := range g.partitionEpochs {
		c.partitionEpochs[t] = maps.Clone(pe)
	}
	return c
}

// Members returns the members, in no particular order.
func (g *Group) Members() []Member {
	out := make([]Member, 0, len(g.members))
	for _, m := range g.members {
		out = append(out, m)
	}
	return out
}

// ClassicMembers returns how many members speak the classic protocol.
func (g *Group) ClassicMembers() int {
	n := 0
	for _, m := range g.members {
		if m.UsesClassic() {
			n++
		}
	}
	return n
}

// AllClassicExcept is Kafka's allMembersUseClassicProtocolExcept: member
// id speaks the consumer protocol and every other member the classic one.
func (g *Group) AllClassicExcept(id string) bool {
	m, ok := g.members[id]
	return ok && !m.UsesClassic() && g.ClassicMembers() == len(g.members)-1
}

// SupportsClassicProtocols is Kafka's ConsumerGroup.supportsClassicProtocols:
// a classic member may join when its protocol type is "consumer" and one
// of the protocol names it lists is listed by every classic member (any
// name, when there are no members).
func (g *Group) SupportsClassicProtocols(protocolType string, names []string) bool {
	if protocolType != ClassicProtocolType {
		return false
	}
	if len(g.members) == 0 {
		return len(names) > 0
	}
	n := g.ClassicMembers()
	for _, name := range names {
		count := 0
		for _, m := range g.members {
			if m.UsesClassic() && slices.ContainsFunc(m.Classic.SupportedProtocols, func(p offsets.ClassicProtocol) bool { return p.Name == name }) {
				count++
			}
		}
		if count == n {
			return true
		}
	}
	return false
}

// ClassicProtocolType is the protocol type of Kafka consumers in JoinGroup,
// the only one a consumer group serves (ConsumerProtocol.PROTOCOL_TYPE).
const ClassicProtocolType = "consumer"

// WaitingOnUnreleased is Kafka's waitingOnUnreleasedPartition: m is in
// UnreleasedPartitions and a partition of its target it does not hold yet
// is still held by another member.
func (g *Group) WaitingOnUnreleased(m Member) bool {
	if m.State != UnreleasedPartitions {
		return false
	}
	for t, ps := range g.Target[m.ID] {
		for _, p := range ps {
			if !has(m.Assigned[t], p) && g.PartitionEpoch(t, p) != -1 {
				return true
			}
		}
	}
	return false
}
