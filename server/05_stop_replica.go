package server

// StopReplica (key 5), served v3, cluster mode only, and only from the
// controller (as LeaderAndIsr, 04_leader_and_isr.go).
//
//	v3: per-partition leader epoch and delete flag (KIP-570)
//
// The controller sends it when a topic is deleted: each named replica stops
// fetching and, with delete set, is closed and its log deleted; the topic
// leaves the local registry and metastore with its last partition. Without
// delete the replica only stops fetching. A leader epoch older than the
// replica's (other than -2, "deleting") is FENCED_LEADER_EPOCH for the
// partition. A delete of a replica that ZooKeeper still assigns here, of a
// topic not being deleted, is CLUSTER_AUTHORIZATION_FAILED for the
// partition: no working controller asks for it.

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/metastore"
)

func handleStopReplica(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.StopReplicaRequest)
	resp := r.ResponseKind().(*kmsg.StopReplicaResponse)
	if err := s.acceptControllerRequestOn(rc, r.ControllerID, r.ControllerEpoch, r.BrokerEpoch); err != nil {
		s.refuseControllerRequest(rc, r, r.ControllerID, r.ControllerEpoch, err)
		resp.ErrorCode = errorCode(err)
		return kresp(resp), nil
	}
	s.topics.admin.Lock()
	defer s.topics.admin.Unlock()
	for _, rt := range r.Topics {
		for _, ps := range rt.PartitionStates {
			rp := kmsg.NewStopReplicaResponsePartition()
			rp.Topic, rp.Partition = rt.Topic, ps.Partition
			rp.ErrorCode = s.stopReplicaLocked(rt.Topic, ps)
			resp.Partitions = append(resp.Partitions, rp)
		}
	}
	return kresp(resp), nil
}

// stopReplicaLocked stops one replica. REQUIRES: s.topics.admin held.
func (s *Server) stopReplicaLocked(topicName string, ps kmsg.StopReplicaRequestTopicPartitionState) int16 {
	t := s.topics.get(topicName)
	if t == nil || ps.Partition < 0 || int(ps.Partition) >= len(t.parts) || t.parts[ps.Partition] == nil {
		if ps.Delete { // a log left behind by a crash: delete it anyway
			err := s.store.DeleteLog(engine.PartitionID{Topic: topicName, Partition: ps.Partition})
			if err != nil && !errors.Is(err, engine.ErrNoLog) {
				s.log.Error("server: StopReplica: delete log", "topic", topicName, "partition", ps.Partition, "err", err)
				return kerr.KafkaStorageError.Code
			}
		}
		return 0
	}
	p := t.parts[ps.Partition]
	if ps.LeaderEpoch >= 0 && ps.LeaderEpoch < p.LeaderEpoch() {
		return kerr.FencedLeaderEpoch.Code
	}
	if ps.Delete {
		if err := s.cp.checkReplicaDelete(topicName, ps.Partition); err != nil {
			s.log.Warn("server: StopReplica: refusing to delete a replica", "topic", topicName, "partition", ps.Partition, "err", err)
			return errorCode(err)
		}
	}
	s.cp.replicaStopped(p)
	if !ps.Delete {
		return 0
	}
	t = s.setPartitionLocked(t, ps.Partition, nil)
	code := int16(0)
	if err := p.Close(); err != nil {
		s.log.Warn("server: StopReplica: close", "topic", topicName, "partition", ps.Partition, "err", err)
	}
	if err := s.store.DeleteLog(engine.PartitionID{Topic: topicName, Partition: ps.Partition}); err != nil && !errors.Is(err, engine.ErrNoLog) {
		s.log.Error("server: StopReplica: delete log", "topic", topicName, "partition", ps.Partition, "err", err)
		code = kerr.KafkaStorageError.Code
	}
	for _, q := range t.parts {
		if q != nil {
			return code
		}
	}
	s.topics.remove(t)
	s.metrics.RemoveTopic(topicName) // as deleteTopicLocked: the topic is gone from here
	if err := s.meta.DeleteTopic(topicName); err != nil && !errors.Is(err, metastore.ErrNotFound) {
		s.log.Error("server: StopReplica: delete topic from metastore", "topic", topicName, "err", err)
	}
	s.log.Info("server: deleted local replicas of topic", "topic", topicName)
	return code
}
