package group

import "fmt"

// WithEmptyShareGroup is for AlterShareGroupOffsets (91) and
// DeleteShareGroupOffsets (92): it runs f while share group name has no
// members and cannot gain one (its lock is held, so a joining heartbeat
// waits for f). As Kafka's GroupMetadataManager:
//
//   - a consumer or classic group of that name is GROUP_ID_NOT_FOUND;
//   - an absent share group is created (empty) when create is set (Alter),
//     else GROUP_ID_NOT_FOUND (Delete);
//   - a group with members is NON_EMPTY_GROUP.
//
// A group created here is not written to __consumer_offsets until a member
// joins: after a restart it is listed again once it has a member (its share
// state, in __share_group_state, stays).
func (c *Coordinator) WithEmptyShareGroup(name string, create bool, f func() error) error {
	if !c.isShareGroup(name) && (c.isConsumerGroup(name) || c.getGroup(name, false) != nil) {
		return errNotShareGroup(name)
	}
	sg := c.shareGroup(name, create)
	if sg == nil {
		return fmt.Errorf("%w: Group %s not found.", errGroupIDNotFound, name)
	}
	sg.mu.Lock()
	defer sg.mu.Unlock()
	if sg.dead {
		return fmt.Errorf("%w: Group %s not found.", errGroupIDNotFound, name)
	}
	if n := sg.g.Len(); n > 0 {
		return fmt.Errorf("%w: share group %s has %d members", errNonEmptyGroup, name, n)
	}
	return f()
}
