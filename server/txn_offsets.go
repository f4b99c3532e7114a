package server

// The offsets side of transactions (docs/transactions.md): the hook the
// WriteTxnMarkers handler calls for __consumer_offsets partitions, and the
// wiring of the group coordinator's transactional-offset hooks.

import (
	"github.com/sluice/sluice/group"
)

// completeTxnOffsets ends producerID's transaction for the groups stored in
// the given __consumer_offsets partitions once its COMMIT (commit) or ABORT
// marker is written there: their pending transactional offsets become
// committed, or are dropped (group.Coordinator.HandleTxnCompletion, which
// also drops a fenced zombie's pending offsets, at an epoch older than the
// marker's producerEpoch, and raises the single-node epoch). In
// single-node mode, with no __consumer_offsets topic, it is the whole of
// what a marker for those partitions does. Idempotent; an error is a
// metastore failure, after which a retried marker completes what is left.
func (s *Server) completeTxnOffsets(producerID int64, producerEpoch int16, offsetsPartitions []int32, commit bool) error {
	return s.groups.HandleTxnCompletion(producerID, producerEpoch, offsetsPartitions, commit)
}

// offsetsPartitionLoading reports whether partition i of
// __consumer_offsets, led here, is still loading (cluster mode): its
// transaction markers are answered COORDINATOR_LOAD_IN_PROGRESS, before
// they are appended, and retried by the transaction coordinator, so the
// marker is either in what the load replays or completes the offsets the
// load installed (offsets.Coordinator.PartitionState).
func (s *Server) offsetsPartitionLoading(i int32) bool {
	if zp, ok := s.md.(*zkPlane); ok && zp.offsets != nil {
		_, loading := zp.offsets.PartitionState(i)
		return loading
	}
	return false
}

// persistTxnHook is the group coordinator's PersistTxn hook: package
// offsets writes transactional offset commits to __consumer_offsets in
// cluster mode; nil in single-node mode (the metastore alone).
func (s *Server) persistTxnHook() group.PersistTxnFunc {
	if zp, ok := s.md.(*zkPlane); ok && zp.offsets != nil {
		return zp.offsets.PersistTxn
	}
	return nil
}
