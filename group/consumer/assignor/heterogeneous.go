package assignor

import (
	"cmp"
	"slices"
)

// maxBalanceRounds bounds the final balancing phase, as Kafka's
// MAX_ITERATION_COUNT: when all subscribers of a topic share their
// subscriptions one round converges and a second detects it; overlapping,
// non-identical subscriptions converge more slowly, each round roughly
// halving the imbalance.
const maxBalanceRounds = 16

// heterogeneous is Kafka's UniformHeterogeneousAssignmentBuilder, for
// groups whose members subscribe to different topics. Members are numbered
// by their order in group.members (member id order), as Kafka numbers them
// in groupSpec.memberIds() order.
//
//  1. Every member keeps the still valid partitions of its current
//     assignment (subscribed topic, partition in range, not claimed by an
//     earlier member).
//  2. Unowned partitions are given, topic by topic (topics ordered by
//     partitions per subscriber descending, then subscriber count
//     ascending, then topic id), to the least loaded subscribers.
//  3. Rounds over the topics with two or more subscribers move partitions
//     from a topic's most loaded subscribers to its least loaded ones until a
//     whole round moves nothing, or after maxBalanceRounds rounds.
type heterogeneous struct {
	g           *group
	o           owners
	subscribers map[TopicID][]int32 // member indexes, ascending
	sizes       []int               // partitions per member in o
}

func newHeterogeneous(g *group) *heterogeneous {
	h := &heterogeneous{g: g, o: newOwners(g), subscribers: make(map[TopicID][]int32, len(g.topics)), sizes: make([]int, len(g.members))}
	for i := range g.members {
		for _, t := range g.subs[i] {
			h.subscribers[t] = append(h.subscribers[t], int32(i))
		}
	}
	return h
}

// topicOrder is Kafka's topic comparator: partitions per subscriber
// descending, then subscriber count ascending, then topic id ascending.
// The ratios are compared by cross-multiplication, exact where Kafka
// divides doubles.
func (h *heterogeneous) topicOrder(a, b TopicID) int {
	pa, pb := int64(h.g.partitions(a)), int64(h.g.partitions(b))
	sa, sb := int64(len(h.subscribers[a])), int64(len(h.subscribers[b]))
	if c := cmp.Compare(pb*sa, pa*sb); c != 0 {
		return c
	}
	if c := cmp.Compare(sa, sb); c != 0 {
		return c
	}
	return a.Compare(b)
}

func (h *heterogeneous) build() owners {
	if len(h.g.topics) == 0 {
		return h.o
	}
	// 1. Keep what is still valid.
	for i, m := range h.g.members {
		for t, ps := range m.Current {
			if !h.g.subscribes(i, t) {
				continue
			}
			own := h.o[t]
			for _, p := range ps {
				if p >= 0 && int(p) < len(own) && own[p] == -1 {
					own[p] = int32(i)
					h.sizes[i]++
				}
			}
		}
	}

	// 2. Assign the rest.
	var pending []TopicID
	for _, t := range h.g.topics {
		if slices.Contains(h.o[t], -1) {
			pending = append(pending, t)
		}
	}
	slices.SortFunc(pending, h.topicOrder)
	b := &balancer{sizes: h.sizes}
	for _, t := range pending {
		b.init(h.subscribers[t])
		own := h.o[t]
		for p := range own {
			if own[p] == -1 {
				h.move(t, int32(p), b.nextLeastLoaded())
			}
		}
	}

	// 3. Balance.
	var movable []TopicID
	for _, t := range h.g.topics {
		if len(h.subscribers[t]) >= 2 {
			movable = append(movable, t)
		}
	}
	if len(movable) > 0 {
		h.balanceTopics(movable, b)
	}
	return h.o
}

// move gives partition p of t to member m, taking it from its owner if any.
func (h *heterogeneous) move(t TopicID, p int32, m int32) {
	own := h.o[t]
	if old := own[p]; old >= 0 {
		h.sizes[old]--
	}
	own[p] = m
	h.sizes[m]++
}

// balanceTopics is Kafka's balanceTopics: rounds over the sorted topics
// until a full round reassigns nothing or maxBalanceRounds pass.
func (h *heterogeneous) balanceTopics(topics []TopicID, b *balancer) {
	slices.SortFunc(topics, h.topicOrder)
	last := -1 // index of the last topic that was rebalanced
	var scratch balanceScratch
	scratch.start = make([]int, len(h.g.members))
	scratch.end = make([]int, len(h.g.members))
	for range maxBalanceRounds {
		for i, t := range topics {
			if i == last {
				return // a whole round without a move
			}
			if h.balanceTopic(t, b, &scratch) > 0 || last == -1 {
				last = i
			}
		}
	}
}

// balanceScratch is reused across balanceTopic calls: partitions of the
// topic grouped by owner; start[m]..end[m] (end exclusive) is member m's
// run in partitions; runs lists the members with a run, whose entries are
// zeroed again after the topic. Entries of other members are 0.
type balanceScratch struct {
	partitions []int32
	runs       []int32
	start, end []int
}

// balanceTopic moves partitions of t from its most loaded subscribers to
// its least loaded ones until their totals differ by one or less, or no
// loaded subscriber has a partition of t left to give. Each partition is
// taken at most once, so the loop is bounded by the partition count plus
// the subscribers. Returns the number of partitions moved.
func (h *heterogeneous) balanceTopic(t TopicID, b *balancer, s *balanceScratch) int {
	if b.init(h.subscribers[t]) <= 1 {
		return 0
	}
	own := h.o[t]
	s.partitions = s.partitions[:0]
	for p := range own {
		s.partitions = append(s.partitions, int32(p))
	}
	slices.SortFunc(s.partitions, func(x, y int32) int {
		if c := cmp.Compare(own[x], own[y]); c != 0 {
			return c
		}
		return cmp.Compare(x, y)
	})
	s.runs = s.runs[:0]
	for i, p := range s.partitions {
		m := own[p]
		if i == 0 || own[s.partitions[i-1]] != m {
			s.start[m] = i
			s.runs = append(s.runs, m)
		}
		s.end[m] = i + 1
	}

	moved := 0
	for !b.isBalanced() {
		most := int32(-1)
		for {
			most = b.nextMostLoaded()
			if most == -1 {
				break
			}
			if s.end[most]-s.start[most] <= 0 {
				b.excludeMostLoaded()
				continue
			}
			break
		}
		if most == -1 {
			break
		}
		s.end[most]--
		p := s.partitions[s.end[most]]
		least := b.nextLeastLoaded()
		if b.isBalanced() {
			break
		}
		h.move(t, p, least)
		moved++
	}
	for _, m := range s.runs {
		s.start[m], s.end[m] = 0, 0
	}
	return moved
}

// balancer is Kafka's MemberAssignmentBalancer. It keeps a topic's
// subscribers sorted by load and two ranges of them: [0, leastEnd), the
// least loaded ones, which receive partitions round-robin and widen
// rightwards as their level rises; and [mostStart, mostEnd), the most
// loaded ones, which give partitions round-robin and widen leftwards as
// their level falls. Members with nothing to give are swapped out of the
// most loaded range. The topic is balanced when the two levels differ by
// one or less.
type balancer struct {
	sizes  []int
	sorted []int32
	keys   []uint64 // scratch of init

	leastEnd   int // exclusive
	leastLevel int // partition count of the least loaded range before it receives
	nextLeast  int

	mostStart int // inclusive
	mostEnd   int // exclusive
	mostLevel int // partition count of the most loaded range before it gives
	nextMost  int
}

// init resets the balancer for members (non-empty) and returns the
// difference between the most and least loaded member's counts.
func (b *balancer) init(members []int32) int {
	// Sort by (size, member index) as one packed integer: several times
	// faster than a comparison function, and this sort is most of the
	// builder's time at 1,000 members.
	b.keys = b.keys[:0]
	for _, m := range members {
		b.keys = append(b.keys, uint64(b.sizes[m])<<32|uint64(uint32(m)))
	}
	slices.Sort(b.keys)
	b.sorted = b.sorted[:0]
	for _, k := range b.keys {
		b.sorted = append(b.sorted, int32(uint32(k)))
	}
	n := len(b.sorted)
	b.leastEnd, b.leastLevel, b.nextLeast = 0, b.sizes[b.sorted[0]]-1, 0
	b.mostStart, b.mostEnd, b.mostLevel, b.nextMost = n, n, b.sizes[b.sorted[n-1]]+1, n-1
	return b.sizes[b.sorted[n-1]] - b.sizes[b.sorted[0]]
}

// nextLeastLoaded returns the member to receive the next partition,
// assuming it will receive it.
func (b *balancer) nextLeastLoaded() int32 {
	if b.nextLeast >= b.leastEnd {
		b.leastLevel++
		for b.leastEnd < len(b.sorted) && b.sizes[b.sorted[b.leastEnd]] == b.leastLevel {
			b.leastEnd++
		}
		b.nextLeast = 0
	}
	m := b.sorted[b.nextLeast]
	b.nextLeast++
	return m
}

// nextMostLoaded returns the member to give the next partition, assuming it
// will give it, or -1 when no member is left to give.
func (b *balancer) nextMostLoaded() int32 {
	if b.nextMost < b.mostStart {
		if b.mostEnd <= b.mostStart && b.mostStart > 0 {
			// The range was emptied by excludeMostLoaded: restart its level
			// from the next member down so that it widens.
			b.mostLevel = b.sizes[b.sorted[b.mostStart-1]]
		} else {
			b.mostLevel--
		}
		for b.mostStart > 0 && b.sizes[b.sorted[b.mostStart-1]] == b.mostLevel {
			b.mostStart--
		}
		b.nextMost = b.mostEnd - 1
	}
	if b.nextMost < 0 {
		return -1
	}
	m := b.sorted[b.nextMost]
	b.nextMost--
	return m
}

// excludeMostLoaded drops the member nextMostLoaded just returned from the
// most loaded range. REQUIRES: nextMostLoaded returned a member.
func (b *balancer) excludeMostLoaded() {
	i := b.nextMost + 1
	m := b.sorted[i]
	b.sorted[i] = b.sorted[b.mostEnd-1]
	b.sorted[b.mostEnd-1] = m
	b.mostEnd--
}

func (b *balancer) isBalanced() bool { return b.mostLevel-b.leastLevel <= 1 }
