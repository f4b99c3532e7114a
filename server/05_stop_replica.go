package server

// StopReplica (key 5), served v3, cluster mode only (a single node closes
// the connection), and only from the controller (as LeaderAndIsr,
// 04_leader_and_isr.go).
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
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleStopReplica(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.StopReplicaRequest)
	resp := r.ResponseKind().(*kmsg.StopReplicaResponse)
	err := s.az.checkControlListener(rc)
	if err == nil {
		err = s.ib.acceptControllerRequest(r.ControllerID, r.ControllerEpoch, r.BrokerEpoch)
	}
	if err != nil {
		rc.logRefused(s.log, r, r.ControllerID, r.ControllerEpoch, err)
		resp.ErrorCode = errorCode(err)
		return kresp(resp), nil
	}
	s.rm.Lock()
	defer s.rm.Unlock()
	for _, rt := range r.Topics {
		for _, ps := range rt.PartitionStates {
			rp := kmsg.NewStopReplicaResponsePartition()
			rp.Topic, rp.Partition = rt.Topic, ps.Partition
			rp.ErrorCode = stopReplicaLocked(s, rt.Topic, ps)
			resp.Partitions = append(resp.Partitions, rp)
		}
	}
	return kresp(resp), nil
}

// stopReplicaLocked stops one replica. REQUIRES: s.rm.Lock held.
func stopReplicaLocked(s *Server, topicName string, ps kmsg.StopReplicaRequestTopicPartitionState) int16 {
	if p := s.rm.Partition(topicName, ps.Partition); p != nil {
		if ps.LeaderEpoch >= 0 && ps.LeaderEpoch < p.LeaderEpoch() {
			return kerr.FencedLeaderEpoch.Code
		}
		if ps.Delete {
			if err := s.ib.checkReplicaDelete(topicName, ps.Partition); err != nil {
				s.log.Warn("server: StopReplica: refusing to delete a replica", "topic", topicName, "partition", ps.Partition, "err", err)
				return errorCode(err)
			}
		}
	}
	remote := s.remoteDeletion(topicName, ps) // tiered.go
	if err := s.rm.StopReplicaLocked(topicName, ps.Partition, ps.Delete); err != nil {
		return kerr.KafkaStorageError.Code
	}
	if remote != nil {
		go remote() // off the controller's request: objects may take a while
	}
	return 0
}
