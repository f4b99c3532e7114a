package group

// Offsets of consumer groups (KIP-848): OffsetCommit and OffsetFetch check
// the member epoch as Kafka's ConsumerGroup.validateOffsetCommit and
// validateOffsetFetch do; the offsets themselves are stored as every
// group's are.

import (
	"fmt"

	"github.com/sluice/sluice/internal/errcode"
)

// errUnsupportedCommitVersion: a member of the consumer protocol commits
// with OffsetCommit below v9 (UNSUPPORTED_VERSION).
var errUnsupportedCommitVersion = errcode.ErrUnsupportedCommitVersion

// validateConsumerCommit reports whether name is a consumer group here and,
// if so, whether a commit by memberID at epoch (OffsetCommit's generation
// field) of request version may proceed: an anonymous commit (epoch < 0)
// only while the group has no members; otherwise the member must exist
// (UNKNOWN_MEMBER_ID), commit with v9+ unless transactional or a classic
// member (UNSUPPORTED_VERSION) and send its current epoch
// (STALE_MEMBER_EPOCH; ILLEGAL_GENERATION for a classic member, whose
// generation is its member epoch). A TxnOffsetCommit that names no member,
// epoch or instance (a transactional producer that does not pass its
// consumer's group metadata) is accepted whatever the members, as Kafka's
// ConsumerGroup.validateOffsetCommit: those fields are optional there.
func (c *Coordinator) validateConsumerCommit(name, memberID string, instanceID *string, epoch int32, version int16, transactional bool) (isConsumer bool, err error) {
	if err := c.notShareGroup(name); err != nil {
		return false, err
	}
	cg := c.consumerGroup(name, false)
	if cg == nil {
		return false, nil
	}
	cg.mu.Lock()
	defer cg.mu.Unlock()
	if epoch < 0 && cg.g.Len() == 0 {
		return true, nil
	}
	if transactional && epoch == -1 && memberID == "" && instanceID == nil {
		return true, nil
	}
	m, ok := cg.g.Member(memberID)
	if !ok {
		return true, fmt.Errorf("%w: member %s is not a member of group %s", errUnknownMemberID, memberID, name)
	}
	if !transactional && !m.UsesClassic() && version < 9 {
		return true, fmt.Errorf("%w: OffsetCommit version 9 or above must be used by members using the consumer group protocol", errUnsupportedCommitVersion)
	}
	if epoch != m.MemberEpoch && m.UsesClassic() {
		return true, fmt.Errorf("%w: member %s of group %s committed at generation %d; its epoch is %d",
			errIllegalGeneration, memberID, name, epoch, m.MemberEpoch)
	}
	if epoch != m.MemberEpoch {
		return true, fmt.Errorf("%w: member %s of group %s committed at epoch %d; its epoch is %d",
			errcode.ErrStaleMemberEpoch, memberID, name, epoch, m.MemberEpoch)
	}
	return true, nil
}

// validateConsumerFetch is Kafka's ConsumerGroup.validateOffsetFetch for
// OffsetFetch v9+: a request without a member id and with a negative epoch
// (an admin client) is accepted; otherwise the member must exist
// (UNKNOWN_MEMBER_ID) at that epoch (STALE_MEMBER_EPOCH). Groups that are
// not consumer groups are not checked here.
func (c *Coordinator) validateConsumerFetch(name string, memberID *string, epoch int32) error {
	if memberID == nil && epoch < 0 {
		return nil
	}
	cg := c.consumerGroup(name, false)
	if cg == nil {
		return nil
	}
	cg.mu.Lock()
	defer cg.mu.Unlock()
	id := ""
	if memberID != nil {
		id = *memberID
	}
	m, ok := cg.g.Member(id)
	if !ok {
		return fmt.Errorf("%w: member %s is not a member of group %s", errUnknownMemberID, id, name)
	}
	if epoch != m.MemberEpoch && m.UsesClassic() {
		return fmt.Errorf("%w: member %s of group %s fetched at generation %d; its epoch is %d",
			errIllegalGeneration, id, name, epoch, m.MemberEpoch)
	}
	if epoch != m.MemberEpoch {
		return fmt.Errorf("%w: member %s of group %s fetched at epoch %d; its epoch is %d",
			errcode.ErrStaleMemberEpoch, id, name, epoch, m.MemberEpoch)
	}
	return nil
}

// consumerSubscribed returns, for a consumer group, whether one of its
// members subscribes to a topic (by name or through a resolved regex):
// Kafka keeps those offsets past the retention (its
// OffsetMetadataManager.cleanupExpiredOffsets skips subscribed topics). nil
// when name is no consumer group here.
// Lock order: a classic group's mu may be held; cgroup.mu is taken inside.
func (c *Coordinator) consumerSubscribed(name string) func(string) bool {
	cg := c.consumerGroup(name, false)
	if cg == nil {
		return nil
	}
	cg.mu.Lock()
	defer cg.mu.Unlock()
	if cg.dead {
		return nil
	}
	set := map[string]bool{}
	for _, m := range cg.g.Members() {
		for _, t := range m.SubscribedTopicNames {
			set[t] = true
		}
		if m.SubscribedTopicRegex != "" {
			for _, t := range cg.g.Regexes[m.SubscribedTopicRegex].Topics {
				set[t] = true
			}
		}
	}
	return func(t string) bool { return set[t] }
}
