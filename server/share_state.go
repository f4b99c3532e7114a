package server

// The durable state of share partitions (sharecoord, __share_group_state),
// single node only for now:
//
//   - The share coordinator lives in s.share.coord, nil in cluster mode (no
//     persister APIs between brokers yet: share partitions then keep their
//     state in memory only).
//   - __share_group_state is created, with share.coordinator's defaults
//     (50 partitions, one replica on a single node), the first time a group
//     starts a share partition; on a single node this broker leads every
//     partition of it from the moment it is opened, so
//     openLocalShareStatePartitions loads them all then and at start.
//   - A share partition's state is read when the group first uses it after
//     a start (Restore), and written (a ShareSnapshot, acks=all) after each
//     successful acknowledgement before the answer; a write that fails
//     undoes the acknowledgement, whose partition answers the write's
//     error. Acquisitions, lock expiries and releases are not written:
//     after a restart their records are available again with the delivery
//     count of the last acknowledgement written.

import (
	"context"
	"errors"

	"github.com/sluice/sluice/cluster"
	"github.com/sluice/sluice/group/share"
	"github.com/sluice/sluice/replication"
	"github.com/sluice/sluice/sharecoord"
)

// newShareCoord returns the share coordinator of a single node, nil in a
// cluster.
func newShareCoord(s *Server) *sharecoord.Coordinator {
	if !s.singleNode() {
		return nil
	}
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
// __share_group_state on a single node.
func (s *Server) openLocalShareStatePartitions() {
	if s.share.coord == nil {
		return
	}
	if t := s.rm.Topic(sharecoord.Topic); t != nil {
		for i := range t.Parts {
			s.share.coord.OnRole(int32(i), true)
		}
	}
}

// ensureShareStateTopic creates __share_group_state when missing.
func (s *Server) ensureShareStateTopic(ctx context.Context) error {
	if s.share.coord == nil || len(s.md.partitions(sharecoord.Topic)) > 0 {
		return nil
	}
	_, err := s.admin.createTopic(ctx, shareStateTopicSpec())
	if errors.Is(err, errTopicExists) || errors.Is(err, cluster.ErrTopicExists) {
		err = nil
	}
	if err != nil {
		return err
	}
	s.openLocalShareStatePartitions()
	return nil
}

// shareRestore returns the persisted state of k, nil when none (or no
// coordinator).
func (s *Server) shareRestore(ctx context.Context, k share.Key, maxInFlight int) (*share.Partition, error) {
	if s.share.coord == nil {
		return nil, nil
	}
	if err := s.ensureShareStateTopic(ctx); err != nil {
		return nil, err
	}
	snap, ok, err := s.share.coord.Read(ctx, k)
	if err != nil || !ok {
		return nil, err
	}
	return share.Restore(snap, maxInFlight), nil
}

// sharePersist writes k's state. REQUIRES: the share partition's lock held
// (writes of one key stay in order).
func (s *Server) sharePersist(ctx context.Context, k share.Key, p *share.Partition) error {
	// Dead letters first (share_dlq.go): the state archiving them is
	// written only once they are.
	if err := s.writeDeadLetters(ctx, k, p); err != nil {
		return err
	}
	if s.share.coord == nil {
		return nil
	}
	if err := s.ensureShareStateTopic(ctx); err != nil {
		return err
	}
	return s.share.coord.Write(ctx, k, p.Snapshot(), -1)
}

// shareDeleteGroup is for the membership side (DeleteGroups of an empty
// share group): it forgets the group's share partitions and deletes their
// persisted state. The first error stops it; what was deleted stays so.
func (s *Server) shareDeleteGroup(ctx context.Context, group string) error {
	keys := map[share.Key]bool{}
	s.share.parts.Each(group, func(k share.Key, _ *share.Held) { keys[k] = true })
	if s.share.coord != nil {
		for _, k := range s.share.coord.Keys(group) {
			keys[k] = true
		}
	}
	for k := range keys {
		if s.share.coord != nil {
			if err := s.share.coord.Delete(ctx, k); err != nil {
				return err
			}
		}
		s.share.parts.Remove(k)
	}
	return nil
}

// shareStartOffsets is for the membership side (DescribeShareGroupOffsets,
// lag): the start offset of each of group's share partitions this broker
// holds, in memory or persisted.
func (s *Server) shareStartOffsets(ctx context.Context, group string) (map[share.Key]int64, error) {
	out := map[share.Key]int64{}
	if s.share.coord != nil {
		for _, k := range s.share.coord.Keys(group) {
			snap, ok, err := s.share.coord.Read(ctx, k)
			if err != nil {
				return nil, err
			}
			if ok {
				out[k] = snap.StartOffset
			}
		}
	}
	s.share.parts.Each(group, func(k share.Key, h *share.Held) {
		h.Lock()
		out[k] = h.P.Start()
		h.Unlock()
	})
	return out, nil
}

// shareStateTopicSpec is the shape of __share_group_state on a single node
// (share.coordinator.state.topic.* defaults, one replica): what
// ensureShareStateTopic creates and the only shape CreateTopics accepts for
// it.
func shareStateTopicSpec() topicSpec {
	return topicSpec{
		name:       sharecoord.Topic,
		partitions: sharecoord.DefaultPartitions,
		rf:         1,
		configs:    sharecoord.TopicConfigs(1),
	}
}

// shareResetStart is AlterShareGroupOffsets: k's share-partition start
// offset becomes start and its in-flight state is dropped (every record
// from start on is Available and undelivered), under a new state epoch,
// written before it is answered. REQUIRES: the group empty (no member can
// hold records of k).
func (s *Server) shareResetStart(ctx context.Context, k share.Key, start int64) error {
	if err := s.ensureShareStateTopic(ctx); err != nil {
		return err
	}
	epoch := int32(0)
	h := s.share.parts.Lookup(k)
	if h != nil {
		h.Lock()
		defer h.Unlock()
		epoch = h.P.StateEpoch() + 1
	} else if s.share.coord != nil {
		old, ok, err := s.share.coord.Read(ctx, k)
		if err != nil {
			return err
		}
		if ok {
			epoch = old.StateEpoch + 1
		}
	}
	snap := share.Snapshot{StateEpoch: epoch, StartOffset: start}
	if s.share.coord != nil {
		if err := s.share.coord.Write(ctx, k, snap, -1); err != nil {
			return err
		}
	}
	switch {
	case h != nil:
		st := h.P.Stats()
		*h.P = *share.Restore(snap, 0)
		h.P.KeepStats(st)
	case s.share.coord == nil:
		// No durable state: the reset lives in memory only.
		s.share.parts.Get(k, func() *share.Partition { return share.Restore(snap, 0) })
	}
	return nil
}

// shareDeleteTopic is DeleteShareGroupOffsets: it forgets group's share
// partitions of topic and deletes their persisted state, so the group's
// next fetch starts them afresh at share.auto.offset.reset. The first
// error stops it; what was deleted stays so.
func (s *Server) shareDeleteTopic(ctx context.Context, group string, topic [16]byte) error {
	keys := map[share.Key]bool{}
	s.share.parts.Each(group, func(k share.Key, _ *share.Held) {
		if k.Topic == topic {
			keys[k] = true
		}
	})
	if s.share.coord != nil {
		for _, k := range s.share.coord.Keys(group) {
			if k.Topic == topic {
				keys[k] = true
			}
		}
	}
	for k := range keys {
		if s.share.coord != nil {
			if err := s.share.coord.Delete(ctx, k); err != nil {
				return err
			}
		}
		s.share.parts.Remove(k)
	}
	return nil
}
