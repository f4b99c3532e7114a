package group

// Share groups (KIP-932), beside the classic and the consumer groups on the
// same __consumer_offsets partitions: the membership side of Kafka 4.2's
// GroupMetadataManager (shareGroupHeartbeat, shareGroupLeave, the session
// timeout) around the pure state of package group/sharegroup.
//
//   - A group is a *sgroup: the sharegroup.Group and each member's session
//     timer.
//   - A heartbeat changes a clone of the group, appends the records of the
//     change (Options.PersistShare, acks=all) and installs the clone only
//     once they are committed, as the consumer groups do.
//   - The load of a partition hands the latest record of each share-group
//     key to ReloadShare, which replays them and gives every member a fresh
//     session timer.
//   - The data path (ShareFetch, ShareAcknowledge) asks ShareMember which
//     partitions a member is assigned and ShareGroupConfig for the group's
//     effective configuration.
//
// Every partition of a subscribed topic is assignable: Kafka 4.2 assigns
// only partitions whose share-partition state is initialized (the
// ShareGroupStatePartitionMetadata record, written by the share-partition
// side through InitializeShareGroupState); that record is read and kept for
// the data side but does not gate the assignment here.
//
// Concurrency: sgs.mu guards the group map; each sgroup has its own mutex,
// held across the append of its records. Lock order: sgs.mu before
// sgroup.mu; neither is held while taking c.mu or a consumer group's lock.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice/sluice/group/consumer/assignor"
	"github.com/sluice/sluice/group/sharegroup"
	"github.com/sluice/sluice/offsets"
)

// ShareGroupType is the type of a share group in ListGroups v5 and the
// metrics, and its protocol type.
const ShareGroupType = "share"

// ShareGroupConfig is what a share group runs with: each value the group's
// own (its share.* group config) when set, else the broker's
// (group.share.*). Field comments name Kafka's group keys.
type ShareGroupConfig struct {
	SessionTimeout          time.Duration // share.session.timeout.ms
	HeartbeatInterval       time.Duration // share.heartbeat.interval.ms
	RecordLockDuration      time.Duration // share.record.lock.duration.ms
	DeliveryCountLimit      int           // share.delivery.count.limit
	PartitionMaxRecordLocks int           // share.partition.max.record.locks
	AutoOffsetReset         string        // share.auto.offset.reset: latest, earliest or by_duration:<ISO-8601>
	IsolationLevel          string        // share.isolation.level: read_uncommitted or read_committed
	RenewAcknowledgeEnable  bool          // share.renew.acknowledge.enable (KIP-1222)

	// Sluice's redelivery backoff, beyond Kafka (share.redelivery.backoff.ms,
	// .max.ms, .multiplier): 0 backoff disables it, 0 max is no cap.
	RedeliveryBackoff           time.Duration
	RedeliveryBackoffMax        time.Duration
	RedeliveryBackoffMultiplier float64

	// KIP-1191: errors.deadletterqueue.topic.name ("" none) and
	// errors.deadletterqueue.copy.record.enable.
	DLQTopic      string
	DLQCopyRecord bool
}

// DefaultShareGroupConfig is Kafka's defaults of the share group configs.
func DefaultShareGroupConfig() ShareGroupConfig {
	return ShareGroupConfig{
		SessionTimeout:          45 * time.Second,
		HeartbeatInterval:       5 * time.Second,
		RecordLockDuration:      30 * time.Second,
		DeliveryCountLimit:      5,
		PartitionMaxRecordLocks: 2000,
		AutoOffsetReset:         "latest",
		IsolationLevel:          "read_uncommitted",
		RenewAcknowledgeEnable:  true, // Kafka's GroupConfig default
	}
}

// defaultShareMaxSize is group.share.max.size's default.
const defaultShareMaxSize = 200

// PersistShareFunc makes the records of one change of a share group durable
// before the change is applied. Same contract as PersistConsumerFunc.
type PersistShareFunc func(ctx context.Context, group string, recs []offsets.ShareRecord) error

// shareGroups is the coordinator's set of share groups.
type shareGroups struct {
	mu     sync.Mutex
	groups map[string]*sgroup
	closed bool
	// rebalances counts share group epoch bumps (Kafka's
	// share-group-rebalance-count).
	rebalances atomic.Uint64
}

// sgroup is one share group and its members' session timers.
type sgroup struct {
	mu     sync.Mutex
	g      *sharegroup.Group
	dead   bool
	timers map[string]*shareTimer
}

// shareTimer is one member's session timer; seq invalidates callbacks of
// replaced timers.
type shareTimer struct {
	t   Timer
	seq uint64
}

// shareGroup returns the share group called name, creating an empty one
// when create is set; nil when absent (or closed).
func (c *Coordinator) shareGroup(name string, create bool) *sgroup {
	c.sgs.mu.Lock()
	defer c.sgs.mu.Unlock()
	if c.sgs.closed {
		return nil
	}
	sg := c.sgs.groups[name]
	if sg == nil && create {
		if c.sgs.groups == nil {
			c.sgs.groups = map[string]*sgroup{}
		}
		sg = &sgroup{g: sharegroup.NewGroup(name), timers: map[string]*shareTimer{}}
		c.sgs.groups[name] = sg
	}
	return sg
}

// isShareGroup reports whether name is a share group here.
func (c *Coordinator) isShareGroup(name string) bool {
	return c.shareGroup(name, false) != nil
}

// killLocked stops every timer of sg and marks it dead.
// REQUIRES: sg.mu held.
func (sg *sgroup) killLocked() {
	sg.dead = true
	for _, t := range sg.timers {
		stopTimer(t.t)
		t.seq++
	}
	sg.timers = map[string]*shareTimer{}
}

// stopMemberLocked stops and forgets member id's timer.
// REQUIRES: sg.mu held.
func (sg *sgroup) stopMemberLocked(id string) {
	if t := sg.timers[id]; t != nil {
		stopTimer(t.t)
		t.seq++
		delete(sg.timers, id)
	}
}

// closeShareGroups stops every share group's timers (Close).
func (c *Coordinator) closeShareGroups() {
	c.sgs.mu.Lock()
	groups := c.sgs.groups
	c.sgs.groups, c.sgs.closed = nil, true
	c.sgs.mu.Unlock()
	for _, sg := range groups {
		sg.mu.Lock()
		sg.killLocked()
		sg.mu.Unlock()
	}
}

// unloadShareGroups drops the share groups match selects (Unload).
func (c *Coordinator) unloadShareGroups(match func(string) bool) {
	c.replaceShareGroups(match, nil)
}

// replaceShareGroups removes the share groups match selects and installs
// repl, starting their members' session timers.
func (c *Coordinator) replaceShareGroups(match func(string) bool, repl map[string]*sgroup) {
	c.sgs.mu.Lock()
	if c.sgs.closed {
		c.sgs.mu.Unlock()
		return
	}
	var gone []*sgroup
	for name, sg := range c.sgs.groups {
		if match(name) {
			gone = append(gone, sg)
			delete(c.sgs.groups, name)
		}
	}
	if len(repl) > 0 && c.sgs.groups == nil {
		c.sgs.groups = map[string]*sgroup{}
	}
	for name, sg := range repl {
		c.sgs.groups[name] = sg
		sg.mu.Lock()
		for _, m := range sg.g.Members() {
			c.scheduleShareSessionLocked(sg, m.ID)
		}
		sg.mu.Unlock()
	}
	c.sgs.mu.Unlock()
	for _, sg := range gone {
		sg.mu.Lock()
		sg.killLocked()
		sg.mu.Unlock()
	}
}

// ReloadShare replaces the share groups match selects by those of groups,
// each group's latest record per key in log order (package offsets' replay
// of a __consumer_offsets partition). A group whose records do not replay
// is logged and left out: its members rejoin. A group whose epoch record
// is a tombstone, with no members, is gone. Safe for concurrent use.
func (c *Coordinator) ReloadShare(match func(string) bool, groups map[string][]offsets.ShareRecord) error {
	fresh := make(map[string]*sgroup, len(groups))
	for name, recs := range groups {
		g := sharegroup.NewGroup(name)
		exists, ok := false, true
		for _, r := range recs {
			if r.Key.Type == offsets.ShareGroupMetadataType {
				exists = r.Value != nil
			}
			if err := g.Replay(r); err != nil {
				c.log.Error("group: share group does not replay; its members will rejoin", "group", name, "err", err)
				ok = false
				break
			}
		}
		if !ok || (!exists && g.Len() == 0) {
			continue
		}
		fresh[name] = &sgroup{g: g, timers: map[string]*shareTimer{}}
	}
	c.replaceShareGroups(match, fresh)
	return nil
}

// scheduleShareSessionLocked (re)starts member id's session timer: when it
// fires the member is fenced, as Kafka's share group session timeout.
// REQUIRES: sg.mu held.
func (c *Coordinator) scheduleShareSessionLocked(sg *sgroup, id string) {
	t := sg.timers[id]
	if t == nil {
		t = &shareTimer{}
		sg.timers[id] = t
	}
	stopTimer(t.t)
	t.seq++
	seq, name := t.seq, sg.g.ID
	t.t = c.clock.AfterFunc(c.ShareGroupConfig(name).SessionTimeout, func() {
		c.fenceShareMember(name, id, seq)
	})
}

// fenceShareMember removes member id of group name when its session timer
// seq is still current, as Kafka's shareGroupFenceMember: the member's
// records are tombstoned and the group epoch bumped (the others get a new
// assignment at their next heartbeat).
func (c *Coordinator) fenceShareMember(name, id string, seq uint64) {
	sg := c.shareGroup(name, false)
	if sg == nil {
		return
	}
	sg.mu.Lock()
	defer sg.mu.Unlock()
	t := sg.timers[id]
	if sg.dead || t == nil || t.seq != seq {
		return
	}
	if _, ok := sg.g.Member(id); !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), persistTimeout)
	defer cancel()
	if err := c.removeShareMemberLocked(ctx, sg, id); err != nil {
		c.log.Warn("group: persist share group member removal", "group", name, "member", id, "err", err)
		return
	}
	c.log.Info("group: share group member removed", "group", name, "member", id, "reason", "session timeout", "epoch", sg.g.Epoch)
}

// removeShareMemberLocked removes member id and bumps the group epoch,
// installing the change once its records are committed.
// REQUIRES: sg.mu held, sg not dead, id a member.
func (c *Coordinator) removeShareMemberLocked(ctx context.Context, sg *sgroup, id string) error {
	g := sg.g.Clone()
	g.RemoveMember(id)
	g.Epoch++
	g.MetadataHash = c.shareHash(g)
	recs := append(sharegroup.MemberTombstones(g.ID, id), sharegroup.EpochRecord(g))
	if err := c.persistShare(ctx, g.ID, recs); err != nil {
		return err
	}
	c.installShareLocked(sg, g)
	sg.stopMemberLocked(id)
	if gone := c.opts.ShareMemberGone; gone != nil {
		// Not under sg.mu: the data path holds share-partition locks while
		// asking ShareMember, which takes sg.mu.
		go gone(g.ID, id)
	}
	return nil
}

// installShareLocked makes g the group's state, counting a rebalance when
// its epoch moved.
// REQUIRES: sg.mu held.
func (c *Coordinator) installShareLocked(sg *sgroup, g *sharegroup.Group) {
	if g.Epoch > sg.g.Epoch {
		c.sgs.rebalances.Add(1)
	}
	sg.g = g
}

// persistShare appends recs through the PersistShare hook; the append
// outlives the client's connection, as persistConsumer's.
func (c *Coordinator) persistShare(ctx context.Context, group string, recs []offsets.ShareRecord) error {
	if len(recs) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), persistTimeout)
	defer cancel()
	if err := c.opts.PersistShare(ctx, group, recs); err != nil {
		return appendErr(err)
	}
	return nil
}

// ShareGroupConfig returns group's effective share group configuration:
// its own share.* group configs where set, the broker's group.share.*
// values elsewhere (Options.ShareGroupConfigs), Kafka's defaults without
// either. Safe for concurrent use; for the data path (ShareFetch,
// ShareAcknowledge) as much as for the heartbeat.
func (c *Coordinator) ShareGroupConfig(group string) ShareGroupConfig {
	if c.opts.ShareGroupConfigs != nil {
		return c.opts.ShareGroupConfigs(group)
	}
	return DefaultShareGroupConfig()
}

// ShareMember returns the partitions (by topic id, each list sorted) that
// member memberID of share group groupID is currently assigned, and false
// when it is not a member of that share group here. The map is the
// caller's. Safe for concurrent use.
func (c *Coordinator) ShareMember(groupID, memberID string) (map[[16]byte][]int32, bool) {
	sg := c.shareGroup(groupID, false)
	if sg == nil {
		return nil, false
	}
	sg.mu.Lock()
	defer sg.mu.Unlock()
	if sg.dead {
		return nil, false
	}
	m, ok := sg.g.Member(memberID)
	if !ok {
		return nil, false
	}
	out := make(map[[16]byte][]int32, len(m.Assigned))
	maps.Copy(out, m.Assigned)
	return out, true
}

// ShareRebalances is the number of share group epoch bumps since start.
func (c *Coordinator) ShareRebalances() uint64 { return c.sgs.rebalances.Load() }

// shareMaxSize is group.share.max.size.
func (c *Coordinator) shareMaxSize() int {
	if c.opts.ShareMaxSize > 0 {
		return c.opts.ShareMaxSize
	}
	return defaultShareMaxSize
}

// shareTopics resolves the topics g's members subscribe to: each
// existing topic's id and partition count, by name.
func (c *Coordinator) shareTopics(g *sharegroup.Group) map[string]TopicInfo {
	out := map[string]TopicInfo{}
	for _, n := range g.SubscribedTopics() {
		if ti, ok := c.opts.Topics.Topic(n); ok && ti.Partitions > 0 {
			out[n] = ti
		}
	}
	return out
}

// shareHash is the hash of g's subscribed topics' metadata (the
// consumer groups' hashTopics over the same fields).
func (c *Coordinator) shareHash(g *sharegroup.Group) int64 {
	topics := map[assignor.TopicID]assignor.Topic{}
	for _, ti := range c.shareTopics(g) {
		id := assignor.TopicID(ti.ID)
		topics[id] = assignor.Topic{ID: id, Name: ti.Name, Partitions: ti.Partitions}
	}
	return hashTopics(topics)
}

// computeShareTarget computes g's target assignment at g.Epoch with the
// simple assignor and returns the records of the members whose target
// changed, then the assignment epoch.
func (c *Coordinator) computeShareTarget(g *sharegroup.Group) []offsets.ShareRecord {
	topics := c.shareTopics(g)
	parts := map[sharegroup.TopicID]int32{}
	for _, ti := range topics {
		parts[ti.ID] = ti.Partitions
	}
	var subs []sharegroup.Subscriber
	for _, m := range g.Members() {
		s := sharegroup.Subscriber{ID: m.ID}
		for _, n := range m.Subscribed {
			if ti, ok := topics[n]; ok {
				s.Topics = append(s.Topics, ti.ID)
			}
		}
		subs = append(subs, s)
	}
	target := sharegroup.Simple(subs, parts, g.Target)
	var recs []offsets.ShareRecord
	for _, id := range slices.Sorted(maps.Keys(target)) {
		if old, ok := g.Target[id]; ok && old.Equal(target[id]) {
			continue
		}
		recs = append(recs, sharegroup.TargetMemberRecord(g.ID, id, target[id]))
	}
	g.Target = target
	g.AssignmentEpoch = g.Epoch
	return append(recs, sharegroup.TargetEpochRecord(g))
}

// shareSummary is a share group's name, state and member count.
type shareSummary struct {
	name, state string
	members     int
}

// shareSummaries returns every live share group, in no order.
func (c *Coordinator) shareSummaries() []shareSummary {
	c.sgs.mu.Lock()
	sgs := make([]*sgroup, 0, len(c.sgs.groups))
	for _, sg := range c.sgs.groups {
		sgs = append(sgs, sg)
	}
	c.sgs.mu.Unlock()
	out := make([]shareSummary, 0, len(sgs))
	for _, sg := range sgs {
		sg.mu.Lock()
		if !sg.dead {
			out = append(out, shareSummary{sg.g.ID, sg.g.State(), sg.g.Len()})
		}
		sg.mu.Unlock()
	}
	return out
}

// deleteShareGroup is DeleteGroups for a share group, as Kafka's:
// NON_EMPTY_GROUP while it has members; otherwise its records are
// tombstoned (ShareGroup.createGroupTombstoneRecords) and it is forgotten.
// isShare is false when name is no share group here.
func (c *Coordinator) deleteShareGroup(name string) (isShare bool, err error) {
	sg := c.shareGroup(name, false)
	if sg == nil {
		return false, nil
	}
	sg.mu.Lock()
	defer sg.mu.Unlock()
	if sg.dead {
		return false, nil
	}
	if sg.g.Len() > 0 {
		return true, fmt.Errorf("%w: share group %s has %d members", errNonEmptyGroup, name, sg.g.Len())
	}
	if del := c.opts.ShareDeleteState; del != nil {
		if err := del(name); err != nil {
			return true, err
		}
	}
	var recs []offsets.ShareRecord
	for id := range sg.g.Target {
		recs = append(recs, sharegroup.MemberTombstones(name, id)[1])
	}
	recs = append(recs, sharegroup.GroupTombstones(name)...)
	if err := c.persistShare(context.Background(), name, recs); err != nil {
		return true, err
	}
	sg.killLocked()
	c.sgs.mu.Lock()
	if c.sgs.groups[name] == sg {
		delete(c.sgs.groups, name)
	}
	c.sgs.mu.Unlock()
	return true, nil
}

// notShareGroup is GROUP_ID_NOT_FOUND for a share group's name, nil for any
// other: the offset APIs (OffsetCommit, TxnOffsetCommit, OffsetFetch,
// OffsetDelete) refuse a share group, as Kafka's ShareGroup.validateOffset*.
func (c *Coordinator) notShareGroup(name string) error {
	if c.isShareGroup(name) {
		return fmt.Errorf("%w: Group %s is not a consumer group.", errGroupIDNotFound, name)
	}
	return nil
}

// errNotShareGroup: a share group request for a group of another type
// (GROUP_ID_NOT_FOUND, Kafka's message).
func errNotShareGroup(name string) error {
	return fmt.Errorf("%w: Group %s is not a share group.", errGroupIDNotFound, name)
}
