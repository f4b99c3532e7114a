// Package assignor holds the server-side partition assignors of the
// next-generation consumer group protocol (KIP-848): `uniform` and `range`,
// with the names, the inputs and the behaviour of Kafka 4.x's
// UniformAssignor and RangeAssignor (group-coordinator's
// org.apache.kafka.coordinator.group.assignor).
//
// An assignor is a pure function of a Spec (the members: id, optional
// instance id, rack, subscribed topic ids, current target assignment; and
// the metadata of the subscribed topics) to the group's new target
// assignment. It keeps no state, does no I/O and may be called from any
// number of goroutines at once. Its output is deterministic: the same Spec
// (whatever the order of its Members slice) gives the same assignment.
//
// Racks are carried in the input as Kafka carries them, but, as in Kafka
// 4.x, neither assignor places partitions by rack.
package assignor

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Names of the assignors, as ConsumerGroupHeartbeat's ServerAssignor and
// `group.consumer.assignors` spell them.
const (
	UniformName = "uniform"
	RangeName   = "range"
)

// ErrUnknownTopic is returned (wrapped, naming the member and the topic)
// when a member subscribes to a topic id that Spec.Topics lacks. Kafka's
// assignors throw PartitionAssignorException in that case; the coordinator
// only passes topics that exist, so this is a caller's bug.
var ErrUnknownTopic = errors.New("assignor: subscribed topic missing from the topic metadata")

// TopicID is a topic's UUID (KIP-516), its 16 bytes in network order.
type TopicID [16]byte

// Compare orders topic ids as Kafka's Uuid.compareTo does: the most
// significant 8 bytes as a signed int64, then the least significant 8 as a
// signed int64. The heterogeneous uniform builder breaks ties by this
// order, so using Kafka's keeps our assignments equal to Kafka's.
func (a TopicID) Compare(b TopicID) int {
	for _, off := range [2]int{0, 8} {
		x := int64(binary.BigEndian.Uint64(a[off:]))
		y := int64(binary.BigEndian.Uint64(b[off:]))
		if x < y {
			return -1
		}
		if x > y {
			return 1
		}
	}
	return 0
}

// Assignment is one member's partitions: topic id to partition indexes.
// In an assignor's output every slice is sorted ascending and non-empty,
// and the map is owned by the caller. In its input (Member.Current) order
// does not matter and the assignor never modifies it.
type Assignment map[TopicID][]int32

// Count returns the number of partitions in a.
func (a Assignment) Count() int {
	n := 0
	for _, ps := range a {
		n += len(ps)
	}
	return n
}

// Member is one member of the group as the assignor sees it.
type Member struct {
	ID         string
	InstanceID string // "" for a dynamic member
	Rack       string // "" when the client sent none
	// Topics are the topic ids the member subscribes to (names and a regex
	// already resolved by the coordinator). Duplicates are ignored.
	Topics []TopicID
	// Current is the member's assignment in the current target assignment.
	// A partition that two members both claim is kept by the first in
	// member id order; partitions of topics the member no longer
	// subscribes to, or past a topic's partition count, are dropped.
	Current Assignment
}

// Topic is the metadata of one subscribed topic.
type Topic struct {
	ID         TopicID
	Name       string
	Partitions int32
	// Racks[p] lists the racks of partition p's replicas; nil when
	// unknown. Carried for the coordinator's metadata hash; unused here.
	Racks [][]string
}

// Spec is the input of an assignment.
type Spec struct {
	Members []Member
	Topics  map[TopicID]Topic
}

// Assignor computes a group's target assignment. Assign returns an entry for
// every member of spec (an empty Assignment for a member that gets
// nothing), or an error wrapping ErrUnknownTopic.
type Assignor interface {
	Name() string
	Assign(spec *Spec) (map[string]Assignment, error)
}

// ByName returns the assignor called name ("uniform" or "range"), or nil.
func ByName(name string) Assignor {
	switch name {
	case UniformName:
		return Uniform{}
	case RangeName:
		return Range{}
	}
	return nil
}

// group is a Spec prepared for the builders: members sorted, subscriptions
// deduplicated, topics checked.
type group struct {
	spec    *Spec
	members []*Member // sorted by ID (range re-sorts its own copy)
	subs    [][]TopicID
	// topics are all subscribed topic ids, sorted by TopicID.Compare.
	topics []TopicID
	// homogeneous is true when every member subscribes to the same set.
	homogeneous bool
}

// prepare sorts the members by id, deduplicates and sorts each subscription
// and checks that every subscribed topic is known.
func prepare(spec *Spec) (*group, error) {
	g := &group{spec: spec, members: make([]*Member, len(spec.Members)), homogeneous: true}
	for i := range spec.Members {
		g.members[i] = &spec.Members[i]
	}
	slices.SortFunc(g.members, func(a, b *Member) int { return strings.Compare(a.ID, b.ID) })
	g.subs = make([][]TopicID, len(g.members))
	seen := make(map[TopicID]bool)
	for i, m := range g.members {
		if i > 0 && slices.Equal(m.Topics, g.members[i-1].Topics) {
			// Members usually share subscriptions: skip the sort and
			// the checks (the common case of a large homogeneous group).
			g.subs[i] = g.subs[i-1]
			continue
		}
		sub := slices.Clone(m.Topics)
		slices.SortFunc(sub, TopicID.Compare)
		sub = slices.Compact(sub)
		for _, t := range sub {
			if _, ok := spec.Topics[t]; !ok {
				return nil, fmt.Errorf("%w: member %q subscribes to %x", ErrUnknownTopic, m.ID, t)
			}
			if !seen[t] {
				seen[t] = true
				g.topics = append(g.topics, t)
			}
		}
		g.subs[i] = sub
		if i > 0 && !slices.Equal(sub, g.subs[0]) {
			g.homogeneous = false
		}
	}
	slices.SortFunc(g.topics, TopicID.Compare)
	return g, nil
}

// partitions returns topic t's partition count (never negative).
func (g *group) partitions(t TopicID) int {
	return max(int(g.spec.Topics[t].Partitions), 0)
}

// owners is a target assignment under construction: owners[t][p] is the
// index in group.members of partition p's owner, or -1.
type owners map[TopicID][]int32

func newOwners(g *group) owners {
	o := make(owners, len(g.topics))
	for _, t := range g.topics {
		ps := make([]int32, g.partitions(t))
		for i := range ps {
			ps[i] = -1
		}
		o[t] = ps
	}
	return o
}

// result turns owners into the assignor's output: one Assignment per member,
// partitions ascending.
func (o owners) result(g *group) map[string]Assignment {
	out := make(map[string]Assignment, len(g.members))
	as := make([]Assignment, len(g.members))
	for i, m := range g.members {
		as[i] = Assignment{}
		out[m.ID] = as[i]
	}
	for _, t := range g.topics {
		// Owners mostly hold runs of consecutive partitions: append a run
		// at a time.
		own := o[t]
		for p := 0; p < len(own); {
			m := own[p]
			end := p + 1
			for end < len(own) && own[end] == m {
				end++
			}
			if m >= 0 {
				ps := as[m][t]
				for q := p; q < end; q++ {
					ps = append(ps, int32(q))
				}
				as[m][t] = ps
			}
			p = end
		}
	}
	return out
}

// subscribes reports whether member i subscribes to t.
func (g *group) subscribes(i int, t TopicID) bool {
	_, ok := slices.BinarySearchFunc(g.subs[i], t, TopicID.Compare)
	return ok
}
