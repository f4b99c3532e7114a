package group

// The consumer groups of the next-generation protocol (KIP-848), beside the
// classic groups on the same __consumer_offsets partitions: Kafka 4.x's
// GroupMetadataManager.consumerGroupHeartbeat around the pure state machine
// of package group/consumer.
//
//   - A group is a *cgroup: the consumer.Group, the hash of its subscribed
//     topics' metadata, and each member's session and rebalance timers.
//   - A heartbeat changes a clone of the group, appends the records of the
//     change to __consumer_offsets (Options.PersistConsumer, acks=all) and
//     installs the clone only once they are committed, so a failed append
//     leaves the group as it was (Kafka reverts to its timeline snapshot).
//   - The load of a partition hands the latest record of each consumer
//     group key to ReloadConsumer, which replays them (consumer.Replay) and
//     gives every member a fresh session timer, as Kafka's onLoaded does.
//   - Offsets of a consumer group live where every group's offsets live:
//     in the classic coordinator's group of the same name, which for a
//     consumer group never has members. OffsetCommit and OffsetFetch check
//     the member epoch here first (consumer_offsets.go).
//
// Concurrency: cgs.mu guards the group map; each cgroup has its own mutex,
// held across the append of its records (requests of one group are
// serialized, as Kafka serializes those of a partition). Lock order:
// cgs.mu before cgroup.mu; neither is held while taking c.mu.

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"regexp"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/sluice/sluice/group/consumer"
	"github.com/sluice/sluice/group/consumer/assignor"
	"github.com/sluice/sluice/offsets"
)

// Kafka's defaults of the consumer group configs.
const (
	defaultConsumerHeartbeatInterval = 5 * time.Second  // group.consumer.heartbeat.interval.ms
	defaultConsumerSessionTimeout    = 45 * time.Second // group.consumer.session.timeout.ms
	// regexRefreshInterval is how often at most a group's regexes are
	// resolved again against the topics (Kafka's
	// REGEX_BATCH_REFRESH_MIN_INTERVAL_MS).
	regexRefreshInterval = 10 * time.Second
)

// TopicInfo is what the consumer group coordinator needs of a topic.
type TopicInfo struct {
	Name       string
	ID         [16]byte
	Partitions int32
}

// TopicSource is the cluster's topics, as the consumer group coordinator
// sees them. Implementations are safe for concurrent use.
type TopicSource interface {
	// Topic returns topic name's metadata; false when there is no such
	// topic.
	Topic(name string) (TopicInfo, bool)
	// TopicNames returns every topic's name.
	TopicNames() []string
}

// PersistConsumerFunc makes the records of one change of a consumer group
// durable before the change is applied. Same contract as PersistFunc.
type PersistConsumerFunc func(ctx context.Context, group string, recs []consumer.Record) error

// topicAuthKey is the context key of WithTopicAuthorizer.
type topicAuthKey struct{}

// WithTopicAuthorizer returns ctx carrying may, which reports whether the
// requester may Describe a topic: a regex subscription resolves only to
// topics it allows, as Kafka's. Without it every topic is allowed.
func WithTopicAuthorizer(ctx context.Context, may func(topic string) bool) context.Context {
	return context.WithValue(ctx, topicAuthKey{}, may)
}

func topicAuthFrom(ctx context.Context) func(string) bool {
	if f, ok := ctx.Value(topicAuthKey{}).(func(string) bool); ok && f != nil {
		return f
	}
	return func(string) bool { return true }
}

// consumerGroups is the coordinator's set of consumer groups.
type consumerGroups struct {
	mu     sync.Mutex
	groups map[string]*cgroup
	closed bool
}

// cgroup is one consumer group and its timers.
type cgroup struct {
	mu sync.Mutex
	g  *consumer.Group
	// metaHash is the hash of the subscribed topics' metadata the target
	// assignment was last computed for (ConsumerGroupMetadata's
	// MetadataHash).
	metaHash int64
	// subNames are the names g's members subscribe to (subscribedNames),
	// kept with g for the steady heartbeat; nil until first computed.
	subNames []string
	// dead: the group was unloaded or the coordinator closed; a request
	// holding it looks it up again.
	dead   bool
	timers map[string]*memberTimers
}

// memberTimers are one member's session timer and, while it has
// partitions to revoke, its rebalance timer. seq invalidates callbacks of
// replaced timers.
type memberTimers struct {
	session, rebalance Timer
	seq                uint64
	rebalanceEpoch     int32
	// classic are a classic member's join and sync timers
	// (consumer_migration.go), classicSeq their sequence numbers.
	classic    [2]Timer
	classicSeq [2]uint64
}

// consumerGroup returns the consumer group called name, creating an empty
// one when create is set; nil when absent (or closed).
func (c *Coordinator) consumerGroup(name string, create bool) *cgroup {
	c.cgs.mu.Lock()
	defer c.cgs.mu.Unlock()
	if c.cgs.closed {
		return nil
	}
	cg := c.cgs.groups[name]
	if cg == nil && create {
		if c.cgs.groups == nil {
			c.cgs.groups = map[string]*cgroup{}
		}
		cg = &cgroup{g: consumer.NewGroup(name), timers: map[string]*memberTimers{}}
		c.cgs.groups[name] = cg
	}
	return cg
}

// isConsumerGroup reports whether name is a consumer group here.
func (c *Coordinator) isConsumerGroup(name string) bool {
	return c.consumerGroup(name, false) != nil
}

// hasClassicMembers reports whether the classic group called name has
// members: a consumer group may not take its name then.
func (c *Coordinator) hasClassicMembers(name string) bool {
	g := c.getGroup(name, false)
	if g == nil {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.members) > 0
}

// killLocked stops every timer of cg and marks it dead.
// REQUIRES: cg.mu held.
func (cg *cgroup) killLocked() {
	cg.dead = true
	for _, t := range cg.timers {
		stopTimer(t.session)
		stopTimer(t.rebalance)
		stopTimer(t.classic[classicJoinTimer])
		stopTimer(t.classic[classicSyncTimer])
		t.seq++
	}
	cg.timers = map[string]*memberTimers{}
}

// closeConsumerGroups stops every consumer group's timers (Close).
func (c *Coordinator) closeConsumerGroups() {
	c.cgs.mu.Lock()
	groups := c.cgs.groups
	c.cgs.groups, c.cgs.closed = nil, true
	c.cgs.mu.Unlock()
	for _, cg := range groups {
		cg.mu.Lock()
		cg.killLocked()
		cg.mu.Unlock()
	}
}

// unloadConsumerGroups drops the consumer groups match selects (Unload).
func (c *Coordinator) unloadConsumerGroups(match func(string) bool) {
	c.replaceConsumerGroups(match, nil)
}

// replaceConsumerGroups removes the groups match selects and installs
// repl, starting their members' timers.
func (c *Coordinator) replaceConsumerGroups(match func(string) bool, repl map[string]*cgroup) {
	c.cgs.mu.Lock()
	if c.cgs.closed {
		c.cgs.mu.Unlock()
		return
	}
	var gone []*cgroup
	for name, cg := range c.cgs.groups {
		if match(name) {
			gone = append(gone, cg)
			delete(c.cgs.groups, name)
		}
	}
	if len(repl) > 0 && c.cgs.groups == nil {
		c.cgs.groups = map[string]*cgroup{}
	}
	for name, cg := range repl {
		c.cgs.groups[name] = cg
		cg.mu.Lock()
		for _, m := range cg.g.Members() {
			c.scheduleSessionLocked(cg, m.ID)
			if m.State == consumer.UnrevokedPartitions {
				c.scheduleRebalanceLocked(cg, m)
			}
		}
		cg.mu.Unlock()
	}
	c.cgs.mu.Unlock()
	for _, cg := range gone {
		cg.mu.Lock()
		cg.killLocked()
		cg.mu.Unlock()
	}
}

// ReloadConsumer replaces the consumer groups match selects by those of
// groups, each group's latest record per key in log order (package
// offsets' replay of a __consumer_offsets partition). A group whose
// records do not replay is logged and left out: its members rejoin. Safe
// for concurrent use.
func (c *Coordinator) ReloadConsumer(match func(string) bool, groups map[string][]offsets.ConsumerRecord) error {
	fresh := make(map[string]*cgroup, len(groups))
	for name, recs := range groups {
		g := consumer.NewGroup(name)
		var hash int64
		deleted, ok := true, true
		for _, r := range recs {
			if r.Key.Type == offsets.ConsumerGroupMetadataType {
				deleted = r.Value == nil
				if v, isMD := r.Value.(offsets.ConsumerGroupMetadataValue); isMD {
					hash = v.MetadataHash
				}
				if deleted {
					g = consumer.NewGroup(name)
					continue
				}
			}
			if err := g.Replay(r); err != nil {
				c.log.Error("group: consumer group does not replay; its members will rejoin", "group", name, "err", err)
				ok = false
				break
			}
		}
		if !ok || (deleted && g.Len() == 0) {
			continue
		}
		fresh[name] = &cgroup{g: g, metaHash: hash, subNames: subscribedNames(g), timers: map[string]*memberTimers{}}
	}
	c.replaceConsumerGroups(match, fresh)
	return nil
}

// scheduleSessionLocked (re)starts member id's session timer: when it
// fires the member is removed, as Kafka's consumer group session timeout.
// A classic member's timeout is the one of its JoinGroup.
// REQUIRES: cg.mu held, id's member installed in cg.g.
func (c *Coordinator) scheduleSessionLocked(cg *cgroup, id string) {
	t := cg.timers[id]
	if t == nil {
		t = &memberTimers{}
		cg.timers[id] = t
	}
	stopTimer(t.session)
	t.seq++
	seq := t.seq
	name := cg.g.ID
	d := c.consumerSessionTimeout(name)
	if m, ok := cg.g.Member(id); ok && m.UsesClassic() {
		d = time.Duration(m.Classic.SessionTimeoutMs) * time.Millisecond
	}
	t.session = c.clock.AfterFunc(d, func() {
		c.fenceMember(name, id, "session timeout", func(_ consumer.Member, mt *memberTimers) bool { return mt.seq == seq })
	})
}

// scheduleRebalanceLocked starts m's rebalance timer: a member that has
// not revoked its partitions within its rebalance timeout, still at the
// same epoch, is removed (Kafka's consumer group rebalance timeout).
// REQUIRES: cg.mu held.
func (c *Coordinator) scheduleRebalanceLocked(cg *cgroup, m consumer.Member) {
	t := cg.timers[m.ID]
	if t == nil {
		return
	}
	if t.rebalance != nil && t.rebalanceEpoch == m.MemberEpoch {
		return // already running for this epoch
	}
	stopTimer(t.rebalance)
	t.rebalanceEpoch = m.MemberEpoch
	epoch, id, name := m.MemberEpoch, m.ID, cg.g.ID
	d := time.Duration(max(m.RebalanceTimeoutMs, 0)) * time.Millisecond
	t.rebalance = c.clock.AfterFunc(d, func() {
		c.fenceMember(name, id, "rebalance timeout", func(m consumer.Member, _ *memberTimers) bool {
			return m.MemberEpoch == epoch && m.State == consumer.UnrevokedPartitions
		})
	})
}

// cancelRebalanceLocked stops member id's rebalance timer.
// REQUIRES: cg.mu held.
func (cg *cgroup) cancelRebalanceLocked(id string) {
	if t := cg.timers[id]; t != nil && t.rebalance != nil {
		stopTimer(t.rebalance)
		t.rebalance = nil
	}
}

// fenceMember removes member id of group name when still checks true, and
// bumps the group epoch, as Kafka's consumerGroupFenceMember; when only
// classic members remain, the group is downgraded instead (Kafka's
// validateOnlineDowngradeWithFencedMember).
func (c *Coordinator) fenceMember(name, id, why string, still func(consumer.Member, *memberTimers) bool) {
	cl := c.lockClassicForDowngrade(name, id)
	if cl != nil {
		defer cl.mu.Unlock()
	}
	cg := c.consumerGroup(name, false)
	if cg == nil {
		return
	}
	cg.mu.Lock()
	defer cg.mu.Unlock()
	m, ok := cg.g.Member(id)
	t := cg.timers[id]
	if cg.dead || !ok || t == nil || !still(m, t) {
		return
	}
	if done, err := c.downgradeLocked(cl, cg, id, nil); done {
		if err != nil {
			c.log.Warn("group: persist consumer group downgrade", "group", name, "member", id, "err", err)
		}
		return
	}
	g := cg.g.Clone()
	g.RemoveMember(id)
	g.BumpEpoch()
	recs := append(consumer.MemberTombstones(name, id), cg.epochRecord(g, cg.metaHash))
	ctx, cancel := context.WithTimeout(context.Background(), persistTimeout)
	defer cancel()
	if err := c.opts.PersistConsumer(ctx, name, recs); err != nil {
		c.log.Warn("group: persist consumer group member removal", "group", name, "member", id, "err", err)
		return
	}
	c.noteConsumerInstall(cg.g, g)
	cg.g, cg.subNames = g, subscribedNames(g)
	cg.dropTimersLocked(id)
	c.log.Info("group: consumer group member removed", "group", name, "member", id, "reason", why, "epoch", g.Epoch)
}

// epochRecord is g's ConsumerGroupMetadata record with the metadata hash.
func (cg *cgroup) epochRecord(g *consumer.Group, hash int64) consumer.Record {
	r := consumer.GroupEpochRecord(g)
	v := r.Value.(offsets.ConsumerGroupMetadataValue)
	v.MetadataHash = hash
	r.Value = v
	return r
}

// consumerSessionTimeout is group's session timeout: its own
// consumer.session.timeout.ms when set, else the broker's.
func (c *Coordinator) consumerSessionTimeout(group string) time.Duration {
	if c.opts.ConsumerGroupTimeouts != nil {
		if d, _ := c.opts.ConsumerGroupTimeouts(group); d > 0 {
			return d
		}
	}
	if c.opts.ConsumerSessionTimeout > 0 {
		return c.opts.ConsumerSessionTimeout
	}
	return defaultConsumerSessionTimeout
}

// consumerHeartbeatInterval is the heartbeat interval group's members
// are told: its own consumer.heartbeat.interval.ms when set, else the
// broker's.
func (c *Coordinator) consumerHeartbeatInterval(group string) time.Duration {
	if c.opts.ConsumerGroupTimeouts != nil {
		if _, d := c.opts.ConsumerGroupTimeouts(group); d > 0 {
			return d
		}
	}
	if c.opts.ConsumerHeartbeatInterval > 0 {
		return c.opts.ConsumerHeartbeatInterval
	}
	return defaultConsumerHeartbeatInterval
}

// consumerAssignors is group.consumer.assignors, the first the default.
func (c *Coordinator) consumerAssignors() []string {
	if len(c.opts.ConsumerAssignors) > 0 {
		return c.opts.ConsumerAssignors
	}
	return []string{assignor.UniformName, assignor.RangeName}
}

func (c *Coordinator) consumerMaxSize() int {
	if c.opts.ConsumerMaxSize > 0 {
		return c.opts.ConsumerMaxSize
	}
	return 1<<31 - 1
}

// subscription is what a group's members subscribe to, resolved against
// the topics: each member's topic ids, the topics by id, and the hash of
// their metadata.
type subscription struct {
	member map[string]map[assignor.TopicID]bool
	topics map[assignor.TopicID]assignor.Topic
	hash   int64
}

// resolve resolves the subscriptions of g's members (names, and regexes
// through g.Regexes) against the topics.
func (c *Coordinator) resolve(g *consumer.Group) subscription {
	s := subscription{member: map[string]map[assignor.TopicID]bool{}, topics: map[assignor.TopicID]assignor.Topic{}}
	byName := map[string]*TopicInfo{}
	lookup := func(name string) *TopicInfo {
		if ti, seen := byName[name]; seen {
			return ti
		}
		var out *TopicInfo
		if ti, ok := c.opts.Topics.Topic(name); ok && ti.Partitions > 0 {
			out = &ti
		}
		byName[name] = out
		return out
	}
	for _, m := range g.Members() {
		set := map[assignor.TopicID]bool{}
		add := func(name string) {
			if ti := lookup(name); ti != nil {
				id := assignor.TopicID(ti.ID)
				set[id] = true
				s.topics[id] = assignor.Topic{ID: id, Name: ti.Name, Partitions: ti.Partitions}
			}
		}
		for _, n := range m.SubscribedTopicNames {
			add(n)
		}
		if m.SubscribedTopicRegex != "" {
			for _, n := range g.Regexes[m.SubscribedTopicRegex].Topics {
				add(n)
			}
		}
		s.member[m.ID] = set
	}
	s.hash = hashTopics(s.topics)
	return s
}

// hashTopics is the hash of the subscribed topics' metadata: ids, names and
// partition counts, in topic id order. It is Sluice's, stored in the
// ConsumerGroupMetadata record's MetadataHash (a Kafka-written hash differs
// and costs one extra group epoch after a migration).
func hashTopics(topics map[assignor.TopicID]assignor.Topic) int64 {
	h := fnv.New64a()
	for _, id := range slices.SortedFunc(maps.Keys(topics), assignor.TopicID.Compare) {
		t := topics[id]
		h.Write(id[:])
		h.Write([]byte(t.Name))
		h.Write([]byte{byte(t.Partitions >> 24), byte(t.Partitions >> 16), byte(t.Partitions >> 8), byte(t.Partitions)})
	}
	return int64(h.Sum64())
}

// subscribedNames returns the names g's members subscribe to, by name or
// through their resolved regexes, sorted and unique.
func subscribedNames(g *consumer.Group) []string {
	set := map[string]bool{}
	for _, m := range g.Members() {
		for _, t := range m.SubscribedTopicNames {
			set[t] = true
		}
		if m.SubscribedTopicRegex != "" {
			for _, t := range g.Regexes[m.SubscribedTopicRegex].Topics {
				set[t] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// hashNames is resolve's hash computed from the subscribed names alone.
func (c *Coordinator) hashNames(names []string) int64 {
	topics := make(map[assignor.TopicID]assignor.Topic, len(names))
	for _, n := range names {
		if ti, ok := c.opts.Topics.Topic(n); ok && ti.Partitions > 0 {
			id := assignor.TopicID(ti.ID)
			topics[id] = assignor.Topic{ID: id, Name: ti.Name, Partitions: ti.Partitions}
		}
	}
	return hashTopics(topics)
}

// memberTopics is the set of topic ids m subscribes to in g.
func (c *Coordinator) memberTopics(g *consumer.Group, m consumer.Member) map[assignor.TopicID]bool {
	set := map[assignor.TopicID]bool{}
	add := func(n string) {
		if ti, ok := c.opts.Topics.Topic(n); ok && ti.Partitions > 0 {
			set[assignor.TopicID(ti.ID)] = true
		}
	}
	for _, n := range m.SubscribedTopicNames {
		add(n)
	}
	if m.SubscribedTopicRegex != "" {
		for _, n := range g.Regexes[m.SubscribedTopicRegex].Topics {
			add(n)
		}
	}
	return set
}

// regexDue reports whether a regex of g is due for a new resolution.
func regexDue(g *consumer.Group, now time.Time) bool {
	for _, r := range g.Regexes {
		if now.UnixMilli()-r.Timestamp >= regexRefreshInterval.Milliseconds() {
			return true
		}
	}
	return false
}

// compileRegex compiles a subscription regex as Kafka's RE2J matches it: the
// whole topic name must match.
func compileRegex(expr string) (*regexp.Regexp, error) {
	return regexp.Compile(`^(?:` + expr + `)$`)
}

// refreshRegexes resolves the regexes g's members use that are new or
// older than regexRefreshInterval, against the topics may allows, and drops
// those no member uses. It returns the records of what changed and
// whether a resolution changed (the group epoch must move).
func (c *Coordinator) refreshRegexes(g *consumer.Group, may func(string) bool, now time.Time) (recs []consumer.Record, changed bool) {
	used := map[string]bool{}
	for _, m := range g.Members() {
		if m.SubscribedTopicRegex != "" {
			used[m.SubscribedTopicRegex] = true
		}
	}
	for re := range g.Regexes {
		if !used[re] {
			delete(g.Regexes, re)
			recs = append(recs, consumer.RegexRecord(g.ID, re, nil))
			changed = true
		}
	}
	var names []string
	for _, re := range slices.Sorted(maps.Keys(used)) {
		old, had := g.Regexes[re]
		if had && now.UnixMilli()-old.Timestamp < regexRefreshInterval.Milliseconds() {
			continue
		}
		rx, err := compileRegex(re)
		if err != nil {
			continue // validated at the heartbeat that brought it
		}
		if names == nil {
			names = c.opts.Topics.TopicNames()
			sort.Strings(names)
		}
		var topics []string
		for _, n := range names {
			if rx.MatchString(n) && may(n) {
				topics = append(topics, n)
			}
		}
		r := consumer.ResolvedRegex{Topics: topics, Version: 0, Timestamp: now.UnixMilli()}
		g.Regexes[re] = r
		// Only a new resolution is written: an unchanged one only moves
		// the refresh time, which a replay may lose (the regex is then
		// resolved again at once).
		if !had || !slices.Equal(old.Topics, topics) {
			recs = append(recs, consumer.RegexRecord(g.ID, re, &r))
			changed = true
		}
	}
	return recs, changed
}

// preferredAssignor is Kafka's ConsumerGroup.preferredServerAssignor: the
// assignor most members name, else the default.
func (c *Coordinator) preferredAssignor(g *consumer.Group) string {
	counts := map[string]int{}
	for _, m := range g.Members() {
		if m.ServerAssignor != "" {
			counts[m.ServerAssignor]++
		}
	}
	best, n := c.consumerAssignors()[0], 0
	for _, name := range slices.Sorted(maps.Keys(counts)) {
		if counts[name] > n {
			best, n = name, counts[name]
		}
	}
	return best
}

// computeTarget computes g's target assignment at g.Epoch and returns the
// records of the members whose target changed, then the assignment epoch.
func (c *Coordinator) computeTarget(g *consumer.Group, sub subscription) ([]consumer.Record, error) {
	a := assignor.ByName(c.preferredAssignor(g))
	if a == nil {
		a = assignor.Uniform{}
	}
	spec := &assignor.Spec{Topics: sub.topics}
	for _, m := range g.Members() {
		spec.Members = append(spec.Members, assignor.Member{
			ID: m.ID, InstanceID: m.InstanceID, Rack: m.RackID,
			Topics:  slices.Collect(maps.Keys(sub.member[m.ID])),
			Current: g.Target[m.ID],
		})
	}
	target, err := a.Assign(spec)
	if err != nil {
		return nil, err
	}
	old := g.Target
	g.SetTarget(g.Epoch, target)
	all := consumer.TargetRecords(g)
	recs := make([]consumer.Record, 0, len(all))
	for _, r := range all {
		if r.Key.Type == offsets.ConsumerGroupTargetAssignmentMemberType {
			if prev, ok := old[r.Key.Member]; ok && equalAssignment(prev, g.Target[r.Key.Member]) {
				continue
			}
		}
		recs = append(recs, r)
	}
	return recs, nil
}

// equalAssignment reports whether a and b hold the same partitions (both
// sorted, as assignors and records give them).
func equalAssignment(a, b assignor.Assignment) bool {
	if len(a) != len(b) {
		return false
	}
	for t, ps := range a {
		if !slices.Equal(ps, b[t]) {
			return false
		}
	}
	return true
}

// groupState is Kafka's ConsumerGroup state name of g.
func groupState(g *consumer.Group) string {
	switch {
	case g.Len() == 0:
		return "Empty"
	case g.Epoch != g.AssignmentEpoch:
		return "Assigning"
	}
	for _, m := range g.Members() {
		if m.MemberEpoch != g.AssignmentEpoch || m.State != consumer.Stable {
			return "Reconciling"
		}
	}
	return "Stable"
}

// errNotConsumerGroup: a consumer group request for a classic group with
// members (GROUP_ID_NOT_FOUND, as Kafka answers when migration does not
// apply).
func errNotConsumerGroup(name string) error {
	return fmt.Errorf("%w: group %s is not a consumer group", errGroupIDNotFound, name)
}

var errBadConsumerRequest = errors.New("group: invalid consumer group heartbeat")

// badRequest is an INVALID_REQUEST with Kafka's message.
func badRequest(msg string) error {
	return fmt.Errorf("%w: %w: %s", errInvalidRequest, errBadConsumerRequest, msg)
}

// deleteConsumerGroup is DeleteGroups for a consumer group, as Kafka's:
// NON_EMPTY_GROUP while it has members; otherwise its records are
// tombstoned (regexes, target assignment epoch, partition metadata, group
// epoch: Kafka's createGroupTombstoneRecords) and it is forgotten. isConsumer
// is false when name is no consumer group here; the caller then deletes the
// classic group (which holds every group's offsets) as before.
func (c *Coordinator) deleteConsumerGroup(name string) (isConsumer bool, err error) {
	cg := c.consumerGroup(name, false)
	if cg == nil {
		return false, nil
	}
	cg.mu.Lock()
	defer cg.mu.Unlock()
	if cg.dead {
		return false, nil
	}
	if cg.g.Len() > 0 {
		return true, fmt.Errorf("%w: consumer group %s has %d members", errNonEmptyGroup, name, cg.g.Len())
	}
	var recs []consumer.Record
	for _, re := range slices.Sorted(maps.Keys(cg.g.Regexes)) {
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
	cg.killLocked()
	c.cgs.mu.Lock()
	if c.cgs.groups[name] == cg {
		delete(c.cgs.groups, name)
	}
	c.cgs.mu.Unlock()
	return true, nil
}
