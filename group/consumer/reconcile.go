package consumer

import (
	"fmt"
	"maps"
	"slices"

	"github.com/sluice/sluice/group/consumer/assignor"
)

// Reconciliation is what Reconcile needs besides the member: the group's
// view at this heartbeat.
type Reconciliation struct {
	// TargetEpoch and Target are the target assignment epoch and the
	// member's part of the target assignment (slices sorted, as an
	// assignor returns them; Member assignments are sorted too).
	TargetEpoch int32
	Target      assignor.Assignment
	// Subscribed is the set of topics the member subscribes to (names and
	// its regex resolved). A nil map means every topic: no topic is taken
	// away for not being subscribed. A non-nil empty map is an empty
	// subscription.
	Subscribed map[assignor.TopicID]bool
	// EnforceSubscriptionConsistency strips no-longer-subscribed topics
	// from the member's assignment even when no new target is due (Kafka
	// sets it when the subscription changed, or the assignment is
	// inconsistent with it).
	EnforceSubscriptionConsistency bool
	// PartitionEpoch returns the epoch of a partition's current owner, or
	// -1 when nobody holds it (Group.PartitionEpoch). Required.
	PartitionEpoch func(assignor.TopicID, int32) int32
	// Owned is what the heartbeat says the member owns. A nil map means
	// the heartbeat did not say (the field was null): the member is assumed
	// to still own everything it was asked to revoke. A non-nil empty map
	// means it owns nothing.
	Owned assignor.Assignment
}

// Reconcile moves member m towards its target assignment, as Kafka's
// CurrentAssignmentBuilder.build (Kafka 4.x, trunk semantics), and returns
// the member's next state, or m itself when it cannot progress:
//
//   - Stable at an older epoch than the target: compute the next step.
//   - UnrevokedPartitions: wait until Owned no longer holds any partition
//     pending revocation; then compute the next step from the member's
//     epoch.
//   - UnreleasedPartitions: compute the next step (partitions freed since
//     are handed over).
//   - Unknown: fenced (ErrFencedMemberEpoch) unless Owned is empty, then
//     reconciled from the target epoch.
//
// The next step: assigned partitions not in the target (or in topics no
// longer subscribed) must be revoked first, the member staying at its epoch
// in UnrevokedPartitions if it still owns any; otherwise it moves to the
// target epoch and gets the target partitions that nobody else holds, in
// Stable or, if some are still held by others, in UnreleasedPartitions. A
// partition this member itself is revoking is not "held by others".
func Reconcile(m Member, r Reconciliation) (Member, error) {
	switch m.State {
	case Stable:
		if m.MemberEpoch != r.TargetEpoch {
			return r.next(m, m.MemberEpoch), nil
		}
		if r.EnforceSubscriptionConsistency {
			return r.stripUnsubscribed(m), nil
		}
		return m, nil
	case UnrevokedPartitions:
		if r.ownsAny(m.PendingRevocation) {
			if r.EnforceSubscriptionConsistency {
				return r.stripUnsubscribed(m), nil
			}
			return m, nil
		}
		return r.next(m, m.MemberEpoch), nil
	case UnreleasedPartitions:
		return r.next(m, m.MemberEpoch), nil
	}
	// Unknown: a state of a newer coordinator; the member must drop
	// everything and rejoin.
	if r.Owned == nil || len(r.Owned) > 0 {
		return m, fmt.Errorf("%w: member %s is in an unknown state; it must abandon its partitions and rejoin", ErrFencedMemberEpoch, m.ID)
	}
	return r.next(m, r.TargetEpoch), nil
}

// ownsAny reports whether Owned holds any partition of a, assuming so when
// Owned was not reported.
func (r *Reconciliation) ownsAny(a assignor.Assignment) bool {
	if r.Owned == nil {
		return true
	}
	for t, ps := range r.Owned {
		for _, p := range ps {
			if has(a[t], p) {
				return true
			}
		}
	}
	return false
}

func (r *Reconciliation) subscribes(t assignor.TopicID) bool {
	return r.Subscribed == nil || r.Subscribed[t]
}

// next is Kafka's computeNextAssignment: memberEpoch is the epoch the
// member stays at if it must revoke.
func (r *Reconciliation) next(m Member, memberEpoch int32) Member {
	topics := slices.Collect(maps.Keys(r.Target))
	for t := range m.Assigned {
		if _, ok := r.Target[t]; !ok {
			topics = append(topics, t)
		}
	}
	slices.SortFunc(topics, assignor.TopicID.Compare)

	assigned := assignor.Assignment{}
	revoke := assignor.Assignment{}
	give := assignor.Assignment{}
	unreleased := false
	for _, t := range topics {
		target := r.Target[t]
		if !r.subscribes(t) {
			target = nil
		}
		cur := m.Assigned[t]
		var keep, rev, add []int32
		for _, p := range cur {
			if has(target, p) {
				keep = append(keep, p)
			} else {
				rev = append(rev, p)
			}
		}
		for _, p := range target {
			if has(keep, p) {
				continue
			}
			if r.PartitionEpoch(t, p) != -1 && !has(m.PendingRevocation[t], p) {
				unreleased = true // still held by another member
				continue
			}
			add = append(add, p)
		}
		if len(keep) > 0 {
			assigned[t] = keep
		}
		if len(rev) > 0 {
			revoke[t] = rev
		}
		if len(add) > 0 {
			give[t] = add
		}
	}

	switch {
	case len(revoke) > 0 && r.ownsAny(revoke):
		m = m.withEpoch(memberEpoch)
		m.State, m.Assigned, m.PendingRevocation = UnrevokedPartitions, assigned, revoke
	case len(give) > 0:
		for t, ps := range give {
			merged := append(slices.Clone(assigned[t]), ps...)
			slices.Sort(merged)
			assigned[t] = merged
		}
		m = m.withEpoch(r.TargetEpoch)
		m.State, m.Assigned, m.PendingRevocation = Stable, assigned, assignor.Assignment{}
		if unreleased {
			m.State = UnreleasedPartitions
		}
	case unreleased:
		m = m.withEpoch(r.TargetEpoch)
		m.State, m.Assigned, m.PendingRevocation = UnreleasedPartitions, assigned, assignor.Assignment{}
	default:
		m = m.withEpoch(r.TargetEpoch)
		m.State, m.Assigned, m.PendingRevocation = Stable, assigned, assignor.Assignment{}
	}
	return m
}

// stripUnsubscribed is Kafka's updateCurrentAssignment: it takes the
// topics the member no longer subscribes to out of its assignment, to be
// revoked, without moving towards a new target.
func (r *Reconciliation) stripUnsubscribed(m Member) Member {
	var assigned, pending assignor.Assignment
	if r.Subscribed != nil && len(r.Subscribed) == 0 && len(m.PendingRevocation) == 0 {
		// Nothing subscribed: everything goes to revocation. (Kafka
		// rebuilds the member here even when it held nothing.)
		assigned, pending = assignor.Assignment{}, m.Assigned
	} else {
		for t, ps := range m.Assigned {
			if r.subscribes(t) {
				continue
			}
			if assigned == nil {
				assigned = maps.Clone(m.Assigned)
				pending = maps.Clone(m.PendingRevocation)
				if pending == nil {
					pending = assignor.Assignment{}
				}
			}
			delete(assigned, t)
			merged := slices.Clone(pending[t])
			for _, p := range ps {
				if !has(merged, p) {
					merged = append(merged, p)
				}
			}
			slices.Sort(merged)
			pending[t] = merged
		}
		if assigned == nil {
			return m // every assigned topic is still subscribed
		}
	}
	if len(pending) > 0 && r.ownsAny(pending) {
		m = m.withEpoch(m.MemberEpoch)
		m.State, m.Assigned, m.PendingRevocation = UnrevokedPartitions, assigned, pending
		return m
	}
	// Already revoked: shrink the assignment, keep the state.
	m = m.withEpoch(m.MemberEpoch)
	m.Assigned = assigned
	return m
}

// has reports whether sorted ps holds p.
func has(ps []int32, p int32) bool {
	_, ok := slices.BinarySearch(ps, p)
	return ok
}
