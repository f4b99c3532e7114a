package sharegroup

import (
	"maps"
	"slices"
)

// SimpleAssignorName is the name of Kafka's only share group assignor
// (group.share.assignors), shown by ShareGroupDescribe.
const SimpleAssignorName = "simple"

// Subscriber is one member as the assignor sees it: its id and the topics
// it subscribes to that exist.
type Subscriber struct {
	ID     string
	Topics []TopicID
}

// Simple computes a target assignment as Kafka's SimpleAssignor: every
// partition of a subscribed topic goes to ceil(S/P) of the S members
// subscribed to that topic of P partitions, so each partition has a member
// and, with more members than partitions, several share it; each member's
// load stays within one partition of the others' in a homogeneous group.
// It is sticky: a member keeps the partitions of current it may still hold
// (still subscribed, the partition not over-shared, the member not over
// its share) before the rest are handed to the least-loaded members.
// topics gives each topic's partition count; members are taken in id
// order, so the result is deterministic. Every member is in the result,
// with an empty assignment when it gets nothing.
func Simple(members []Subscriber, topics map[TopicID]int32, current map[string]Assignment) map[string]Assignment {
	members = slices.Clone(members)
	slices.SortFunc(members, func(a, b Subscriber) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	subs := map[TopicID][]int{} // topic -> indices of its subscribers
	for i, m := range members {
		seen := map[TopicID]bool{}
		for _, t := range m.Topics {
			if _, ok := topics[t]; ok && !seen[t] {
				seen[t] = true
				subs[t] = append(subs[t], i)
			}
		}
	}
	sharing := map[TopicID]int{}
	for t, ms := range subs {
		p := int(topics[t])
		if p <= 0 {
			continue
		}
		sharing[t] = (len(ms) + p - 1) / p
	}
	// capacity[i] is member i's fair share of the slots of its topics,
	// rounded up: the most it keeps from current.
	capacity := make([]int, len(members))
	for t, ms := range subs {
		slots := sharing[t] * int(topics[t])
		for _, i := range ms {
			capacity[i] += (slots + len(ms) - 1) / len(ms)
		}
	}
	out := make([]Assignment, len(members))
	load := make([]int, len(members))
	holders := map[TopicID][][]int{} // topic -> partition -> member indices
	for t := range sharing {
		holders[t] = make([][]int, topics[t])
	}
	subscribed := func(i int, t TopicID) bool { return slices.Contains(subs[t], i) }
	give := func(i int, t TopicID, p int32) {
		if out[i] == nil {
			out[i] = Assignment{}
		}
		out[i][t] = append(out[i][t], p)
		load[i]++
		holders[t][p] = append(holders[t][p], i)
	}
	// Sticky pass.
	for i, m := range members {
		cur := current[m.ID]
		for _, t := range slices.SortedFunc(maps.Keys(cur), compareID) {
			if _, ok := sharing[t]; !ok || !subscribed(i, t) {
				continue
			}
			for _, p := range cur[t] {
				if p < 0 || p >= topics[t] || len(holders[t][p]) >= sharing[t] || load[i] >= capacity[i] ||
					slices.Contains(holders[t][p], i) {
					continue
				}
				give(i, t, p)
			}
		}
	}
	// Fill pass: each partition up to its sharing, least-loaded first.
	for _, t := range slices.SortedFunc(maps.Keys(sharing), compareID) {
		for p := int32(0); p < topics[t]; p++ {
			for len(holders[t][p]) < sharing[t] {
				best := -1
				for _, i := range subs[t] {
					if slices.Contains(holders[t][p], i) {
						continue
					}
					if best < 0 || load[i] < load[best] {
						best = i
					}
				}
				if best < 0 {
					break
				}
				give(best, t, p)
			}
		}
	}
	res := make(map[string]Assignment, len(members))
	for i, m := range members {
		a := out[i]
		if a == nil {
			a = Assignment{}
		}
		for t := range a {
			slices.Sort(a[t])
		}
		res[m.ID] = a
	}
	return res
}
