package group

import (
	"sort"
	"sync/atomic"

	"github.com/sluice/sluice/group/consumer"
	"github.com/sluice/sluice/metastore"
)

// Group types (KIP-848 naming), as ListGroups v5 and the metrics name them.
const (
	ClassicGroupType  = "classic"
	ConsumerGroupType = "consumer"
)

// GroupStats is what the broker's metrics show of one group this
// coordinator holds: its type, state, member count and committed offsets.
// A consumer group (KIP-848) is one entry, although its offsets live in a
// classic group of the same name that has no members.
type GroupStats struct {
	Name    string
	Type    string // ClassicGroupType or ConsumerGroupType
	State   string // Kafka's name: Empty, Stable, PreparingRebalance, ... (classic); Empty, Assigning, Reconciling, Stable (consumer)
	Members int
	Offsets map[metastore.TopicPartition]int64 // committed; a copy
}

// RebalanceStats counts the rebalances of this coordinator's groups since
// it started, as Kafka's GroupCoordinatorMetrics sensors do.
type RebalanceStats struct {
	// ClassicCompleted counts classic groups reaching Stable after a
	// SyncGroup (Kafka's CompletedRebalances:
	// group-completed-rebalance-count).
	ClassicCompleted uint64
	// Consumer counts consumer group epoch bumps (Kafka's
	// ConsumerGroupRebalances: consumer-group-rebalance-count).
	Consumer uint64
}

// rebalanceCounters are the counters behind RebalanceStats; safe for
// concurrent use.
type rebalanceCounters struct {
	classic, consumer atomic.Uint64
}

// noteConsumerInstall counts a consumer group rebalance when next, about to
// replace prev, has a higher group epoch. Called where a committed clone is
// installed, so a failed append counts nothing.
func (c *Coordinator) noteConsumerInstall(prev, next *consumer.Group) {
	if next.Epoch > prev.Epoch {
		c.rebalances.consumer.Add(1)
	}
}

// Rebalances returns the rebalance counts. Safe for concurrent use.
func (c *Coordinator) Rebalances() RebalanceStats {
	return RebalanceStats{ClassicCompleted: c.rebalances.classic.Load(), Consumer: c.rebalances.consumer.Load()}
}

// Stats returns every group this coordinator holds (those it coordinates;
// none while loading), sorted by name. For scrapes, not hot paths: it
// copies the offsets. Safe for concurrent use.
func (c *Coordinator) Stats() []GroupStats {
	gs := c.groupList()
	byName := make(map[string]int, len(gs))
	out := make([]GroupStats, 0, len(gs))
	for _, g := range gs {
		g.mu.Lock()
		st := GroupStats{Name: g.name, Type: ClassicGroupType, State: g.state.String(), Members: len(g.members),
			Offsets: make(map[metastore.TopicPartition]int64, len(g.offsets))}
		for tp, o := range g.offsets {
			st.Offsets[tp] = o.Offset
		}
		g.mu.Unlock()
		byName[st.Name] = len(out)
		out = append(out, st)
	}
	for _, cs := range c.consumerSummaries() {
		i, ok := byName[cs.name]
		if !ok {
			i = len(out)
			out = append(out, GroupStats{Name: cs.name, Offsets: map[metastore.TopicPartition]int64{}})
		}
		out[i].Type, out[i].State, out[i].Members = ConsumerGroupType, cs.state, cs.members
	}
	for _, ss := range c.shareSummaries() {
		out = append(out, GroupStats{Name: ss.name, Type: ShareGroupType, State: ss.state, Members: ss.members,
			Offsets: map[metastore.TopicPartition]int64{}})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// consumerSummary is a consumer group's name, state and member count.
type consumerSummary struct {
	name, state string
	members     int
}

// consumerSummaries returns every live consumer group, in no order.
func (c *Coordinator) consumerSummaries() []consumerSummary {
	c.cgs.mu.Lock()
	cgs := make([]*cgroup, 0, len(c.cgs.groups))
	for _, cg := range c.cgs.groups {
		cgs = append(cgs, cg)
	}
	c.cgs.mu.Unlock()
	out := make([]consumerSummary, 0, len(cgs))
	for _, cg := range cgs {
		cg.mu.Lock()
		if !cg.dead {
			out = append(out, consumerSummary{cg.g.ID, groupState(cg.g), cg.g.Len()})
		}
		cg.mu.Unlock()
	}
	return out
}

// groupList returns the groups held now, in no order, for work that takes
// each group's own lock afterwards (never c.mu and a g.mu together).
func (c *Coordinator) groupList() []*group {
	c.mu.Lock()
	defer c.mu.Unlock()
	gs := make([]*group, 0, len(c.groups))
	for _, g := range c.groups {
		gs = append(gs, g)
	}
	return gs
}
