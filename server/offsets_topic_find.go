package server

// The wiring of the __consumer_offsets coordinator (package offsets), which
// persists the group coordinator's state in both modes, and FindCoordinator
// for groups.
//
//   - The coordinator lives on the Server (s.offsets) and is the group
//     coordinator's Owns/Persist/PersistGroup/PersistTxn hooks: a group
//     belongs to this broker when it leads the group's partition, and a
//     commit is answered once appended with acks=all; the metastore is the
//     view each partition's load rebuilds from the log.
//   - In cluster mode FindCoordinator names the leader of the group's
//     partition, creating the topic through the controller on the first
//     request; LeaderAndIsr and StopReplica load and unload partitions
//     (clustermode.go).
//   - On a single node this broker leads every partition: the topic is
//     created locally (offsets.topic.num.partitions partitions, Kafka's
//     configs, one replica) on the first FindCoordinator for a group (or
//     group request), or at start when the metastore holds groups of the
//     release that kept them there alone (offsets.Coordinator.Migrate
//     writes those to the log first); then every partition is loaded.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/cluster"
	"github.com/sluice/sluice/coordlog"
	"github.com/sluice/sluice/offsets"
	"github.com/sluice/sluice/replication"
)

// newOffsetsCoord returns the __consumer_offsets coordinator of s, fed from
// the topic registry. It runs before the group coordinator exists: Unload
// and Reload resolve s.groups when first called, from LeaderAndIsr.
func newOffsetsCoord(s *Server) *offsets.Coordinator {
	return offsets.New(offsets.Options{
		NumPartitions: func() int32 {
			if t := s.rm.Topic(offsets.Topic); t != nil {
				return int32(len(t.Parts))
			}
			return 0
		},
		Partition: func(i int32) *replication.Partition {
			if p := s.rm.Partition(offsets.Topic, i); p != nil {
				return p.Partition
			}
			return nil
		},
		Unload: func(match func(string) bool) { s.groups.Unload(match) },
		Reload: func(match func(string) bool) error { return s.groups.Reload(match) },
		ReloadConsumer: func(match func(string) bool, groups map[string][]offsets.ConsumerRecord) error {
			return s.groups.ReloadConsumer(match, groups)
		},
		ReloadShare: func(match func(string) bool, groups map[string][]offsets.ShareRecord) error {
			return s.groups.ReloadShare(match, groups)
		},
		Meta:   s.meta,
		Now:    s.now,
		Logger: s.log,
	})
}

// offsetsTopicSpec is the shape of __consumer_offsets: Kafka's settings; on
// a single node one replica.
func (s *Server) offsetsTopicSpec() topicSpec {
	c := s.cfg
	rf := c.OffsetsTopicReplication
	if s.singleNode() {
		rf = 1
	}
	return topicSpec{
		name:       offsets.Topic,
		partitions: c.OffsetsTopicPartitions,
		rf:         rf,
		configs:    offsets.TopicConfigs(c.OffsetsTopicSegmentBytes),
	}
}

// openLocalOffsets runs at start on a single node: it writes the groups a
// metastore-only data dir holds to __consumer_offsets (once: Migrate
// records it), then loads every partition of a local __consumer_offsets.
// In cluster mode LeaderAndIsr says who leads, and this does nothing.
func (s *Server) openLocalOffsets() error {
	if !s.singleNode() {
		return nil
	}
	// No deadline: a large metastore takes as long as it takes (each
	// append is bounded on its own), and a start that gave up would only
	// run the migration again from the beginning.
	ctx := context.Background()
	create := func(ctx context.Context) error {
		if s.rm.Topic(offsets.Topic) != nil {
			return nil
		}
		_, err := s.admin.createTopic(ctx, s.offsetsTopicSpec())
		return err
	}
	if _, err := s.offsets.Migrate(ctx, create); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	s.openLocalOffsetsPartitions()
	return nil
}

// openLocalOffsetsPartitions starts the load of every partition of a local
// __consumer_offsets on a single node (a partition already loaded or
// loading is left alone).
func (s *Server) openLocalOffsetsPartitions() {
	if t := s.rm.Topic(offsets.Topic); t != nil {
		for i := range t.Parts {
			s.offsets.OnRole(int32(i), true)
		}
	}
}

// localOffsetsLoadWait bounds how long a single node's first group request
// waits for the partitions of the __consumer_offsets it just created to
// load (they are empty: the wait is short).
const localOffsetsLoadWait = 10 * time.Second

// localOffsetsReady makes sure, on a single node, that __consumer_offsets
// exists and its partitions are led here, before a group request: the
// first one creates the topic and waits for its empty partitions to load,
// so it is answered from a loaded coordinator, as before the topic existed.
// A failure is logged; the group request then gets NOT_COORDINATOR or
// COORDINATOR_LOAD_IN_PROGRESS from the coordinator, and the client
// retries. Nothing happens in cluster mode.
func (s *Server) localOffsetsReady(ctx context.Context) {
	if !s.singleNode() {
		return
	}
	if t := s.rm.Topic(offsets.Topic); t != nil {
		if owned, _ := s.offsets.PartitionState(0); owned {
			return
		}
	}
	_, err := s.admin.createTopic(ctx, s.offsetsTopicSpec())
	if err != nil && !errors.Is(err, errTopicExists) {
		s.log.Warn("server: create "+offsets.Topic, "err", err)
		return
	}
	// Created here, by a concurrent request, or by a client (CreateTopics).
	s.openLocalOffsetsPartitions()
	ctx, cancel := context.WithTimeout(ctx, localOffsetsLoadWait)
	defer cancel()
	if t := s.rm.Topic(offsets.Topic); t != nil {
		for i := range t.Parts {
			if err := s.offsets.WaitLoaded(ctx, int32(i)); err != nil {
				s.log.Info("server: "+offsets.Topic+" not loaded yet", "partition", i, "err", err)
				return
			}
		}
	}
}

// findCoordinator answers FindCoordinator (versions 0-4, the range the
// group coordinator advertises) for group keys with the leader of the
// group's __consumer_offsets partition, creating the topic when the cluster
// has none yet. Transaction keys never reach it (10_find_coordinator.go
// answers them); unknown key types get INVALID_REQUEST.
func (zp *zkPlane) findCoordinator(ctx context.Context, req *kmsg.FindCoordinatorRequest) (*kmsg.FindCoordinatorResponse, error) {
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	keyType := req.CoordinatorType
	if req.Version == 0 {
		keyType = 0
	}
	keys := req.CoordinatorKeys
	if req.Version < 4 {
		keys = []string{req.CoordinatorKey}
	}
	for _, key := range keys {
		node, host, port := int32(-1), "", int32(-1)
		code, msg := zp.coordinatorOf(ctx, keyType, key)
		if code == 0 {
			if b, ok := zp.node.Metadata().Broker(zp.leaderOf(key)); ok {
				node, host, port = b.ID, b.Host, b.Port
			} else {
				code, msg = kerr.CoordinatorNotAvailable.Code, "the coordinator is not live"
			}
		}
		var m *string
		if code != 0 {
			m = &msg
		}
		if req.Version >= 4 {
			rc := kmsg.NewFindCoordinatorResponseCoordinator()
			rc.Key, rc.ErrorCode, rc.ErrorMessage = key, code, m
			rc.NodeID, rc.Host, rc.Port = node, host, port
			resp.Coordinators = append(resp.Coordinators, rc)
			continue
		}
		resp.ErrorCode, resp.ErrorMessage = code, m
		resp.NodeID, resp.Host, resp.Port = node, host, port
	}
	return resp, nil
}

// coordinatorOf checks that key's coordinator can be named now.
func (zp *zkPlane) coordinatorOf(ctx context.Context, keyType int8, key string) (int16, string) {
	switch keyType {
	case 0:
	case 1:
		return kerr.CoordinatorNotAvailable.Code, "transactional ids are answered by the transaction coordinator"
	default:
		return kerr.InvalidRequest.Code, "unknown coordinator key type"
	}
	if key == "" {
		return kerr.InvalidRequest.Code, "empty group id"
	}
	if len(zp.node.Metadata().Partitions(offsets.Topic)) > 0 {
		if zp.leaderOf(key) < 0 {
			return kerr.CoordinatorNotAvailable.Code, "the offsets partition of the group has no leader"
		}
		return 0, ""
	}
	if err := zp.createOffsetsTopic(ctx); err != nil {
		if errors.Is(err, cluster.ErrInvalidReplicationFactor) {
			zp.s.log.Info("server: cannot create "+offsets.Topic+" yet", "err", err)
		} else {
			zp.s.log.Warn("server: create "+offsets.Topic, "err", err)
		}
	}
	return kerr.CoordinatorNotAvailable.Code, offsets.Topic + " is being created"
}

// leaderOf is the leader of key's __consumer_offsets partition in the
// metadata cache, -1 when unknown.
func (zp *zkPlane) leaderOf(key string) int32 {
	md := zp.node.Metadata()
	n := int32(len(md.Partitions(offsets.Topic)))
	if n == 0 {
		return -1
	}
	pi, ok := md.Partition(offsets.Topic, coordlog.PartitionFor(key, n))
	if !ok {
		return -1
	}
	return pi.Leader
}

// createOffsetsTopic creates __consumer_offsets through the cluster
// (offsets.topic.num.partitions partitions, offsets.topic.replication.factor
// replicas). It returns nil when the topic exists already.
func (zp *zkPlane) createOffsetsTopic(ctx context.Context) error {
	cfg := zp.s.cfg
	err := zp.node.CreateTopic(ctx, offsets.Topic, int(cfg.OffsetsTopicPartitions), int(cfg.OffsetsTopicReplication),
		offsets.TopicConfigs(cfg.OffsetsTopicSegmentBytes), [16]byte{})
	if errors.Is(err, cluster.ErrTopicExists) {
		return nil
	}
	return err
}
