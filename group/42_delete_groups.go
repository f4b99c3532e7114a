package group

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/internal/errcode"
	"github.com/sluice/sluice/metastore"
)

// DeleteGroups (key 42), versions 0-2.
//
//	v2  flexible
//
// Only a group without members (Empty) can be deleted: its saved state, all
// its committed offsets and its pending transactional offsets (as Kafka,
// which deletes an Empty group whatever transactions are open) go in one
// atomic metastore write. A group with
// members answers NON_EMPTY_GROUP, an unknown one GROUP_ID_NOT_FOUND.

func (c *Coordinator) deleteGroups(req *kmsg.DeleteGroupsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	for _, name := range req.Groups {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group = name
		rg.ErrorCode = errcode.Code(c.deleteGroup(name))
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

// deleteGroup deletes one group; nil when deleted.
func (c *Coordinator) deleteGroup(name string) error {
	if err := c.validateGroup(name); err != nil {
		return err
	}
	if isShare, err := c.deleteShareGroup(name); isShare {
		return err
	}
	isConsumer, err := c.deleteConsumerGroup(name)
	if err != nil {
		return err
	}
	g := c.getGroup(name, false)
	if g == nil {
		if isConsumer {
			return nil // a consumer group without offsets
		}
		return errGroupIDNotFound
	}
	g.mu.Lock()
	switch g.state {
	case stateDead:
		err = errGroupIDNotFound
	case stateEmpty:
		err = c.killLocked(g)
	default:
		err = errNonEmptyGroup
	}
	g.mu.Unlock()
	if err == nil {
		c.forget(g)
	}
	return err
}

// killLocked moves an Empty group to Dead and deletes its saved state and
// offsets. On a failed write the group stays Empty and the error says why.
// The caller removes the group from the map with forget after unlocking.
// REQUIRES: g.mu held, g Empty.
func (c *Coordinator) killLocked(g *group) error {
	tps := make([]metastore.TopicPartition, 0, len(g.offsets))
	for tp := range g.offsets {
		tps = append(tps, tp)
	}
	if err := c.persistDeletes(g.name, tps); err != nil {
		return err
	}
	if err := c.persistGroup(metastore.Group{Name: g.name}, true); err != nil {
		return storeErr(err)
	}
	if err := c.store.DeleteGroup(g.name); err != nil && !errors.Is(err, metastore.ErrNotFound) {
		c.log.Warn("group: delete group", "group", g.name, "err", err)
		return storeErr(err)
	}
	g.stopTimersLocked()
	for id := range g.pending {
		stopTimer(g.pending[id].timer)
		delete(g.pending, id)
	}
	clear(g.offsets)
	clear(g.pendingTxn)
	g.transitionLocked(stateDead, c.clock.Now())
	return nil
}

// forget removes a Dead group from the map (if it is still the one there).
func (c *Coordinator) forget(g *group) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.groups[g.name] == g {
		delete(c.groups, g.name)
	}
}
