package group

// Online migration between classic groups and consumer groups (KIP-848),
// as Kafka 4.x's GroupMetadataManager does it, under
// group.consumer.migration.policy (bidirectional, upgrade, downgrade,
// disabled):
//
//   - Upgrade (convertToConsumerGroup): a ConsumerGroupHeartbeat at epoch 0
//     for a classic group with members, all of the "consumer" protocol
//     type, turns the group into a consumer group. Each classic member
//     becomes a member of it at the classic generation, Stable, holding
//     the partitions of its last SyncGroup assignment (also its target),
//     subscribed to the topics of its JoinGroup metadata, and keeping its
//     classic metadata (ClassicMemberMetadata in its record). Waiting
//     JoinGroups and SyncGroups are answered REBALANCE_IN_PROGRESS. The
//     classic group keeps only its committed offsets (where every group's
//     offsets live).
//   - Classic members in a consumer group (classicGroup*ToConsumerGroup):
//     JoinGroup, SyncGroup, Heartbeat and LeaveGroup of a classic client
//     are served from the consumer group's state: a JoinGroup updates the
//     member as a heartbeat would (subscription and owned partitions from
//     its protocol metadata), answers its member epoch as the generation
//     and no leader, so the client never assigns; SyncGroup answers the
//     partitions the member holds; Heartbeat answers
//     REBALANCE_IN_PROGRESS while the member lags the group epoch or has
//     partitions to revoke or to collect, so the client rejoins.
//   - Downgrade (convertToClassicGroup): when the last member of the
//     consumer protocol leaves (or is fenced) and the others all speak the
//     classic protocol, the group becomes a classic group again: its
//     members keep their ids and, as assignment, their target assignment;
//     a rebalance starts at once. A classic static member replacing the
//     last member of the consumer protocol takes its place and target
//     instead, without a rebalance.
//
// Malformed embedded protocol data gets Kafka's answers: GROUP_ID_NOT_FOUND
// for an upgrade (the classic group is left as it was), UNKNOWN_SERVER_ERROR
// for a classic JoinGroup into a consumer group (Kafka throws
// IllegalStateException there); never a panic.
//
// Kafka writes a conversion as one batch. Here the two kinds of records go
// through two hooks, ordered so that a crash between them loses no offset
// and leaves one group to serve: an upgrade appends the consumer group's
// records, then the classic group's memberless state (a replay that finds
// both serves the consumer group, which has members); a downgrade appends
// the consumer group's tombstones, then the classic group (a crash between
// leaves a memberless group whose clients rejoin).
//
// Lock order: a classic group's mu before a cgroup's mu (the upgrade and
// the downgrade hold both); no path takes them the other way round.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/group/consumer"
	"github.com/sluice/sluice/group/consumer/assignor"
	"github.com/sluice/sluice/metastore"
	"github.com/sluice/sluice/offsets"
)

// migrationPolicy is group.consumer.migration.policy.
type migrationPolicy struct{ upgrade, downgrade bool }

// migration returns the policy; "" is Kafka's default, bidirectional.
func (c *Coordinator) migration() migrationPolicy {
	switch c.opts.ConsumerMigrationPolicy {
	case "disabled":
		return migrationPolicy{}
	case "upgrade":
		return migrationPolicy{upgrade: true}
	case "downgrade":
		return migrationPolicy{downgrade: true}
	}
	return migrationPolicy{upgrade: true, downgrade: true}
}

// decodeSubscription reads a classic consumer's JoinGroup protocol metadata
// (ConsumerProtocolSubscription, versions 0-3; a newer version is read as
// the newest known, as Kafka's ConsumerProtocol does).
func decodeSubscription(b []byte) (kmsg.ConsumerMemberMetadata, error) {
	var md kmsg.ConsumerMemberMetadata
	if len(b) < 2 {
		return md, fmt.Errorf("group: consumer protocol subscription of %d bytes", len(b))
	}
	if err := md.ReadFrom(b); err != nil {
		return md, fmt.Errorf("group: consumer protocol subscription: %w", err)
	}
	if md.Version < 0 {
		return md, fmt.Errorf("group: consumer protocol subscription version %d", md.Version)
	}
	return md, nil
}

// subscriptionVersion is the version a classic member's assignment is
// written in: that of its subscription, at most 3 (Kafka's
// ConsumerProtocol.serializeAssignment); 0 when unreadable.
func subscriptionVersion(b []byte) int16 {
	if len(b) < 2 {
		return 0
	}
	v := int16(b[0])<<8 | int16(b[1])
	return min(max(v, 0), 3)
}

// assignmentIDs turns a classic assignment's partitions (by topic name)
// into an assignment by topic id; topics that do not exist are left out,
// as Kafka's toTopicPartitionMap does. Partitions are sorted and unique.
func (c *Coordinator) assignmentIDs(tps []kmsg.ConsumerMemberAssignmentTopic) assignor.Assignment {
	a := assignor.Assignment{}
	for _, tp := range tps {
		ti, ok := c.opts.Topics.Topic(tp.Topic)
		if !ok || len(tp.Partitions) == 0 {
			continue
		}
		id := assignor.TopicID(ti.ID)
		ps := append(slices.Clone(a[id]), tp.Partitions...)
		slices.Sort(ps)
		a[id] = slices.Compact(ps)
	}
	return a
}

// ownedIDs is assignmentIDs for a subscription's owned partitions; never
// nil (a classic member always says what it owns, maybe nothing).
func (c *Coordinator) ownedIDs(tps []kmsg.ConsumerMemberMetadataOwnedPartition) assignor.Assignment {
	in := make([]kmsg.ConsumerMemberAssignmentTopic, 0, len(tps))
	for _, tp := range tps {
		in = append(in, kmsg.ConsumerMemberAssignmentTopic{Topic: tp.Topic, Partitions: tp.Partitions})
	}
	return c.assignmentIDs(in)
}

// decodeAssignment reads a classic member's SyncGroup assignment; an empty
// one (a member that has not synced yet) holds nothing.
func (c *Coordinator) decodeAssignment(b []byte) (assignor.Assignment, error) {
	if len(b) == 0 {
		return assignor.Assignment{}, nil
	}
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(b); err != nil {
		return nil, fmt.Errorf("group: consumer protocol assignment: %w", err)
	}
	return c.assignmentIDs(a.Topics), nil
}

// encodeAssignment writes a as a classic consumer's assignment
// (ConsumerProtocolAssignment) of version v, topics by name in name order;
// topics that no longer exist are left out.
func (c *Coordinator) encodeAssignment(a assignor.Assignment, v int16) []byte {
	names := c.topicNames(a)
	out := kmsg.ConsumerMemberAssignment{Version: v, Topics: []kmsg.ConsumerMemberAssignmentTopic{}}
	for _, id := range slices.SortedFunc(maps.Keys(a), func(x, y assignor.TopicID) int {
		if names[x] < names[y] {
			return -1
		} else if names[x] > names[y] {
			return 1
		}
		return x.Compare(y)
	}) {
		if n, ok := names[id]; ok && len(a[id]) > 0 {
			out.Topics = append(out.Topics, kmsg.ConsumerMemberAssignmentTopic{Topic: n, Partitions: slices.Clone(a[id])})
		}
	}
	return out.AppendTo(nil)
}

// topicNames returns the names of a's topics that exist.
func (c *Coordinator) topicNames(a assignor.Assignment) map[assignor.TopicID]string {
	out := make(map[assignor.TopicID]string, len(a))
	if len(a) == 0 {
		return out
	}
	for _, n := range c.opts.Topics.TopicNames() {
		ti, ok := c.opts.Topics.Topic(n)
		if !ok {
			continue
		}
		if _, want := a[assignor.TopicID(ti.ID)]; want {
			out[assignor.TopicID(ti.ID)] = ti.Name
			if len(out) == len(a) {
				break
			}
		}
	}
	return out
}

// classicMetadata is the ClassicMemberMetadata of a classic member.
func classicMetadata(session time.Duration, ps []metastore.GroupProtocol) *offsets.ClassicMemberMetadata {
	out := &offsets.ClassicMemberMetadata{SessionTimeoutMs: int32(session.Milliseconds())}
	for _, p := range ps {
		out.SupportedProtocols = append(out.SupportedProtocols, offsets.ClassicProtocol{Name: p.Name, Metadata: p.Metadata})
	}
	return out
}

// classicProtocols is the inverse of classicMetadata's protocol list.
func classicProtocols(m *offsets.ClassicMemberMetadata) []metastore.GroupProtocol {
	out := make([]metastore.GroupProtocol, 0, len(m.SupportedProtocols))
	for _, p := range m.SupportedProtocols {
		out = append(out, metastore.GroupProtocol{Name: p.Name, Metadata: p.Metadata})
	}
	return out
}

func sameClassic(a, b *offsets.ClassicMemberMetadata) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.SessionTimeoutMs == b.SessionTimeoutMs && slices.EqualFunc(a.SupportedProtocols, b.SupportedProtocols,
		func(x, y offsets.ClassicProtocol) bool {
			return x.Name == y.Name && string(x.Metadata) == string(y.Metadata)
		})
}

func sortedTopics(ts []string) []string {
	ts = slices.Clone(ts)
	slices.Sort(ts)
	return slices.Compact(ts)
}

// ---- Upgrade ----

// upgrade converts the classic group called name, if it still has
// members, into a consumer group (Kafka's validateOnlineUpgrade and
// convertToConsumerGroup), for a ConsumerGroupHeartbeat joining it. It
// fails with GROUP_ID_NOT_FOUND when the policy forbids the upgrade, the
// group is not of the consumer protocol type, it is larger than
// group.consumer.max.size or its members' embedded protocol is malformed,
// as Kafka answers; the group is then left as it was.
func (c *Coordinator) upgrade(ctx context.Context, name string) error {
	g := c.getGroup(name, false)
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.state == stateDead || len(g.members) == 0 {
		return nil
	}
	switch {
	case !c.migration().upgrade:
		return fmt.Errorf("%w: group %s is not a consumer group: the online upgrade is disabled", errGroupIDNotFound, name)
	case g.protocolType != consumerProtocolType:
		return fmt.Errorf("%w: group %s is not a consumer group: it does not use the consumer embedded protocol", errGroupIDNotFound, name)
	case len(g.members) > c.consumerMaxSize():
		return fmt.Errorf("%w: group %s is not a consumer group: its size exceeds group.consumer.max.size", errGroupIDNotFound, name)
	}
	next, err := c.consumerGroupFromClassicLocked(g)
	if err != nil {
		c.log.Warn("group: cannot upgrade classic group", "group", name, "err", err)
		return fmt.Errorf("%w: cannot upgrade the classic group %s to a consumer group because the embedded consumer protocol is malformed", errGroupIDNotFound, name)
	}
	cg := c.consumerGroup(name, true)
	if cg == nil {
		return errCoordinatorNotAvailable
	}
	cg.mu.Lock()
	defer cg.mu.Unlock()
	if cg.dead {
		return errCoordinatorNotAvailable
	}
	if cg.g.Len() > 0 {
		return nil // a consumer group already: served as one
	}
	sub := c.resolve(next)
	// Kafka's createConsumerGroupRecords: members, the group epoch, the
	// target assignment and its epoch, then the current assignments.
	var recs, current []consumer.Record
	ms := next.Members()
	slices.SortFunc(ms, func(a, b consumer.Member) int { return cmpString(a.ID, b.ID) })
	for _, m := range ms {
		mr := consumer.MemberRecords(name, m)
		recs = append(recs, mr[0])
		current = append(current, mr[1])
	}
	recs = append(recs, cg.epochRecord(next, sub.hash))
	recs = append(recs, consumer.TargetRecords(next)...)
	recs = append(recs, current...)
	if err := c.persistConsumer(ctx, name, recs); err != nil {
		c.log.Warn("group: persist classic group upgrade", "group", name, "err", err)
		return appendErr(err)
	}
	c.emptyClassicLocked(g)
	c.noteConsumerInstall(cg.g, next)
	cg.g, cg.metaHash, cg.subNames = next, sub.hash, subscribedNames(next)
	for _, m := range ms {
		c.scheduleSessionLocked(cg, m.ID)
	}
	c.log.Info("group: classic group upgraded to a consumer group", "group", name, "members", len(ms), "epoch", next.Epoch)
	return nil
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// consumerGroupFromClassicLocked is Kafka's ConsumerGroup.fromClassicGroup:
// the group epoch and target assignment epoch are the classic generation;
// every member is Stable at that epoch with its last assignment as both its
// current and target assignment. A partition two classic members claim
// (a stale assignment) goes to the first in arrival order.
// REQUIRES: g.mu held, g has members.
func (c *Coordinator) consumerGroupFromClassicLocked(g *group) (*consumer.Group, error) {
	next := consumer.NewGroup(g.name)
	next.Epoch = g.generation
	target := map[string]assignor.Assignment{}
	taken := map[assignor.TopicID]map[int32]bool{}
	for _, m := range g.sortedMembers() {
		proto := g.protocol
		if proto == "" && len(m.protocols) > 0 {
			proto = m.protocols[0].Name
		}
		sub, err := decodeSubscription(m.metadata(proto))
		if err != nil {
			return nil, fmt.Errorf("member %s: %w", m.id, err)
		}
		asg, err := c.decodeAssignment(m.assignment)
		if err != nil {
			return nil, fmt.Errorf("member %s: %w", m.id, err)
		}
		for t, ps := range asg {
			if taken[t] == nil {
				taken[t] = map[int32]bool{}
			}
			kept := ps[:0:0]
			for _, p := range ps {
				if !taken[t][p] {
					taken[t][p] = true
					kept = append(kept, p)
				}
			}
			if len(kept) == 0 {
				delete(asg, t)
			} else {
				asg[t] = kept
			}
		}
		cm := consumer.Member{
			ID: m.id, InstanceID: m.instanceID, RackID: deref(sub.Rack),
			ClientID: m.clientID, ClientHost: m.clientHost,
			SubscribedTopicNames: sortedTopics(sub.Topics),
			RebalanceTimeoutMs:   int32(m.rebalanceTimeout.Milliseconds()),
			State:                consumer.Stable, MemberEpoch: g.generation, PreviousMemberEpoch: g.generation,
			Assigned: asg, PendingRevocation: assignor.Assignment{},
			Classic: classicMetadata(m.sessionTimeout, m.protocols),
		}
		if err := next.UpdateMember(cm); err != nil {
			return nil, err
		}
		target[m.id] = asg
	}
	next.SetTarget(g.generation, target)
	return next, nil
}

// emptyClassicLocked leaves g, a classic group whose members moved to a
// consumer group, with its offsets only: waiting JoinGroups and SyncGroups
// get REBALANCE_IN_PROGRESS (the clients rejoin, now into the consumer
// group), timers stop, and the memberless state is saved.
// REQUIRES: g.mu held.
func (c *Coordinator) emptyClassicLocked(g *group) {
	g.stopTimersLocked()
	for _, m := range g.members {
		stopTimer(m.hbTimer)
		m.hbSeq++
		answerJoin(m, joinResult{err: errRebalanceInProgress, memberID: m.id, generation: -1})
		answerSync(m, syncResult{err: errRebalanceInProgress})
	}
	for _, p := range g.pending {
		stopTimer(p.timer)
	}
	clear(g.members)
	clear(g.static)
	clear(g.pending)
	clear(g.pendingSync)
	g.leader, g.protocol, g.subscribed = "", "", nil
	g.initialDelay, g.newMemberAdded = false, false
	g.transitionLocked(stateEmpty, c.clock.Now())
	if err := c.putGroup(g.toStore()); err != nil {
		// The consumer group's records are written: a replay finds both,
		// and the consumer group, having members, is served.
		c.log.Warn("group: save the classic group emptied by an upgrade", "group", g.name, "err", err)
	}
}

// dropEmptyConsumerGroup is Kafka's maybeDeleteEmptyConsumerGroup for a
// classic JoinGroup: a consumer group of that name without members is
// tombstoned and forgotten, so that the classic group (which keeps the
// offsets) is the group of that name. Its error is the JoinGroup's: a
// failed append, or REBALANCE_IN_PROGRESS when a member joined the
// consumer group meanwhile (the client joins again and is served by it).
func (c *Coordinator) dropEmptyConsumerGroup(name string) error {
	if c.consumerGroup(name, false) == nil {
		return nil
	}
	if _, err := c.deleteConsumerGroup(name); err != nil {
		if errors.Is(err, errNonEmptyGroup) {
			return fmt.Errorf("%w: group %s became a consumer group with members", errRebalanceInProgress, name)
		}
		return err
	}
	c.log.Info("group: converted the empty consumer group to a classic group", "group", name)
	return nil
}

// ---- Classic members in a consumer group ----

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
	if err := g.UpdateMember(upd); err != nil {
		return joinResult{}, fmt.Errorf("%w: %w", errCoordinatorNotAvailable, err)
	}

	regexRecs, regexChanged := c.refreshRegexes(g, topicAuthFrom(ctx), c.clock.Now())
	recs = append(recs, regexRecs...)
	sub848 := c.resolve(g)
	hash := cg.metaHash
	if subChanged || regexChanged || sub848.hash != hash {
		g.BumpEpoch()
		hash = sub848.hash
		recs = append(recs, cg.epochRecord(g, hash))
	}
	if g.Epoch > g.AssignmentEpoch {
		trecs, err := c.computeTarget(g, sub848)
		if err != nil {
			return joinResult{}, fmt.Errorf("%w: %w", errCoordinatorNotAvailable, err)
		}
		recs = append(recs, trecs...)
	}
	next, err := consumer.Reconcile(upd, consumer.Reconciliation{
		TargetEpoch:                    g.AssignmentEpoch,
		Target:                         g.Target[upd.ID],
		Subscribed:                     sub848.member[upd.ID],
		EnforceSubscriptionConsistency: subChanged,
		PartitionEpoch:                 g.PartitionEpoch,
		Owned:                          c.ownedIDs(sub.OwnedPartitions),
	})
	if err != nil {
		return joinResult{}, err
	}
	asgChanged := isNew || next.MemberEpoch != m.MemberEpoch || next.PreviousMemberEpoch != m.PreviousMemberEpoch ||
		next.State != m.State || !equalAssignment(next.Assigned, m.Assigned) ||
		!equalAssignment(next.PendingRevocation, m.PendingRevocation)
	if err := g.UpdateMember(next); err != nil {
		return joinResult{}, fmt.Errorf("%w: %w", errCoordinatorNotAvailable, err)
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
	mrecs := consumer.MemberRecords(g.ID, next)
	if mdChanged {
		recs = append(recs, mrecs[0])
	}
	if asgChanged {
		recs = append(recs, mrecs[1])
	}
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

// ---- Downgrade ----

// mayDowngrade is Kafka's validateOnlineDowngradeWithFencedMember: removing
// member id (of the consumer protocol) leaves only classic members, at
// least one, no more than group.max.size, and the policy allows it.
func (c *Coordinator) mayDowngrade(g *consumer.Group, id string) bool {
	if !c.migration().downgrade || g.Len() <= 1 || !g.AllClassicExcept(id) {
		return false
	}
	return c.opts.MaxGroupSize <= 0 || g.Len()-1 <= c.opts.MaxGroupSize
}

// mayDowngradeReplacing is Kafka's validateOnlineDowngradeWithReplacedMemberId:
// a classic static member replacing member id (of the consumer protocol)
// leaves only classic members, no more than group.max.size, and the policy
// allows it.
func (c *Coordinator) mayDowngradeReplacing(g *consumer.Group, id string) bool {
	if !c.migration().downgrade || !g.AllClassicExcept(id) {
		return false
	}
	return c.opts.MaxGroupSize <= 0 || g.Len() <= c.opts.MaxGroupSize
}

// lockClassicForReplace is lockClassicForDowngrade for a classic static
// member joining without member id under instanceID, which replaces that
// instance's member.
func (c *Coordinator) lockClassicForReplace(name, instanceID string) *group {
	if !c.migration().downgrade {
		return nil
	}
	cg := c.consumerGroup(name, false)
	if cg == nil {
		return nil
	}
	cg.mu.Lock()
	old, held := cg.g.StaticMember(instanceID)
	may := !cg.dead && held && c.mayDowngradeReplacing(cg.g, old.ID)
	cg.mu.Unlock()
	if !may {
		return nil
	}
	g := c.getGroup(name, true)
	if g == nil {
		return nil
	}
	g.mu.Lock()
	return g
}

// lockClassicForDowngrade returns the classic group of name locked when
// removing member id from its consumer group may downgrade it, so that
// the caller holds the locks in their order (classic, then consumer);
// nil otherwise. The caller checks mayDowngrade again under both locks.
func (c *Coordinator) lockClassicForDowngrade(name, id string) *group {
	if !c.migration().downgrade {
		return nil
	}
	cg := c.consumerGroup(name, false)
	if cg == nil {
		return nil
	}
	cg.mu.Lock()
	may := !cg.dead && c.mayDowngrade(cg.g, id)
	cg.mu.Unlock()
	if !may {
		return nil
	}
	g := c.getGroup(name, true)
	if g == nil {
		return nil
	}
	g.mu.Lock()
	return g
}

// downgradeLocked converts cg, whose member leaving (of the consumer
// protocol) is going, into the classic group cl (Kafka's
// convertToClassicGroup): the consumer group's records are tombstoned, the
// classic group is written Stable at the group epoch with each remaining
// member's target assignment. When joining is set (a classic static member
// replacing leaving), it takes leaving's place and target, and the group
// stays Stable; otherwise a rebalance starts. done is false when the
// downgrade does not apply (the caller goes on as usual).
// REQUIRES: cl.mu and cg.mu held.
func (c *Coordinator) downgradeLocked(cl *group, cg *cgroup, leaving string, joining *consumer.Member) (done bool, err error) {
	if cl == nil || cl.state == stateDead || len(cl.members) > 0 || cg.dead {
		return false, nil
	}
	if joining == nil && !c.mayDowngrade(cg.g, leaving) || joining != nil && !c.mayDowngradeReplacing(cg.g, leaving) {
		return false, nil
	}
	src := cg.g
	name := src.ID
	ms := src.Members()
	slices.SortFunc(ms, func(a, b consumer.Member) int { return cmpString(a.ID, b.ID) })

	// The classic state, built aside and installed once durable.
	next := newGroup(name, c.clock.Now())
	next.protocolType = consumerProtocolType
	next.generation = src.Epoch
	classicMs := ms
	if joining != nil {
		classicMs = append(slices.Clone(ms), *joining)
	}
	for _, m := range classicMs {
		if m.ID == leaving {
			continue
		}
		next.addMemberLocked(&member{
			id: m.ID, instanceID: m.InstanceID, clientID: m.ClientID, clientHost: m.ClientHost,
			rebalanceTimeout: time.Duration(m.RebalanceTimeoutMs) * time.Millisecond,
			sessionTimeout:   time.Duration(m.Classic.SessionTimeoutMs) * time.Millisecond,
			protocolType:     consumerProtocolType,
			protocols:        classicProtocols(m.Classic),
		})
	}
	next.protocol = next.selectProtocol()
	next.computeSubscribed()
	for _, m := range next.members {
		target := src.Target[m.id]
		if joining != nil && m.id == joining.ID {
			target = src.Target[leaving]
		}
		m.assignment = c.encodeAssignment(target, subscriptionVersion(m.metadata(next.protocol)))
	}
	next.transitionLocked(stateStable, c.clock.Now())

	var recs []consumer.Record
	for _, m := range ms {
		recs = append(recs, consumer.MemberTombstones(name, m.ID)...)
	}
	for _, re := range slices.Sorted(maps.Keys(src.Regexes)) {
		recs = append(recs, consumer.RegexRecord(name, re, nil))
	}
	for _, typ := range []int16{offsets.ConsumerGroupTargetAssignmentMetadataType, offsets.ConsumerGroupPartitionMetadataType, offsets.ConsumerGroupMetadataType} {
		recs = append(recs, consumer.Record{Key: offsets.ConsumerKey{Type: typ, Group: name}})
	}
	ctx, cancel := context.WithTimeout(context.Background(), persistTimeout)
	defer cancel()
	if err := c.opts.PersistConsumer(ctx, name, recs); err != nil {
		return true, appendErr(err)
	}
	if err := c.putGroup(next.toStore()); err != nil {
		// The consumer group is gone from the log; its classic members
		// rejoin an empty group (UNKNOWN_MEMBER_ID) if this is lost.
		c.log.Warn("group: save the classic group of a downgrade", "group", name, "err", err)
	}
	cg.killLocked()
	c.cgs.mu.Lock()
	if c.cgs.groups[name] == cg {
		delete(c.cgs.groups, name)
	}
	c.cgs.mu.Unlock()

	cl.protocolType, cl.protocol, cl.generation, cl.leader = next.protocolType, next.protocol, next.generation, next.leader
	cl.members, cl.static, cl.joinSeq, cl.subscribed = next.members, next.static, next.joinSeq, next.subscribed
	cl.transitionLocked(stateStable, c.clock.Now())
	for _, m := range cl.members {
		c.scheduleHeartbeatLocked(cl, m, m.sessionTimeout)
	}
	c.log.Info("group: consumer group downgraded to a classic group", "group", name, "members", len(cl.members), "generation", cl.generation)
	if joining == nil {
		c.prepareRebalanceLocked(cl)
	}
	return true, nil
}
