package group

import (
	"github.com/sluice/sluice/metastore"
)

// GroupStats is what the broker's metrics show of one group this
// coordinator holds: its state, member count and committed offsets.
type GroupStats struct {
	Name    string
	State   string // Kafka's name: Empty, Stable, PreparingRebalance, ...
	Members int
	Offsets map[metastore.TopicPartition]int64 // committed; a copy
}

// Stats returns every group this coordinator holds (those it coordinates;
// none while loading). For scrapes, not hot paths: it copies the offsets.
// Safe for concurrent use.
func (c *Coordinator) Stats() []GroupStats {
	gs := c.groupList()
	out := make([]GroupStats, 0, len(gs))
	for _, g := range gs {
		g.mu.Lock()
		st := GroupStats{Name: g.name, State: g.state.String(), Members: len(g.members),
			Offsets: make(map[metastore.TopicPartition]int64, len(g.offsets))}
		for tp, o := range g.offsets {
			st.Offsets[tp] = o.Offset
		}
		g.mu.Unlock()
		out = append(out, st)
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
