package assignor

import (
	"slices"
	"strings"
)

// Range is Kafka's `range` assignor (RangeAssignor): each topic's
// partitions are cut into contiguous ranges, one per subscriber, the first
// `partitions % subscribers` subscribers getting one more. Subscribers are
// ordered with static members first, by instance id, then dynamic members,
// by member id. So when all members subscribe to the same topics and the
// topics have the same partition count, member k gets the same partition
// numbers of every topic (co-partitioning, for joins).
//
// As Kafka 4.x's, it is deterministic but keeps no memory of the current
// assignment: its stickiness is that of its order. A static member that
// rejoins under a new member id with the same instance id gets the same
// partitions back as long as the members, their subscriptions and the
// topics are unchanged.
type Range struct{}

// Name returns "range".
func (Range) Name() string { return RangeName }

// Assign computes the target assignment of spec. See Assignor.
func (Range) Assign(spec *Spec) (map[string]Assignment, error) {
	g, err := prepare(spec)
	if err != nil {
		return nil, err
	}
	order := make([]int, len(g.members))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		ia, ib := g.members[a].InstanceID, g.members[b].InstanceID
		switch {
		case ia != "" && ib != "":
			return strings.Compare(ia, ib)
		case ia != "":
			return -1
		case ib != "":
			return 1
		}
		return strings.Compare(g.members[a].ID, g.members[b].ID)
	})

	// Topics by index into g.topics; members' subscriptions as index
	// lists, shared between members with the same subscription (prepare
	// shares g.subs the same way), so that the loop below does no map
	// lookup per (member, topic).
	index := make(map[TopicID]int, len(g.topics))
	for i, t := range g.topics {
		index[t] = i
	}
	subIdx := make([][]int, len(g.members))
	for i := range g.members {
		if i > 0 && len(g.subs[i]) > 0 && len(g.subs[i-1]) > 0 && &g.subs[i][0] == &g.subs[i-1][0] {
			subIdx[i] = subIdx[i-1]
			continue
		}
		idx := make([]int, len(g.subs[i]))
		for j, t := range g.subs[i] {
			idx[j] = index[t]
		}
		subIdx[i] = idx
	}

	type cut struct{ partitions, minQuota, extra, next int }
	cuts := make([]cut, len(g.topics))
	for i := range g.members {
		for _, ti := range subIdx[i] {
			cuts[ti].extra++ // subscriber count, until the quotas are computed
		}
	}
	for ti, t := range g.topics {
		c := &cuts[ti]
		c.partitions = g.partitions(t)
		c.minQuota, c.extra = c.partitions/c.extra, c.partitions%c.extra
	}

	out := make(map[string]Assignment, len(g.members))
	for _, i := range order {
		a := Assignment{}
		for _, ti := range subIdx[i] {
			c := &cuts[ti]
			quota := c.minQuota
			if c.extra > 0 {
				quota++
				c.extra--
			}
			start := c.next
			end := min(start+quota, c.partitions)
			c.next = end
			if start < end {
				ps := make([]int32, 0, end-start)
				for p := start; p < end; p++ {
					ps = append(ps, int32(p))
				}
				a[g.topics[ti]] = ps
			}
		}
		out[g.members[i].ID] = a
	}
	return out, nil
}
