package group

// Transactional offsets (KIP-98, KIP-447), as Kafka's GroupMetadata and
// GroupMetadataManager keep them:
//
//   - TxnOffsetCommit stores the offsets as pending, per group and producer
//     id (g.pendingTxn): first in __consumer_offsets as a transactional
//     batch of the producer (Options.PersistTxn), then in the metastore.
//   - HandleTxnCompletion, called when the transaction's marker was written
//     to the group's offsets partition, turns the producer's pending offsets
//     into committed ones (commit) or drops them (abort).
//   - A pending offset applies at commit only if no offset of its partition
//     written after it was applied in the meantime: Kafka's rule that the
//     current offset is replaced only when it is older in log order
//     (CommitRecordMetadataAndOffset.olderThan). A plain OffsetCommit, or
//     another transaction's committed offset written later, marks the older
//     pending offsets of that partition Superseded; a commit then leaves
//     the committed offset alone.
//   - OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT for a
//     partition that has a pending offset of any producer.
//   - Producer epochs (fencing). The __consumer_offsets log refuses a
//     TxnOffsetCommit batch whose epoch is older than the producer's
//     there (INVALID_PRODUCER_EPOCH, passed through at every version as
//     Kafka's GroupMetadataManager does: the log's
//     InvalidProducerEpochException, which clients treat as fenced), and
//     a marker raises the producer's epoch in the log. A marker drops,
//     instead of committing, the producer's pending offsets written at an
//     epoch older than its own (a zombie's, left by an earlier
//     transaction), and leaves alone those at a newer epoch (the marker is
//     stale for them). This relies on transaction version 1, where a
//     transaction's markers carry the epoch its writes used.
//   - Memory: pending offsets per producer are bounded only by what
//     TxnOffsetCommit may add for transactional ids the principal is
//     authorized for, as in Kafka (no extra limit).
//   - OffsetDelete removes the pending offsets of the partitions it deletes;
//     DeleteGroups removes them with the group; expiry never removes them,
//     and an Empty group with pending offsets is not expired (Kafka's
//     GroupMetadata.hasOffsets counts them).

import (
	"fmt"

	"github.com/sluice/sluice/metastore"
)

// indexTxn records that producerID may have pending offsets in group,
// before they become pending, so a marker that races the commit still
// finds the group.
func (c *Coordinator) indexTxn(producerID int64, group string) {
	c.txnMu.Lock()
	defer c.txnMu.Unlock()
	c.indexTxnLocked(producerID, group)
}

// addPendingLocked records pending offsets in g.
// REQUIRES: g.mu held.
func (g *group) addPendingLocked(ps []metastore.PendingTxnOffset) {
	for _, p := range ps {
		m := g.pendingTxn[p.ProducerID]
		if m == nil {
			m = make(map[metastore.TopicPartition]metastore.PendingTxnOffset)
			g.pendingTxn[p.ProducerID] = m
		}
		m[p.TopicPartition] = p
	}
}

// supersededLocked returns the pending offsets of tp, of every producer but
// except, written before position before (any position when before < 0)
// and not yet superseded, marked Superseded: an offset of tp newer than
// them is being applied.
// REQUIRES: g.mu held.
func (g *group) supersededLocked(tp metastore.TopicPartition, except int64, before int64) []metastore.PendingTxnOffset {
	var out []metastore.PendingTxnOffset
	for pid, m := range g.pendingTxn {
		p, ok := m[tp]
		if !ok || pid == except || p.Superseded || (before >= 0 && p.Position >= before) {
			continue
		}
		p.Superseded = true
		out = append(out, p)
	}
	return out
}

// dropPendingLocked removes the pending offsets of tps, of every producer,
// and returns their keys.
// REQUIRES: g.mu held.
func (g *group) dropPendingLocked(tps []metastore.TopicPartition) []metastore.PendingKey {
	var keys []metastore.PendingKey
	for pid, m := range g.pendingTxn {
		for _, tp := range tps {
			if _, ok := m[tp]; ok {
				delete(m, tp)
				keys = append(keys, metastore.PendingKey{ProducerID: pid, TopicPartition: tp})
			}
		}
		if len(m) == 0 {
			delete(g.pendingTxn, pid)
		}
	}
	return keys
}

// indexTxnLocked records that producerID has pending offsets in group
// (Kafka's openGroupsForProducer), so HandleTxnCompletion finds the group
// without scanning every group.
// REQUIRES: c.txnMu held.
func (c *Coordinator) indexTxnLocked(producerID int64, group string) {
	gs := c.txnGroups[producerID]
	if gs == nil {
		gs = make(map[string]struct{})
		c.txnGroups[producerID] = gs
	}
	gs[group] = struct{}{}
}

// HandleTxnCompletion ends producerID's transaction, whose marker carries
// producerEpoch, in the groups whose offsets partition
// (Options.PartitionFor) is in offsetsPartitions: with commit its pending
// offsets at producerEpoch become committed offsets, unless superseded (see
// the top of this file); otherwise they are dropped. Pending offsets at an
// older epoch (a fenced zombie's) are dropped even on commit; those at a
// newer epoch are left pending. It is called once
// the COMMIT or ABORT marker is written to those partitions (Kafka's
// GroupMetadataManager.handleTxnCompletion), and is idempotent: a producer
// without pending offsets in a group is nothing to do. Groups this
// coordinator does not hold (moved away, deleted) are skipped: the new
// coordinator replays the marker.
//
// Errors: a metastore failure, after the other groups were completed; the
// group whose write failed keeps its pending offsets, so a retry completes
// it. Safe for concurrent use.
func (c *Coordinator) HandleTxnCompletion(producerID int64, producerEpoch int16, offsetsPartitions []int32, commit bool) error {
	parts := make(map[int32]bool, len(offsetsPartitions))
	for _, p := range offsetsPartitions {
		parts[p] = true
	}
	c.txnMu.Lock()
	var names []string
	for name := range c.txnGroups[producerID] {
		if c.opts.PartitionFor == nil || parts[c.opts.PartitionFor(name)] {
			names = append(names, name)
		}
	}
	c.txnMu.Unlock()
	var firstErr error
	for _, name := range names {
		left, err := c.completeTxn(name, producerID, producerEpoch, commit)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		if left {
			continue
		}
		c.txnMu.Lock()
		if gs := c.txnGroups[producerID]; gs != nil {
			delete(gs, name)
			if len(gs) == 0 {
				delete(c.txnGroups, producerID)
			}
		}
		c.txnMu.Unlock()
	}
	return firstErr
}

// completeTxn ends producerID's transaction at epoch in the group called
// name. It reports whether pending offsets of the producer are left (at a
// newer epoch than the marker's).
func (c *Coordinator) completeTxn(name string, producerID int64, epoch int16, commit bool) (bool, error) {
	g := c.getGroup(name, false)
	if g == nil {
		return false, nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	pend := g.pendingTxn[producerID]
	if g.state == stateDead || len(pend) == 0 {
		return false, nil
	}
	var u metastore.OffsetsUpdate
	applied := map[metastore.TopicPartition]metastore.CommittedOffset{}
	var kept []metastore.TopicPartition
	for tp, p := range pend {
		if p.ProducerEpoch > epoch {
			kept = append(kept, tp)
			continue
		}
		u.DeletePending = append(u.DeletePending, metastore.PendingKey{ProducerID: producerID, TopicPartition: tp})
		if !commit || p.Superseded || p.ProducerEpoch < epoch {
			continue
		}
		applied[tp] = p.Offset
		u.PutPending = append(u.PutPending, g.supersededLocked(tp, producerID, p.Position)...)
	}
	u.Commit = applied
	if len(u.DeletePending) == 0 {
		return true, nil
	}
	if err := c.store.UpdateOffsets(name, u); err != nil {
		return false, fmt.Errorf("group: complete transaction of producer %d in group %q: %w", producerID, name, err)
	}
	for _, k := range u.DeletePending {
		delete(pend, k.TopicPartition)
	}
	if len(pend) == 0 {
		delete(g.pendingTxn, producerID)
	}
	g.addPendingLocked(u.PutPending)
	for tp, o := range applied {
		g.offsets[tp] = o
	}
	return len(kept) > 0, nil
}

// loadPending reads the pending transactional offsets of every group match
// accepts from the metastore into groups (creating Empty groups for those
// that have nothing else), indexes them by producer, and moves the position
// counter past every loaded position.
func (c *Coordinator) loadPending(groups map[string]*group, match func(string) bool) error {
	names, err := c.store.ListPendingTxnGroups()
	if err != nil {
		return fmt.Errorf("group: load pending transactional offsets: %w", err)
	}
	for _, name := range names {
		if !match(name) {
			continue
		}
		ps, err := c.store.FetchPendingTxnOffsets(name)
		if err != nil {
			return fmt.Errorf("group: load pending transactional offsets of %q: %w", name, err)
		}
		g := groups[name]
		if g == nil {
			g = newGroup(name, c.clock.Now())
			groups[name] = g
		}
		g.addPendingLocked(ps) // g is not shared yet
		for _, p := range ps {
			c.indexTxn(p.ProducerID, name)
		}
	}
	return nil
}
