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
