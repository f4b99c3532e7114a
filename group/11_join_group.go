package group

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/internal/errcode"
	"github.com/sluice/sluice/metastore"
)

// JoinGroup (key 11), versions 0-9.
//
//	v1  rebalance timeout (v0: the session timeout serves as both)
//	v2  throttle time
//	v4  KIP-394: a join without member id gets MEMBER_ID_REQUIRED and an id
//	v5  KIP-345 static membership: group.instance.id
//	v6  flexible
//	v7  protocol type and name in the response
//	v8  reason
//	v9  KIP-814 skip assignment: a rejoining static leader of a Stable group
//	    learns it leads without having to assign

// joinArgs is one JoinGroup, normalized.
type joinArgs struct {
	version              int16
	memberID             string
	instanceID           *string
	clientID, clientHost string
	session, rebalance   time.Duration
	protocolType         string
	protocols            []metastore.GroupProtocol
}

func (c *Coordinator) joinGroup(ctx context.Context, req *kmsg.JoinGroupRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	res, wait := c.join(ctx, req)
	if wait != nil {
		select {
		case res = <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	resp.ErrorCode = errcode.Code(res.err)
	resp.MemberID = res.memberID
	resp.Generation = res.generation
	resp.LeaderID = res.leader
	resp.SkipAssignment = res.skipAssignment
	resp.Members = res.members
	if res.hasProtocol {
		pt, p := res.protocolType, res.protocol
		resp.ProtocolType, resp.Protocol = &pt, &p
	}
	return resp, nil
}

// join runs a JoinGroup up to the point where it must wait. It returns
// either a final result (wait == nil) or the channel the result will come on.
func (c *Coordinator) join(ctx context.Context, req *kmsg.JoinGroupRequest) (joinResult, <-chan joinResult) {
	fail := func(err error) (joinResult, <-chan joinResult) {
		return joinResult{err: err, memberID: req.MemberID, generation: -1}, nil
	}
	if err := c.validateGroup(req.Group); err != nil {
		return fail(err)
	}
	if c.isShareGroup(req.Group) {
		return fail(fmt.Errorf("%w: Group %s is not a classic group.", errGroupIDNotFound, req.Group))
	}
	a := joinArgs{
		version:      req.Version,
		memberID:     req.MemberID,
		session:      time.Duration(req.SessionTimeoutMillis) * time.Millisecond,
		rebalance:    time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond,
		protocolType: req.ProtocolType,
		protocols:    protocolsOf(req.Protocols),
	}
	if req.Version == 0 {
		a.rebalance = a.session
	}
	if req.Version >= 5 && req.InstanceID != nil {
		a.instanceID = req.InstanceID
	}
	a.clientID, a.clientHost = clientFrom(ctx)
	if a.session < c.opts.MinSessionTimeout || a.session > c.opts.MaxSessionTimeout {
		return fail(errInvalidSessionTimeout)
	}
	if cg := c.consumerGroupWithMembers(req.Group); cg != nil {
		// A classic member of a consumer group (consumer_migration.go).
		var cl *group
		if a.memberID == "" && a.instanceID != nil {
			// A static member replacing the last member of the
			// consumer protocol may downgrade the group: take the
			// classic group's lock first.
			if cl = c.lockClassicForReplace(req.Group, *a.instanceID); cl != nil {
				defer cl.mu.Unlock()
			}
		}
		return c.joinConsumerGroup(ctx, cl, cg, a), nil
	}
	if err := c.dropEmptyConsumerGroup(req.Group); err != nil {
		return fail(err)
	}

	unknown := a.memberID == ""
	g := c.getGroup(req.Group, unknown)
	if g == nil {
		return fail(errUnknownMemberID)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.state == stateDead {
		return fail(errCoordinatorNotAvailable)
	}
	if !g.supportsProtocols(a.protocolType, a.protocols) {
		return fail(errInconsistentProtocol)
	}
	if !c.acceptJoiningLocked(g, a.memberID) {
		return fail(errGroupMaxSizeReached)
	}
	var res joinResult
	var wait <-chan joinResult
	if unknown {
		res, wait = c.joinNewMemberLocked(g, a)
	} else {
		res, wait = c.joinCurrentMemberLocked(g, a)
	}
	// Kafka attempts to complete the join phase after every JoinGroup.
	c.maybeCompleteJoinLocked(g)
	return res, wait
}

// acceptJoiningLocked applies group.max.size (Kafka's acceptJoiningMember).
func (c *Coordinator) acceptJoiningLocked(g *group, memberID string) bool {
	limit := c.opts.MaxGroupSize
	if limit <= 0 {
		return true
	}
	m := g.members[memberID]
	switch g.state {
	case statePreparingRebalance:
		if m != nil && m.joinCh != nil {
			return true
		}
		n := 0
		for _, m := range g.members {
			if m.joinCh != nil {
				n++
			}
		}
		return n < limit
	case stateCompletingRebalance, stateStable:
		return m != nil || len(g.members) < limit
	}
	return true
}

// joinNewMemberLocked handles a join without member id (Kafka's
// doNewMemberJoinGroup): a static member takes over its instance id; a
// dynamic one on v4+ first gets an id with MEMBER_ID_REQUIRED; older ones
// join at once.
func (c *Coordinator) joinNewMemberLocked(g *group, a joinArgs) (joinResult, <-chan joinResult) {
	if a.instanceID != nil {
		a.memberID = newMemberID(*a.instanceID)
		if oldID, ok := g.static[*a.instanceID]; ok {
			return c.replaceStaticMemberLocked(g, oldID, a)
		}
		return joinResult{}, c.addMemberAndRebalanceLocked(g, a)
	}
	a.memberID = newMemberID(a.clientID)
	if a.version >= 4 {
		g.pending[a.memberID] = &pendingMember{}
		c.schedulePendingExpiryLocked(g, a.memberID, a.session)
		return joinResult{err: errMemberIDRequired, memberID: a.memberID, generation: -1}, nil
	}
	return joinResult{}, c.addMemberAndRebalanceLocked(g, a)
}

// joinCurrentMemberLocked handles a join with a member id (Kafka's
// doCurrentMemberJoinGroup).
func (c *Coordinator) joinCurrentMemberLocked(g *group, a joinArgs) (joinResult, <-chan joinResult) {
	fail := func(err error) (joinResult, <-chan joinResult) {
		return joinResult{err: err, memberID: a.memberID, generation: -1}, nil
	}
	if _, ok := g.pending[a.memberID]; ok {
		if a.instanceID != nil {
			return fail(errUnknownMemberID) // static members are never pending
		}
		return joinResult{}, c.addMemberAndRebalanceLocked(g, a)
	}
	if err := g.validateMember(a.memberID, a.instanceID); err != nil {
		return fail(err)
	}
	m := g.members[a.memberID]
	switch g.state {
	case statePreparingRebalance:
		return joinResult{}, c.updateMemberAndRebalanceLocked(g, m, a)
	case stateCompletingRebalance:
		if m.matches(a.protocols) {
			// The member lost our answer: repeat it.
			res := g.currentJoinResult(m.id, g.leader)
			if m.id == g.leader {
				res.members = g.memberMetadata()
			}
			return res, nil
		}
		return joinResult{}, c.updateMemberAndRebalanceLocked(g, m, a)
	case stateStable:
		if m.id == g.leader || !m.matches(a.protocols) {
			// The leader rejoining forces a rebalance (it may have seen
			// metadata change); so does a member changing its metadata.
			return joinResult{}, c.updateMemberAndRebalanceLocked(g, m, a)
		}
		return g.currentJoinResult(m.id, g.leader), nil
	}
	return fail(errUnknownMemberID)
}

// addMemberAndRebalanceLocked adds a member waiting on its JoinGroup and
// starts (or joins) a rebalance. Until the join phase ends, the member is
// "new": it expires after Kafka's new-member join timeout (5 minutes) if no
// rebalance completes, so defunct joins do not pile up.
func (c *Coordinator) addMemberAndRebalanceLocked(g *group, a joinArgs) <-chan joinResult {
	m := &member{
		id: a.memberID, clientID: a.clientID, clientHost: a.clientHost,
		rebalanceTimeout: a.rebalance, sessionTimeout: a.session,
		protocolType: a.protocolType, protocols: a.protocols,
		isNew:  true,
		joinCh: make(chan joinResult, 1),
	}
	if a.instanceID != nil {
		m.instanceID = *a.instanceID
	}
	if g.state == statePreparingRebalance && g.generation == 0 {
		g.newMemberAdded = true
	}
	g.addMemberLocked(m)
	c.scheduleHeartbeatLocked(g, m, newMemberJoinTimeout)
	wait := m.joinCh // the rebalance may complete, and answer, right here
	c.maybePrepareRebalanceLocked(g)
	return wait
}

// updateMemberAndRebalanceLocked records a known member's new join and
// starts a rebalance if none is in progress.
func (c *Coordinator) updateMemberAndRebalanceLocked(g *group, m *member, a joinArgs) <-chan joinResult {
	c.updateMemberLocked(m, a)
	wait := m.joinCh // the rebalance may complete, and answer, right here
	c.maybePrepareRebalanceLocked(g)
	return wait
}

// updateMemberLocked stores a join's protocols and timeouts in m and makes m
// wait on a fresh answer channel. An older JoinGroup of the same member
// still waiting is answered REBALANCE_IN_PROGRESS (Kafka drops it; the
// client has given up on it already).
func (c *Coordinator) updateMemberLocked(m *member, a joinArgs) {
	m.protocols = a.protocols
	m.rebalanceTimeout = a.rebalance
	m.sessionTimeout = a.session
	answerJoin(m, joinResult{err: errRebalanceInProgress, memberID: m.id, generation: -1})
	m.joinCh = make(chan joinResult, 1)
}

// replaceStaticMemberLocked handles a static member rejoining with a new
// member id (a restarted consumer), as Kafka's
// updateStaticMemberAndRebalance: the old id is fenced (a JoinGroup or
// SyncGroup it waits on gets FENCED_INSTANCE_ID, later requests too) and the
// new id inherits the member, with its assignment. In a Stable group whose
// chosen protocol and member metadata stay the same, the member gets the
// current generation back without a rebalance; otherwise a rebalance starts.
//
// Sluice adds one condition to Kafka's: a changed subscription also
// rebalances, since no other member would otherwise learn of it. For the
// consumer protocol type only the subscribed topics count: the rest of a
// consumer's metadata (owned partitions, generation, user data) is its
// client state, which a restarted client always resets, so comparing it
// would rebalance on every restart and defeat static membership.
func (c *Coordinator) replaceStaticMemberLocked(g *group, oldID string, a joinArgs) (joinResult, <-chan joinResult) {
	oldLeader := g.leader
	m := g.members[oldID]
	oldMetadata := m.metadata(g.protocol)

	answerJoin(m, joinResult{err: errFencedInstanceID, memberID: oldID, generation: -1})
	answerSync(m, syncResult{err: errFencedInstanceID})
	delete(g.members, oldID)
	m.id = a.memberID
	g.members[m.id] = m
	g.static[*a.instanceID] = m.id
	if g.leader == oldID {
		g.leader = m.id
	}
	if _, ok := g.pendingSync[oldID]; ok {
		delete(g.pendingSync, oldID)
		g.pendingSync[m.id] = struct{}{}
	}
	m.clientID, m.clientHost = a.clientID, a.clientHost
	c.scheduleHeartbeatLocked(g, m, a.session)
	c.updateMemberLocked(m, a)
	wait := m.joinCh

	switch g.state {
	case stateStable:
		if g.selectProtocol() != g.protocol || !g.sameSubscription(m.metadata(g.protocol), oldMetadata) {
			c.maybePrepareRebalanceLocked(g)
			return joinResult{}, wait
		}
		if err := c.putGroup(g.toStore()); err != nil {
			c.log.Warn("group: save replaced static member", "group", g.name, "err", err)
			// Undo, as Kafka does when the store fails.
			m.joinCh = nil
			delete(g.members, m.id)
			m.id = oldID
			g.members[oldID] = m
			g.static[*a.instanceID] = oldID
			if g.leader == a.memberID {
				g.leader = oldID
			}
			c.scheduleHeartbeatLocked(g, m, m.sessionTimeout)
			return joinResult{err: storeErr(err), generation: g.generation, leader: oldLeader}, nil
		}
		m.joinCh = nil
		if a.version >= 9 {
			isLeader := g.leader == m.id
			res := g.currentJoinResult(m.id, g.leader)
			if isLeader {
				res.members = g.memberMetadata()
				res.skipAssignment = true
			}
			return res, nil
		}
		// Before v9, name the old leader id so that a restarted leader
		// does not think it leads and run a useless assignment.
		return g.currentJoinResult(m.id, oldLeader), nil
	case stateCompletingRebalance:
		// The leader may be assigning to the old id: rebalance again.
		c.prepareRebalanceLocked(g)
	}
	return joinResult{}, wait
}

// sameSubscription reports whether two metadata of a member for g's chosen
// protocol subscribe to the same thing: for the consumer protocol type, the
// same topics (as a set); for others, or undecodable consumer metadata, the
// same bytes.
// REQUIRES: g.mu held.
func (g *group) sameSubscription(a, b []byte) bool {
	if g.protocolType == consumerProtocolType {
		var ma, mb kmsg.ConsumerMemberMetadata
		if ma.ReadFrom(a) == nil && mb.ReadFrom(b) == nil {
			ta, tb := slices.Clone(ma.Topics), slices.Clone(mb.Topics)
			slices.Sort(ta)
			slices.Sort(tb)
			return slices.Equal(slices.Compact(ta), slices.Compact(tb))
		}
	}
	return string(a) == string(b)
}
