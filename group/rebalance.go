package group

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/metastore"
)

// This file is the rebalance machinery shared by the request handlers:
// timers, adding and removing members, and the transitions of Kafka's
// GroupCoordinator (prepareRebalance, onCompleteJoin, onExpireHeartbeat,
// onExpirePendingSync). Every function here REQUIRES g.mu held.

func stopTimer(t Timer) {
	if t != nil {
		t.Stop()
	}
}

// answerJoin answers the member's waiting JoinGroup, if any.
func answerJoin(m *member, res joinResult) {
	if m.joinCh != nil {
		m.joinCh <- res
		m.joinCh = nil
	}
}

// answerSync answers the member's waiting SyncGroup, if any.
func answerSync(m *member, res syncResult) {
	if m.syncCh != nil {
		m.syncCh <- res
		m.syncCh = nil
	}
}

// stopTimersLocked stops the group's rebalance and pending-sync timers.
func (g *group) stopTimersLocked() {
	stopTimer(g.rebalanceTimer)
	g.rebalanceTimer = nil
	g.rebalanceSeq++
	stopTimer(g.syncTimer)
	g.syncTimer = nil
	g.syncSeq++
}

// scheduleHeartbeatLocked (re)starts m's session timer: if nothing resets it
// within timeout, the member is removed (Kafka's
// completeAndScheduleNextHeartbeatExpiration).
func (c *Coordinator) scheduleHeartbeatLocked(g *group, m *member, timeout time.Duration) {
	stopTimer(m.hbTimer)
	m.hbSeq++
	seq, id := m.hbSeq, m.id
	m.hbTimer = c.clock.AfterFunc(timeout, func() { c.onHeartbeatExpired(g, id, seq) })
}

// onHeartbeatExpired removes a member whose session timed out. A member that
// waits on a JoinGroup or SyncGroup satisfies its heartbeats (the rebalance
// timeout bounds it instead), unless it is new: a new member's first join
// may time out.
func (c *Coordinator) onHeartbeatExpired(g *group, id string, seq uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	m := g.members[id]
	if g.state == stateDead || m == nil || m.hbSeq != seq {
		return
	}
	if !m.isNew && (m.joinCh != nil || m.syncCh != nil) {
		return
	}
	c.log.Info("group: member session expired", "group", g.name, "member", id)
	c.removeMemberLocked(g, m)
}

// schedulePendingExpiryLocked expires a KIP-394 pending member that does
// not join within its session timeout.
func (c *Coordinator) schedulePendingExpiryLocked(g *group, id string, timeout time.Duration) {
	p := g.pending[id]
	stopTimer(p.timer)
	p.seq++
	seq := p.seq
	p.timer = c.clock.AfterFunc(timeout, func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if p2 := g.pending[id]; p2 == p && p.seq == seq {
			c.removePendingLocked(g, id)
		}
	})
}

// removePendingLocked forgets a pending member id; a join phase waiting on
// it may now complete.
func (c *Coordinator) removePendingLocked(g *group, id string) {
	if p := g.pending[id]; p != nil {
		stopTimer(p.timer)
		delete(g.pending, id)
	}
	if g.state == statePreparingRebalance {
		c.maybeCompleteJoinLocked(g)
	}
}

// addMemberLocked adds m to g (Kafka's GroupMetadata.add): the first member
// sets the protocol type and becomes leader.
func (g *group) addMemberLocked(m *member) {
	if len(g.members) == 0 {
		g.protocolType = m.protocolType
	}
	g.joinSeq++
	m.seq = g.joinSeq
	g.members[m.id] = m
	if g.leader == "" {
		g.leader = m.id
	}
	if m.instanceID != "" {
		g.static[m.instanceID] = m.id
	}
	if p := g.pending[m.id]; p != nil {
		stopTimer(p.timer)
		delete(g.pending, m.id)
	}
}

// dropMemberLocked removes m from g's books (Kafka's GroupMetadata.remove)
// without changing g's state, stops its session timer and answers a SyncGroup
// it waits on with UNKNOWN_MEMBER_ID.
func (g *group) dropMemberLocked(m *member) {
	stopTimer(m.hbTimer)
	m.hbSeq++
	answerSync(m, syncResult{err: errUnknownMemberID})
	delete(g.members, m.id)
	if m.instanceID != "" && g.static[m.instanceID] == m.id {
		delete(g.static, m.instanceID)
	}
	delete(g.pendingSync, m.id)
	if g.leader == m.id {
		g.leader = ""
		if ms := g.sortedMembers(); len(ms) > 0 {
			g.leader = ms[0].id
		}
	}
}

// removeMemberLocked removes a member that left or expired and moves the
// group on (Kafka's removeMemberAndUpdateGroup): a JoinGroup it waits on gets
// UNKNOWN_MEMBER_ID; a Stable or CompletingRebalance group rebalances; a
// join phase may now complete.
func (c *Coordinator) removeMemberLocked(g *group, m *member) {
	answerJoin(m, joinResult{err: errUnknownMemberID, generation: -1})
	g.dropMemberLocked(m)
	switch g.state {
	case stateStable, stateCompletingRebalance:
		c.maybePrepareRebalanceLocked(g)
	case statePreparingRebalance:
		c.maybeCompleteJoinLocked(g)
	}
}

// maybePrepareRebalanceLocked starts a rebalance if g's state allows one.
func (c *Coordinator) maybePrepareRebalanceLocked(g *group) {
	switch g.state {
	case stateStable, stateCompletingRebalance, stateEmpty:
		c.prepareRebalanceLocked(g)
	}
}

// prepareRebalanceLocked moves g to PreparingRebalance. Members waiting on
// SyncGroup get REBALANCE_IN_PROGRESS. An Empty group waits
// group.initial.rebalance.delay.ms, extended while new members arrive but
// never past the rebalance timeout (Kafka's InitialDelayedJoin); otherwise
// the join phase ends when every member rejoined or after the rebalance
// timeout (DelayedJoin).
func (c *Coordinator) prepareRebalanceLocked(g *group) {
	if g.state == stateCompletingRebalance {
		for _, m := range g.members {
			m.assignment = nil
			answerSync(m, syncResult{err: errRebalanceInProgress})
		}
	}
	g.stopTimersLocked()
	wasEmpty := g.state == stateEmpty
	g.transitionLocked(statePreparingRebalance, c.clock.Now())
	timeout := g.rebalanceTimeout()
	if wasEmpty {
		delay := c.opts.InitialRebalanceDelay
		g.initialDelay = true
		c.scheduleInitialJoinLocked(g, delay, max(timeout-delay, 0))
		return
	}
	g.initialDelay = false
	g.rebalanceSeq++
	seq := g.rebalanceSeq
	g.rebalanceTimer = c.clock.AfterFunc(timeout, func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.rebalanceSeq == seq && g.state == statePreparingRebalance {
			c.completeJoinLocked(g)
		}
	})
	c.maybeCompleteJoinLocked(g)
}

// scheduleInitialJoinLocked waits delay, then either extends the wait (a new
// member arrived and time remains) or completes the join phase.
func (c *Coordinator) scheduleInitialJoinLocked(g *group, delay, remaining time.Duration) {
	if delay <= 0 {
		c.completeJoinLocked(g)
		return
	}
	g.rebalanceSeq++
	seq := g.rebalanceSeq
	g.rebalanceTimer = c.clock.AfterFunc(delay, func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.rebalanceSeq != seq || g.state != statePreparingRebalance {
			return
		}
		if g.newMemberAdded && remaining > 0 {
			g.newMemberAdded = false
			next := min(c.opts.InitialRebalanceDelay, remaining)
			c.scheduleInitialJoinLocked(g, next, max(remaining-next, 0))
			return
		}
		c.completeJoinLocked(g)
	})
}

// maybeCompleteJoinLocked ends the join phase once every member rejoined,
// unless the initial delay is running.
func (c *Coordinator) maybeCompleteJoinLocked(g *group) {
	if g.state == statePreparingRebalance && !g.initialDelay && g.allJoined() {
		c.completeJoinLocked(g)
	}
}

// completeJoinLocked ends the join phase (Kafka's onCompleteJoin): members
// that did not rejoin are removed, the generation advances, and every member
// is answered, the leader with everyone's metadata. A group left without
// members becomes Empty and is saved.
func (c *Coordinator) completeJoinLocked(g *group) {
	g.stopTimersLocked()
	g.initialDelay = false
	g.newMemberAdded = false
	for _, m := range g.notYetRejoined() {
		c.log.Info("group: member did not rejoin in time", "group", g.name, "member", m.id)
		g.dropMemberLocked(m)
	}
	now := c.clock.Now()
	g.generation++
	clear(g.pendingSync)
	if len(g.members) == 0 {
		g.protocol = ""
		g.subscribed = nil
		g.transitionLocked(stateEmpty, now)
		if err := c.putGroup(g.toStore()); err != nil {
			c.log.Warn("group: save empty group", "group", g.name, "err", err)
		}
		return
	}
	g.protocol = g.selectProtocol()
	g.computeSubscribed()
	g.transitionLocked(stateCompletingRebalance, now)
	for _, m := range g.sortedMembers() {
		res := g.currentJoinResult(m.id, g.leader)
		if m.id == g.leader {
			res.members = g.memberMetadata()
		}
		answerJoin(m, res)
		m.isNew = false
		c.scheduleHeartbeatLocked(g, m, m.sessionTimeout)
		g.pendingSync[m.id] = struct{}{}
	}
	c.schedulePendingSyncLocked(g)
}

// currentJoinResult is a successful JoinGroup answer for memberID in the
// current generation, naming leader as the leader, without member list.
func (g *group) currentJoinResult(memberID, leader string) joinResult {
	return joinResult{
		memberID:     memberID,
		generation:   g.generation,
		protocolType: g.protocolType,
		protocol:     g.protocol,
		hasProtocol:  true,
		leader:       leader,
	}
}

// memberMetadata is the member list the leader gets: each member's metadata
// for the chosen protocol, in arrival order.
func (g *group) memberMetadata() []kmsg.JoinGroupResponseMember {
	out := make([]kmsg.JoinGroupResponseMember, 0, len(g.members))
	for _, m := range g.sortedMembers() {
		jm := kmsg.NewJoinGroupResponseMember()
		jm.MemberID = m.id
		if m.instanceID != "" {
			jm.InstanceID = &m.instanceID
		}
		jm.ProtocolMetadata = m.metadata(g.protocol)
		out = append(out, jm)
	}
	return out
}

// schedulePendingSyncLocked removes, after the rebalance timeout, the
// members that got this generation's JoinGroup answer but never sent
// SyncGroup, and rebalances without them (Kafka's onExpirePendingSync).
func (c *Coordinator) schedulePendingSyncLocked(g *group) {
	stopTimer(g.syncTimer)
	g.syncSeq++
	seq := g.syncSeq
	g.syncTimer = c.clock.AfterFunc(g.rebalanceTimeout(), func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.syncSeq != seq || (g.state != stateCompletingRebalance && g.state != stateStable) {
			return
		}
		if len(g.pendingSync) == 0 {
			return
		}
		for id := range g.pendingSync {
			if m := g.members[id]; m != nil {
				c.log.Info("group: member did not sync in time", "group", g.name, "member", id)
				g.dropMemberLocked(m)
			}
		}
		clear(g.pendingSync)
		c.prepareRebalanceLocked(g)
	})
}

// removePendingSyncLocked notes that id sent SyncGroup; the pending-sync
// timer stops once everyone has.
func (g *group) removePendingSyncLocked(id string) {
	delete(g.pendingSync, id)
	if len(g.pendingSync) == 0 {
		stopTimer(g.syncTimer)
		g.syncTimer = nil
		g.syncSeq++
	}
}

// protocolsOf converts a JoinGroup's protocol list.
func protocolsOf(ps []kmsg.JoinGroupRequestProtocol) []metastore.GroupProtocol {
	out := make([]metastore.GroupProtocol, 0, len(ps))
	for _, p := range ps {
		out = append(out, metastore.GroupProtocol{Name: p.Name, Metadata: p.Metadata})
	}
	return out
}
