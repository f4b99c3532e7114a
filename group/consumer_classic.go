package group

// Classic members in a consumer group (KIP-848 online migration, Kafka's
// classicGroup{Join,Sync,Heartbeat,Leave}ToConsumerGroup): the JoinGroup,
// SyncGroup, Heartbeat and LeaveGroup of a classic client in a consumer
// group with members, served from the consumer group's state, and the
// join and sync timers of such members. consumer_migration.go has the
// conversions and the overview.

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/group/consumer"
)

// consumerGroupWithMembers returns the consumer group called name when it
// has members (classic requests are then served by it), else nil.
func (c *Coordinator) consumerGroupWithMembers(name string) *cgroup {
	cg := c.consumerGroup(name, false)
	if cg == nil {
		return nil
	}
	cg.mu.Lock()
	defer cg.mu.Unlock()
	if cg.dead || cg.g.Len() == 0 {
		return nil
	}
	return cg
}

// classicMemberLocked is Kafka's validateConsumerGroupMember and
// throwIfMemberDoesNotUseClassicProtocol for a classic request.
// REQUIRES: cg.mu held.
func (cg *cgroup) classicMemberLocked(memberID string, instanceID *string) (consumer.Member, error) {
	var m consumer.Member
	if instanceID == nil {
		var ok bool
		if m, ok = cg.g.Member(memberID); !ok {
			return m, fmt.Errorf("%w: member %s is not a member of group %s", errUnknownMemberID, memberID, cg.g.ID)
		}
	} else {
		var ok bool
		if m, ok = cg.g.StaticMember(*instanceID); !ok {
			return m, fmt.Errorf("%w: member with instance id %s is not a member of group %s", errUnknownMemberID, *instanceID, cg.g.ID)
		}
		if m.ID != memberID {
			return m, fmt.Errorf("%w: static member %s with instance id %s was fenced by member %s", errFencedInstanceID, memberID, *instanceID, m.ID)
		}
	}
	if !m.UsesClassic() {
		return m, fmt.Errorf("%w: member %s does not use the classic protocol", errUnknownMemberID, m.ID)
	}
	return m, nil
}

// joinConsumerGroup serves a classic JoinGroup into a consumer group with
// members (Kafka's classicGroupJoinToConsumerGroup). It never waits.
// cl, when set, is the classic group of the same name, locked, for a
// downgrade by a static member's replacement (lockClassicForReplace).
func (c *Coordinator) joinConsumerGroup(ctx context.Context, cl *group, cg *cgroup, a joinArgs) joinResult {
	cg.mu.Lock()
	defer cg.mu.Unlock()
	res, err := c.joinConsumerGroupLocked(ctx, cl, cg, a)
	if err != nil {
		return joinResult{err: err, memberID: a.memberID, generation: -1}
	}
	return res
}

// joinConsumerGroupLocked is joinConsumerGroup under the group's lock.
// REQUIRES: cg.mu held.
func (c *Coordinator) joinConsumerGroupLocked(ctx context.Context, cl *group, cg *cgroup, a joinArgs) (joinResult, error) {
	if cg.dead || cg.g.Len() == 0 {
		return joinResult{}, errCoordinatorNotAvailable // converted or unloaded meanwhile: retry
	}
	memberID := a.memberID
	unknown := memberID == ""
	if unknown {
		memberID = newMemberID("consumer")[len("consumer-"):]
	}
	g := cg.g.Clone()
	if err := g.CheckSize(memberID, c.consumerMaxSize()); err != nil {
		return joinResult{}, err
	}
	names := make([]string, 0, len(a.protocols))
	for _, p := range a.protocols {
		names = append(names, p.Name)
	}
	if !g.SupportsClassicProtocols(a.protocolType, names) {
		return joinResult{}, fmt.Errorf("%w: member %s's protocols are not supported", errInconsistentProtocol, memberID)
	}
	if unknown && a.version >= 4 && a.instanceID == nil {
		// KIP-394: the member rejoins with the id we name.
		return joinResult{err: errMemberIDRequired, memberID: memberID, generation: -1}, nil
	}
	sub, err := decodeSubscription(a.protocols[0].Metadata)
	if err != nil {
		// Kafka throws IllegalStateException here: UNKNOWN_SERVER_ERROR.
		return joinResult{}, fmt.Errorf("group: malformed embedded consumer protocol in the subscription of member %s: %w", memberID, err)
	}

	// The member, as Kafka's getOrMaybeSubscribe{Dynamic,Static}
	// ConsumerGroupMember for the classic protocol: a dynamic member id is
	// created if unknown; a static member joining without member id takes
	// the place of the instance's member (no UNRELEASED_INSTANCE_ID), with
	// its assignment, at epoch 0; one rejoining with its id must hold the
	// instance.
	var recs []consumer.Record
	m, isNew, replaces := consumer.Member{ID: memberID}, true, ""
	var old consumer.Member
	var held bool
	switch {
	case a.instanceID == nil:
		if old, held = g.Member(memberID); held {
			m, isNew = old, false
		}
	case unknown:
		if old, held = g.StaticMember(*a.instanceID); held {
			m, replaces = old, old.ID
			m.ID, m.MemberEpoch, m.PreviousMemberEpoch = memberID, 0, 0
			target := g.Target[old.ID]
			g.RemoveMember(old.ID)
			recs = append(recs, consumer.MemberTombstones(g.ID, old.ID)...)
			g.Target[memberID] = target
			recs = append(recs, consumer.TargetMemberRecord(g.ID, memberID, target))
		}
	default:
		if old, held = g.StaticMember(*a.instanceID); !held {
			return joinResult{}, fmt.Errorf("%w: instance id %s is unknown", errUnknownMemberID, *a.instanceID)
		}
		if old.ID != memberID {
			return joinResult{}, fmt.Errorf("%w: static member %s with instance id %s was fenced by member %s", errFencedInstanceID, memberID, *a.instanceID, old.ID)
		}
		m, isNew = old, false
	}

	upd := m
	if a.instanceID != nil {
		upd.InstanceID = *a.instanceID
	}
	if sub.Rack != nil {
		upd.RackID = *sub.Rack
	}
	if a.rebalance >= 0 {
		upd.RebalanceTimeoutMs = int32(a.rebalance.Milliseconds())
	}
	upd.SubscribedTopicNames = sortedTopics(sub.Topics)
	upd.ClientID, upd.ClientHost = a.clientID, a.clientHost
	upd.Classic = classicMetadata(a.session, a.protocols)
	subChanged := (isNew && replaces == "") || !slices.Equal(upd.SubscribedTopicNames, m.SubscribedTopicNames)
	mdChanged := isNew || subChanged || upd.InstanceID != m.InstanceID || upd.RackID != m.RackID ||
		upd.RebalanceTimeoutMs != m.RebalanceTimeoutMs || upd.ClientID != m.ClientID ||
		upd.ClientHost != m.ClientHost || !sameClassic(upd.Classic, m.Classic)
	next, recs, hash, asgChanged, err := c.reconcileLocked(ctx, cg, g, m, upd, isNew, subChanged, c.ownedIDs(sub.OwnedPartitions), recs)
	if err != nil {
		return joinResult{}, err
	}
	answer := joinResult{
		memberID:     next.ID,
		generation:   next.MemberEpoch,
		protocolType: consumerProtocolType,
		protocol:     a.protocols[0].Name,
		hasProtocol:  true,
	}
	if replaces != "" && cl != nil {
		// The last member of the consumer protocol replaced by a classic
		// one: the group becomes classic, the joining member in the
		// replaced one's place (Kafka's downgrade in
		// classicGroupJoinToConsumerGroup).
		if done, err := c.downgradeLocked(cl, cg, replaces, &next); done {
			if err != nil {
				return joinResult{}, err
			}
			if subChanged {
				// Its subscription differs from the replaced member's:
				// the classic group must rebalance (Kafka 4.1+).
				c.prepareRebalanceLocked(cl)
			}
			return answer, nil
		}
	}
	recs = appendMemberRecords(recs, g.ID, next, mdChanged, asgChanged)
	if err := c.persistConsumer(ctx, g.ID, recs); err != nil {
		c.log.Warn("group: persist classic join into a consumer group", "group", g.ID, "member", next.ID, "err", err)
		return joinResult{}, appendErr(err)
	}
	c.noteConsumerInstall(cg.g, g)
	cg.g, cg.metaHash, cg.subNames = g, hash, subscribedNames(g)
	if replaces != "" {
		cg.dropTimersLocked(replaces)
	}
	c.scheduleSessionLocked(cg, next.ID)
	if next.State == consumer.UnrevokedPartitions {
		c.scheduleRebalanceLocked(cg, next)
	} else {
		cg.cancelRebalanceLocked(next.ID)
	}
	cg.cancelClassicLocked(next.ID, classicJoinTimer)
	c.scheduleClassicLocked(cg, next, classicSyncTimer)
	return answer, nil
}

// syncConsumerGroup serves a classic SyncGroup in a consumer group (Kafka's
// classicGroupSyncToConsumerGroup): the member's current assignment, in
// the version of its subscription.
func (c *Coordinator) syncConsumerGroup(cg *cgroup, memberID string, instanceID *string, generation int32, protocolType, protocol *string) syncResult {
	cg.mu.Lock()
	defer cg.mu.Unlock()
	if cg.dead {
		return syncResult{err: errCoordinatorNotAvailable}
	}
	m, err := cg.classicMemberLocked(memberID, instanceID)
	if err != nil {
		return syncResult{err: err}
	}
	if generation != m.MemberEpoch {
		return syncResult{err: fmt.Errorf("%w: generation %d is not member %s's epoch %d", errIllegalGeneration, generation, m.ID, m.MemberEpoch)}
	}
	if len(m.Classic.SupportedProtocols) == 0 {
		// Only a hostile log holds such a member: JoinGroup needs one.
		return syncResult{err: fmt.Errorf("%w: member %s has no protocol", errInconsistentProtocol, m.ID)}
	}
	name := m.Classic.SupportedProtocols[0].Name
	if protocolType != nil && *protocolType != consumerProtocolType || protocol != nil && *protocol != name {
		return syncResult{err: fmt.Errorf("%w: member %s syncs with another protocol than it joined with", errInconsistentProtocol, m.ID)}
	}
	if err := c.rejoinDueLocked(cg, m); err != nil {
		return syncResult{err: err}
	}
	cg.cancelClassicLocked(m.ID, classicSyncTimer)
	c.scheduleSessionLocked(cg, m.ID)
	return syncResult{
		protocolType: consumerProtocolType,
		protocol:     name,
		assignment:   c.encodeAssignment(m.Assigned, subscriptionVersion(m.Classic.SupportedProtocols[0].Metadata)),
	}
}

// rejoinDueLocked is Kafka's throwIfRebalanceInProgress: a member behind
// the group epoch must rejoin first, unless it is revoking partitions
// (its next join follows the revocation).
// REQUIRES: cg.mu held.
func (c *Coordinator) rejoinDueLocked(cg *cgroup, m consumer.Member) error {
	if cg.g.Epoch > m.MemberEpoch && m.State != consumer.UnrevokedPartitions {
		c.scheduleClassicLocked(cg, m, classicJoinTimer)
		return fmt.Errorf("%w: a new rebalance is triggered in group %s and member %s should rejoin to catch up",
			errRebalanceInProgress, cg.g.ID, m.ID)
	}
	return nil
}

// heartbeatConsumerGroup serves a classic Heartbeat in a consumer group
// (Kafka's classicGroupHeartbeatToConsumerGroup): REBALANCE_IN_PROGRESS
// when the member lags the group epoch, must revoke, or may collect
// partitions that were released.
func (c *Coordinator) heartbeatConsumerGroup(cg *cgroup, memberID string, instanceID *string, generation int32) error {
	cg.mu.Lock()
	defer cg.mu.Unlock()
	if cg.dead {
		return errCoordinatorNotAvailable
	}
	m, err := cg.classicMemberLocked(memberID, instanceID)
	if err != nil {
		return err
	}
	if generation != m.MemberEpoch {
		return fmt.Errorf("%w: generation %d is not member %s's epoch %d", errIllegalGeneration, generation, m.ID, m.MemberEpoch)
	}
	c.scheduleSessionLocked(cg, m.ID)
	if m.MemberEpoch < cg.g.Epoch || m.State == consumer.UnrevokedPartitions ||
		(m.State == consumer.UnreleasedPartitions && !cg.g.WaitingOnUnreleased(m)) {
		c.scheduleClassicLocked(cg, m, classicJoinTimer)
		return errRebalanceInProgress
	}
	return nil
}

// leaveConsumerGroup serves a classic LeaveGroup in a consumer group
// (Kafka's classicGroupLeaveToConsumerGroup): each named classic member is
// removed and, if any was, the group epoch bumped once. It returns one
// error per leaving member and the top-level error (a failed append).
func (c *Coordinator) leaveConsumerGroup(cg *cgroup, leaving []kmsg.LeaveGroupRequestMember) ([]error, error) {
	errs := make([]error, len(leaving))
	cg.mu.Lock()
	defer cg.mu.Unlock()
	if cg.dead {
		return errs, errCoordinatorNotAvailable
	}
	g := cg.g.Clone()
	var recs []consumer.Record
	var removed []string
	for i, lm := range leaving {
		var m consumer.Member
		switch {
		case lm.InstanceID == nil:
			var ok bool
			if m, ok = g.Member(lm.MemberID); !ok {
				errs[i] = fmt.Errorf("%w: member %s is not a member of group %s", errUnknownMemberID, lm.MemberID, g.ID)
				continue
			}
		default:
			var ok bool
			if m, ok = g.StaticMember(*lm.InstanceID); !ok {
				errs[i] = fmt.Errorf("%w: instance id %s is unknown", errUnknownMemberID, *lm.InstanceID)
				continue
			}
			if lm.MemberID != "" && m.ID != lm.MemberID {
				errs[i] = fmt.Errorf("%w: static member %s with instance id %s was fenced by member %s", errFencedInstanceID, lm.MemberID, *lm.InstanceID, m.ID)
				continue
			}
		}
		if !m.UsesClassic() {
			errs[i] = fmt.Errorf("%w: member %s does not use the classic protocol", errUnknownMemberID, m.ID)
			continue
		}
		g.RemoveMember(m.ID)
		recs = append(recs, consumer.MemberTombstones(g.ID, m.ID)...)
		removed = append(removed, m.ID)
	}
	if len(removed) == 0 {
		return errs, nil
	}
	g.BumpEpoch()
	recs = append(recs, cg.epochRecord(g, cg.metaHash))
	ctx, cancel := context.WithTimeout(context.Background(), persistTimeout)
	defer cancel()
	if err := c.opts.PersistConsumer(ctx, g.ID, recs); err != nil {
		c.log.Warn("group: persist classic leave from a consumer group", "group", g.ID, "err", err)
		return errs, appendErr(err)
	}
	c.noteConsumerInstall(cg.g, g)
	cg.g, cg.subNames = g, subscribedNames(g)
	for _, id := range removed {
		cg.dropTimersLocked(id)
	}
	c.log.Info("group: classic members left the consumer group", "group", g.ID, "members", removed, "epoch", g.Epoch)
	return errs, nil
}

// dropTimersLocked stops and forgets member id's timers.
// REQUIRES: cg.mu held.
func (cg *cgroup) dropTimersLocked(id string) {
	if t := cg.timers[id]; t != nil {
		stopTimer(t.session)
		stopTimer(t.rebalance)
		stopTimer(t.classic[classicJoinTimer])
		stopTimer(t.classic[classicSyncTimer])
		t.seq++
		delete(cg.timers, id)
	}
}

// The timers of a classic member in a consumer group, as Kafka's: after a
// REBALANCE_IN_PROGRESS the member must rejoin within its rebalance
// timeout (join timer, started if not running), and after a JoinGroup it
// must send SyncGroup within it (sync timer); otherwise it is removed.
const (
	classicJoinTimer = 0
	classicSyncTimer = 1
)

// scheduleClassicLocked starts m's join or sync timer (a join timer only if
// none runs, as Kafka's scheduleConsumerGroupJoinTimeoutIfAbsent).
// REQUIRES: cg.mu held.
func (c *Coordinator) scheduleClassicLocked(cg *cgroup, m consumer.Member, kind int) {
	t := cg.timers[m.ID]
	if t == nil {
		return
	}
	if kind == classicJoinTimer && t.classic[kind] != nil {
		return
	}
	stopTimer(t.classic[kind])
	t.classicSeq[kind]++
	seq, id, name := t.classicSeq[kind], m.ID, cg.g.ID
	why := "classic member did not rejoin in time"
	if kind == classicSyncTimer {
		why = "classic member did not sync in time"
	}
	d := time.Duration(max(m.RebalanceTimeoutMs, 0)) * time.Millisecond
	t.classic[kind] = c.clock.AfterFunc(d, func() {
		c.fenceMember(name, id, why, func(_ consumer.Member, mt *memberTimers) bool {
			return mt.classic[kind] != nil && mt.classicSeq[kind] == seq
		})
	})
}

// cancelClassicLocked stops member id's join or sync timer.
// REQUIRES: cg.mu held.
func (cg *cgroup) cancelClassicLocked(id string, kind int) {
	if t := cg.timers[id]; t != nil && t.classic[kind] != nil {
		stopTimer(t.classic[kind])
		t.classic[kind] = nil
		t.classicSeq[kind]++
	}
}
