package cluster

import (
	"math/rand/v2"
	"slices"
)

// assignReplicas spreads partitions startPartition..startPartition+n-1
// over brokers the way Kafka's rack-unaware assignment does
// (AdminUtils.assignReplicasToBrokersRackUnaware): with brokers sorted, the
// first replica of partition p is brokers[(p+startIndex) % B], so leaders
// go round robin; the other replicas follow at a shift that grows by one
// every B partitions, so the followers of one broker's leaders spread too.
// startIndex and shift < 0 pick random values (Kafka's default for a new
// topic). REQUIRES: 1 <= rf <= len(brokers).
func assignReplicas(brokers []int32, n, rf int, startPartition, startIndex, shift int) [][]int32 {
	bs := slices.Clone(brokers)
	slices.Sort(bs)
	nb := len(bs)
	if startIndex < 0 {
		startIndex = rand.IntN(nb)
	}
	if shift < 0 {
		shift = rand.IntN(nb)
	}
	out := make([][]int32, 0, n)
	for p := startPartition; p < startPartition+n; p++ {
		if p > 0 && p%nb == 0 {
			shift++
		}
		first := (p + startIndex) % nb
		rs := []int32{bs[first]}
		for j := 0; j < rf-1; j++ {
			s := 1 + (shift+j)%(nb-1)
			rs = append(rs, bs[(first+s)%nb])
		}
		out = append(out, rs)
	}
	return out
}

// electionResult is the new leader and ISR of a partition, or ok=false when
// no replica may lead.
type electionResult struct {
	Leader int32
	ISR    []int32
	ok     bool
}

// electOffline chooses a leader for a partition without a live leader
// (Kafka's offlinePartitionLeaderElection): the first replica in
// assignment order that is live and in the ISR; failing that, and only
// with unclean election enabled, the first live replica, which then forms
// the ISR alone (committed records may be lost).
func electOffline(replicas, isr []int32, live func(int32) bool, unclean bool) electionResult {
	for _, r := range replicas {
		if live(r) && slices.Contains(isr, r) {
			return electionResult{Leader: r, ISR: filter(isr, live), ok: true}
		}
	}
	if unclean {
		for _, r := range replicas {
			if live(r) {
				return electionResult{Leader: r, ISR: []int32{r}, ok: true}
			}
		}
	}
	return electionResult{Leader: -1}
}

// electControlledShutdown moves leadership away from brokers shutting down
// (Kafka's controlledShutdownPartitionLeaderElection): the first live ISR
// member in assignment order that is not shutting down; the new ISR drops
// the brokers shutting down.
func electControlledShutdown(replicas, isr []int32, live, shuttingDown func(int32) bool) electionResult {
	for _, r := range replicas {
		if live(r) && !shuttingDown(r) && slices.Contains(isr, r) {
			return electionResult{Leader: r, ISR: filter(isr, func(id int32) bool { return !shuttingDown(id) }), ok: true}
		}
	}
	return electionResult{Leader: -1}
}

// removeFromISR is the state after replica id goes offline (Kafka's
// removeReplicasFromIsr): it leaves the ISR unless it is the last member,
// so that a partition whose last in-sync replica died can elect that
// replica cleanly when it returns; a leader that goes loses leadership.
func removeFromISR(s PartitionState, id int32) PartitionState {
	if s.Leader == id {
		s.Leader = -1
	}
	if len(s.ISR) > 1 {
		s.ISR = filter(s.ISR, func(r int32) bool { return r != id })
	}
	return s
}

func filter(xs []int32, keep func(int32) bool) []int32 {
	out := make([]int32, 0, len(xs))
	for _, x := range xs {
		if keep(x) {
			out = append(out, x)
		}
	}
	return out
}
