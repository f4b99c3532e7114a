package server

// The durable state of share partitions (sharecoord, __share_group_state),
// in both modes:
//
//   - Every broker has a share coordinator (s.share.coord) serving the
//     __share_group_state partitions it leads. On a single node it leads
//     them all from the moment they are opened
//     (openLocalShareStatePartitions); in a cluster LeaderAndIsr and
//     StopReplica load and unload them (shareOnRole, called from
//     clustermode.go).
//   - The leader of a user partition reads and writes its share
//     partitions' state through the persister (share_persister.go): the
//     coordinator in process when it leads the key's partition, the
//     persister APIs (83-87) to the broker that does otherwise.
//   - __share_group_state is created the first time a group starts a
//     share partition, with share.coordinator.state.topic.num.partitions
//     partitions; replication.factor and min.isr from
//     share.coordinator.state.topic.* in a cluster (not created while
//     fewer brokers are live), one replica on a single node.
//   - A share partition's state is read when its leader first uses it
//     (shareOpen, with the partition's leader epoch, which fences the
//     writes of an earlier leader); none: a new one at
//     share.auto.offset.reset, initialized (InitializeShareGroupState)
//     before it is used, so a later leader starts where this one did. It
//     is written (WriteShareGroupState, acks=all) after each
//     acknowledgement before the answer, and after lock expiries and
//     releases; a write that fails undoes the acknowledgement, whose
//     partition answers the write's error. Acquisitions are not written:
//     after a failover their records are available again with the
//     delivery count last written.
//   - A broker that stops leading a user partition, or leads it again at
//     another leader epoch, forgets its share partitions there
//     (shareOnRole): the next leader reads them back, and a stale
//     in-memory copy is never used again. A role restated at the same
//     epoch keeps them.

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluice/sluice/cluster"
	"github.com/sluice/sluice/group/share"
	"github.com/sluice/sluice/replication"
	"github.com/sluice/sluice/sharecoord"
)

// newShareCoord returns this broker's share coordinator.
func newShareCoord(s *Server) *sharecoord.Coordinator {
	return sharecoord.New(sharecoord.Options{
		NumPartitions: func() int32 {
			if t := s.rm.Topic(sharecoord.Topic); t != nil {
				return int32(len(t.Parts))
			}
			return 0
		},
		Partition: func(i int32) *replication.Partition {
			if p := s.rm.Partition(sharecoord.Topic, i); p != nil {
				return p.Partition
			}
			return nil
		},
		Now:    s.now,
		Logger: s.log,
	})
}

// openLocalShareStatePartitions loads every partition of a local
// __share_group_state on a single node. In a cluster LeaderAndIsr says
// who leads, and this does nothing.
func (s *Server) openLocalShareStatePartitions() {
	if !s.singleNode() {
		return
	}
	if t := s.rm.Topic(sharecoord.Topic); t != nil {
		for i := range t.Parts {
			s.share.coord.OnRole(int32(i), true)
		}
	}
}

// shareOnRole is for the control plane (clustermode.go): this broker's
// role for partition of topic changed, or its replica stopped (leader
// false). A __share_group_state partition loads or unloads; the share
// partitions of a user partition are forgotten either way.
func (s *Server) shareOnRole(topic string, partition int32, leader bool) {
	if s.share == nil || s.share.coord == nil {
		return
	}
	if topic == sharecoord.Topic {
		s.share.coord.OnRole(partition, leader)
		return
	}
	t := s.rm.Topic(topic)
	if t == nil {
		return
	}
	epoch := int32(-2) // none kept: not the leader
	if leader {
		if p := s.rm.Partition(topic, partition); p != nil {
			epoch = p.LeaderEpoch()
		}
	}
	s.share.parts.Each("", func(k share.Key, _ *share.Held) {
		if k.Topic != t.ID || k.Partition != partition {
			return
		}
		s.share.dlqMu.Lock()
		at, ok := s.share.openedAt[k]
		s.share.dlqMu.Unlock()
		if ok && at == epoch {
			return // a restated role at the same leader epoch: still ours
		}
		s.share.parts.Remove(k)
		s.setDLQState(k, nil)
	})
}

// setOpenedAt records the leader epoch k was opened at.
func (s *Server) setOpenedAt(k share.Key, epoch int32) {
	s.share.dlqMu.Lock()
	defer s.share.dlqMu.Unlock()
	if s.share.openedAt == nil {
		s.share.openedAt = map[share.Key]int32{}
	}
	s.share.openedAt[k] = epoch
}

// ensureShareStateTopic creates __share_group_state when missing. It
// returns nil when the topic exists (its leaders may still be coming);
// cluster.ErrInvalidReplicationFactor while fewer brokers are live than
// share.coordinator.state.topic.replication.factor.
func (s *Server) ensureShareStateTopic(ctx context.Context) error {
	if len(s.md.partitions(sharecoord.Topic)) > 0 {
		return nil
	}
	spec := s.shareStateTopicSpec()
	if live := len(s.md.brokers()); !s.singleNode() && int(spec.rf) > live {
		return cluster.ErrInvalidReplicationFactor
	}
	_, err := s.admin.createTopic(ctx, spec)
	if errors.Is(err, errTopicExists) || errors.Is(err, cluster.ErrTopicExists) {
		err = nil
	}
	if err != nil {
		return err
	}
	s.openLocalShareStatePartitions()
	return nil
}

// shareLeaderEpoch is the leader epoch of k's user partition here, -1
// when this broker has no replica of it.
func (s *Server) shareLeaderEpoch(k share.Key) int32 {
	name := s.lookup.topicNameByID(k.Topic)
	if name == "" {
		return -1
	}
	if p := s.rm.Partition(name, k.Partition); p != nil {
		return p.LeaderEpoch()
	}
	return -1
}

// shareOpen returns k's share partition as its persisted state has it;
// without state, a new one starting at fresh(), initialized first. An
// error (the share coordinator not reachable in time, a newer leader)
// opens nothing: the fetch answers it and is tried again.
func (s *Server) shareOpen(ctx context.Context, k share.Key, maxInFlight int, fresh func() int64) (*share.Partition, error) {
	epoch := s.shareLeaderEpoch(k)
	st, ok, err := s.share.persister.read(ctx, k, epoch)
	if err != nil {
		s.log.Warn("server: share partition state not read", "group", k.Group, "partition", k.Partition, "err", err)
		return nil, shareFenced(err)
	}
	s.setDLQState(k, st.DLQ)
	s.setOpenedAt(k, epoch)
	if ok && st.StartOffset >= 0 {
		// Dead letters written into the state and maybe not appended yet
		// (a failover between the two) are appended now, or found there.
		s.flushDeadLetters(ctx, k)
		return s.keepIdleStats(k, share.Restore(st.Snapshot, maxInFlight)), nil
	}
	start := fresh()
	if err := s.share.persister.initialize(ctx, k, max(st.StateEpoch, 0), start); err != nil {
		s.log.Warn("server: share partition state not initialized", "group", k.Group, "partition", k.Partition, "err", err)
		return nil, shareFenced(err)
	}
	p := share.New(start)
	if st.StateEpoch > 0 {
		p = share.Restore(share.Snapshot{StateEpoch: st.StateEpoch, StartOffset: start}, maxInFlight)
	}
	return s.keepIdleStats(k, p), nil
}

// keepIdleStats gives p the counters k had when its group went idle here
// (shareGroupIdle), so that they never go back.
func (s *Server) keepIdleStats(k share.Key, p *share.Partition) *share.Partition {
	if st, ok := s.takeIdleStats(k); ok {
		p.KeepStats(st)
	}
	return p
}

// shareFenced turns a fenced epoch into NOT_LEADER_OR_FOLLOWER: a newer
// leader of the partition owns its share partitions now.
func shareFenced(err error) error {
	if errors.Is(err, sharecoord.ErrFencedLeaderEpoch) || errors.Is(err, sharecoord.ErrFencedStateEpoch) {
		return fmt.Errorf("%w: %v", replication.ErrNotLeader, err)
	}
	return err
}

// sharePersist writes k's state, with the dead letters archived since the
// last write as a new pending chunk (share_dlq.go), then appends the
// pending dead letters. REQUIRES: the share partition's lock held (writes
// of one key stay in order).
func (s *Server) sharePersist(ctx context.Context, k share.Key, p *share.Partition) error {
	d, dead, err := s.takeDeadLetters(k, p)
	if err != nil {
		return err
	}
	snap := p.Snapshot()
	err = s.share.persister.write(ctx, k, sharecoord.WriteReq{
		StateEpoch: snap.StateEpoch, LeaderEpoch: s.shareLeaderEpoch(k), StartOffset: snap.StartOffset, Batches: snap.Batches, DLQ: d,
	})
	if errors.Is(err, sharecoord.ErrFencedLeaderEpoch) || errors.Is(err, sharecoord.ErrFencedStateEpoch) {
		// A newer leader or a reset owns the state: this copy is stale.
		s.share.parts.Remove(k)
	}
	if err != nil {
		p.RequeueDeadLetters(dead) // the new chunk was not written
		s.log.Warn("server: share partition state not written", "group", k.Group, "partition", k.Partition, "err", err)
		return shareFenced(err)
	}
	s.setDLQState(k, d)
	s.flushDeadLetters(ctx, k)
	return nil
}

// shareDeleteGroup is for the membership side (DeleteGroups of an empty
// share group, group.Options.ShareDeleteState), as Kafka's
// GroupCoordinatorService.deleteGroups: the group's share state is deleted
// (DeleteShareGroupState) on every share coordinator that has some
// (groupShareKeys), and this broker forgets its copies. The first error
// stops it; what was deleted stays so.
func (s *Server) shareDeleteGroup(ctx context.Context, group string) error {
	return s.shareDeleteKeys(ctx, group, [16]byte{})
}

// shareDeleteGroupState is group.Options.ShareDeleteState.
func (s *Server) shareDeleteGroupState(group string) error {
	if s.share == nil || s.share.persister == nil {
		return nil
	}
	return s.shareDeleteGroup(context.Background(), group)
}

// shareDeleteKeys deletes group's share state of topic (zero: all
// topics): every key a share coordinator has state for, and this broker's
// in-memory copies. A partition leader elsewhere forgets its copy when
// the group's last share session there ends (shareGroupIdle), which it
// has, the group being empty.
func (s *Server) shareDeleteKeys(ctx context.Context, group string, topic [16]byte) error {
	keys := map[share.Key]bool{}
	s.share.parts.Each(group, func(k share.Key, _ *share.Held) {
		if topic == ([16]byte{}) || k.Topic == topic {
			keys[k] = true
		}
	})
	found, err := s.groupShareKeys(ctx, group, topic)
	if err != nil {
		return err
	}
	for k := range found {
		keys[k] = true
	}
	for k := range keys {
		if err := s.share.persister.delete(ctx, k); err != nil {
			return err
		}
		s.share.parts.Remove(k)
		s.setDLQState(k, nil)
		s.takeIdleStats(k) // a deleted share partition's series go
	}
	return nil
}

// shareGroupIdle is called when a share session of group ends here: when
// it was the group's last one on this broker, the group's share
// partitions here are forgotten (their state is in __share_group_state,
// written after every change, and nobody holds records of them any
// more), so the next fetch reads the state back. This is how an
// AlterShareGroupOffsets, DeleteShareGroupOffsets or DeleteGroups, which
// need the group empty and run on its coordinator, reaches a partition
// leader that is another broker.
func (s *Server) shareGroupIdle(group string) {
	if s.share == nil {
		return
	}
	s.share.mu.Lock()
	defer s.share.mu.Unlock()
	for k := range s.share.sessions {
		if k.group == group {
			return
		}
	}
	// Under s.share.mu: no session of the group opens meanwhile.
	type held struct {
		k  share.Key
		st share.Stats
	}
	var gone []held
	s.share.parts.Each(group, func(k share.Key, h *share.Held) {
		h.Lock()
		gone = append(gone, held{k, h.P.Stats()})
		h.Unlock()
	})
	for _, g := range gone {
		s.share.parts.Remove(g.k)
		s.setDLQState(g.k, nil)
		s.share.dlqMu.Lock()
		if s.share.idleStats == nil {
			s.share.idleStats = map[share.Key]share.Stats{}
		}
		s.share.idleStats[g.k] = g.st
		s.share.dlqMu.Unlock()
	}
}

// takeIdleStats returns (and forgets) the counters k had when its group
// went idle here.
func (s *Server) takeIdleStats(k share.Key) (share.Stats, bool) {
	s.share.dlqMu.Lock()
	defer s.share.dlqMu.Unlock()
	st, ok := s.share.idleStats[k]
	delete(s.share.idleStats, k)
	return st, ok
}

// shareStateTopicSpec is the shape of __share_group_state
// (share.coordinator.state.topic.*; one replica on a single node): what
// ensureShareStateTopic creates and the only shape CreateTopics accepts
// for it.
func (s *Server) shareStateTopicSpec() topicSpec {
	c := s.cfg.GroupShare
	parts, rf, minISR := c.StateTopicPartitions, c.StateTopicReplication, c.StateTopicMinISR
	if parts <= 0 {
		parts = sharecoord.DefaultPartitions
	}
	if s.singleNode() || rf <= 0 {
		rf, minISR = 1, 1
	}
	return topicSpec{
		name:       sharecoord.Topic,
		partitions: parts,
		rf:         rf,
		configs:    sharecoord.TopicConfigs(max(minISR, 1)),
	}
}

// shareResetStart is AlterShareGroupOffsets: k's share-partition start
// offset becomes start and its in-flight state is dropped (every record
// from start on is Available and undelivered), under a new state epoch,
// written (InitializeShareGroupState) before it is answered. REQUIRES:
// the group empty (no member can hold records of k).
func (s *Server) shareResetStart(ctx context.Context, k share.Key, start int64) error {
	epoch := int32(0)
	h := s.share.parts.Lookup(k)
	if h != nil {
		h.Lock()
		defer h.Unlock()
		epoch = h.P.StateEpoch() + 1
	} else {
		old, ok, err := s.share.persister.read(ctx, k, -1)
		if err != nil {
			return err
		}
		if ok {
			epoch = old.StateEpoch + 1
		}
	}
	snap := share.Snapshot{StateEpoch: epoch, StartOffset: start}
	if err := s.share.persister.initialize(ctx, k, epoch, start); err != nil {
		return err
	}
	if h != nil {
		st := h.P.Stats()
		*h.P = *share.Restore(snap, 0)
		h.P.KeepStats(st)
	}
	return nil
}

// shareDeleteTopic is DeleteShareGroupOffsets: it deletes group's share
// state of topic on every share coordinator (shareDeleteKeys), so the
// group's next fetch starts those partitions afresh at
// share.auto.offset.reset. The first error stops it; what was deleted
// stays so.
func (s *Server) shareDeleteTopic(ctx context.Context, group string, topic [16]byte) error {
	return s.shareDeleteKeys(ctx, group, topic)
}
