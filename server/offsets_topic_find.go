package server

// FindCoordinator in cluster mode, and the wiring of the __consumer_offsets
// coordinator (package offsets). (In single-node mode the group coordinator
// answers FindCoordinator with this broker.)

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/cluster"
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
		Meta:   s.meta,
		Now:    s.now,
		Logger: s.log,
	})
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
		return kerr.CoordinatorNotAvailable.Code, "transactions are not supported"
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
	pi, ok := md.Partition(offsets.Topic, offsets.PartitionFor(key, n))
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
