package group

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kmsg"

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
		rg.ErrorCode = c.deleteGroup(name)
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

// deleteGroup deletes one group and returns its error code.
func (c *Coordinator) deleteGroup(name string) int16 {
	if code := c.validateGroup(name); code != 0 {
		return code
	}
	g := c.getGroup(name, false)
	if g == nil {
		return errGroupIDNotFound
	}
	g.mu.Lock()
	var code int16
	switch g.state {
	case stateDead:
		code = errGroupIDNotFound
	case stateEmpty:
		code = c.killLocked(g)
	default:
		code = errNonEmptyGroup
	}
	g.mu.Unlock()
	if code == 0 {
		c.forget(g)
	}
	return code
}

// killLocked moves an Empty group to Dead and deletes its saved state and
// offsets. On a store failure the group stays Empty and the code says why.
// The caller removes the group from the map with forget after unlocking.
// REQUIRES: g.mu held, g Empty.
func (c *Coordinator) killLocked(g *group) int16 {
	tps := make([]metastore.TopicPartition, 0, len(g.offsets))
	for tp := range g.offsets {
		tps = append(tps, tp)
	}
	if code := c.persistDeletes(g.name, tps); code != 0 {
		return code
	}
	if err := c.persistGroup(metastore.Group{Name: g.name}, true); err != nil {
		return storeErrorCode(err)
	}
	if err := c.store.DeleteGroup(g.name); err != nil && !errors.Is(err, metastore.ErrNotFound) {
		c.log.Warn("group: delete group", "group", g.name, "err", err)
		return storeErrorCode(err)
	}
	g.stopTimersLocked()
	for id := range g.pending {
		stopTimer(g.pending[id].timer)
		delete(g.pending, id)
	}
	clear(g.offsets)
	clear(g.pendingTxn)
	g.transitionLocked(stateDead, c.clock.Now())
	return 0
}

// forget removes a Dead group from the map (if it is still the one there).
func (c *Coordinator) forget(g *group) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.groups[g.name] == g {
		delete(c.groups, g.name)
	}
}
