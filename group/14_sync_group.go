package group

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/internal/errcode"
)

// SyncGroup (key 14), versions 0-5.
//
//	v1  throttle time
//	v3  group.instance.id (KIP-345)
//	v4  flexible
//	v5  protocol type and name, checked against the group's and echoed back
//
// In CompletingRebalance every member waits until the leader's SyncGroup
// brings the assignment; the group is saved, then everyone is answered and
// the group is Stable. In Stable the member's current assignment is returned.

func (c *Coordinator) syncGroup(ctx context.Context, req *kmsg.SyncGroupRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	res, wait := c.sync(req)
	if wait != nil {
		select {
		case res = <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	resp.ErrorCode = errcode.Code(res.err)
	if res.err == nil {
		pt, p := res.protocolType, res.protocol
		resp.ProtocolType, resp.Protocol = &pt, &p
		resp.MemberAssignment = res.assignment
		if resp.MemberAssignment == nil {
			resp.MemberAssignment = []byte{}
		}
	}
	return resp, nil
}

// sync runs a SyncGroup up to the point where it must wait (Kafka's
// doSyncGroup).
func (c *Coordinator) sync(req *kmsg.SyncGroupRequest) (syncResult, <-chan syncResult) {
	fail := func(err error) (syncResult, <-chan syncResult) { return syncResult{err: err}, nil }
	if err := c.validateGroup(req.Group); err != nil {
		return fail(err)
	}
	g := c.getGroup(req.Group, false)
	if g == nil && c.consumerGroupWithMembers(req.Group) == nil {
		return fail(errUnknownMemberID)
	}
	var instanceID *string
	if req.Version >= 3 {
		instanceID = req.InstanceID
	}
	if cg := c.consumerGroupWithMembers(req.Group); cg != nil {
		// A classic member of a consumer group (consumer_migration.go).
		return c.syncConsumerGroup(cg, req.MemberID, instanceID, req.Generation, req.ProtocolType, req.Protocol), nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.state == stateDead:
		return fail(errCoordinatorNotAvailable)
	case g.isStaticMemberFenced(instanceID, req.MemberID):
		return fail(errFencedInstanceID)
	case g.members[req.MemberID] == nil:
		return fail(errUnknownMemberID)
	case req.Generation != g.generation:
		return fail(errIllegalGeneration)
	case req.ProtocolType != nil && *req.ProtocolType != g.protocolType:
		return fail(errInconsistentProtocol)
	case req.Protocol != nil && *req.Protocol != g.protocol:
		return fail(errInconsistentProtocol)
	}
	m := g.members[req.MemberID]
	switch g.state {
	case statePreparingRebalance:
		return fail(errRebalanceInProgress)
	case stateStable:
		g.removePendingSyncLocked(m.id)
		c.scheduleHeartbeatLocked(g, m, m.sessionTimeout)
		return syncResult{protocolType: g.protocolType, protocol: g.protocol, assignment: m.assignment}, nil
	case stateCompletingRebalance:
		answerSync(m, syncResult{err: errRebalanceInProgress}) // a duplicate SyncGroup replaces the first
		m.syncCh = make(chan syncResult, 1)
		wait := m.syncCh
		g.removePendingSyncLocked(m.id)
		if m.id == g.leader {
			c.completeSyncLocked(g, req.GroupAssignment)
		}
		return syncResult{}, wait
	}
	return fail(errUnknownMemberID) // Empty
}

// completeSyncLocked saves the leader's assignment and answers every member
// waiting on SyncGroup. Members the leader left out get an empty assignment;
// assignments for ids not in the group are ignored. If the save fails,
// every waiting member gets the error and the group rebalances again.
// REQUIRES: g.mu held, g in CompletingRebalance.
func (c *Coordinator) completeSyncLocked(g *group, assignments []kmsg.SyncGroupRequestGroupAssignment) {
	byID := make(map[string][]byte, len(assignments))
	for _, a := range assignments {
		byID[a.MemberID] = a.MemberAssignment
	}
	now := c.clock.Now()
	sg := g.toStore()
	sg.State, sg.StateTime = stateStable.String(), now
	for i := range sg.Members {
		sg.Members[i].Assignment = byID[sg.Members[i].MemberID]
	}
	if err := c.putGroup(sg); err != nil {
		c.log.Warn("group: save assignment", "group", g.name, "err", err)
		err = storeErr(err)
		for _, m := range g.members {
			m.assignment = nil
			answerSync(m, syncResult{err: err})
		}
		c.maybePrepareRebalanceLocked(g)
		return
	}
	for _, m := range g.sortedMembers() {
		m.assignment = byID[m.id]
		if m.syncCh != nil {
			answerSync(m, syncResult{protocolType: g.protocolType, protocol: g.protocol, assignment: m.assignment})
			c.scheduleHeartbeatLocked(g, m, m.sessionTimeout)
		}
	}
	g.transitionLocked(stateStable, now)
	c.rebalances.classic.Add(1)
}
