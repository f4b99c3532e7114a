package server

// LeaderAndIsr (key 4), served v2-v5, cluster mode only (the controller
// sends v5).
//
//	v2: topic states grouped by topic; broker epoch
//	v3: adding/removing replicas
//	v4: flexible
//	v5: topic ids; Type (full or incremental); the response groups
//	    partition errors by topic id
//
// A single node does not serve it (not in its dispatch table: the
// connection closes). A cluster member obeys only the controller (see
// interBroker.acceptControllerRequest): a controller epoch older than the
// current one is STALE_CONTROLLER_EPOCH, a broker epoch that is not this
// broker's registration STALE_BROKER_EPOCH, a controller id and epoch
// ZooKeeper does not confirm CLUSTER_AUTHORIZATION_FAILED, each for the
// whole request, logged. Each partition state goes to the replica manager
// (replica.Manager.BecomeLeaderOrFollowerLocked): a leader epoch
// older than the replica's is STALE_CONTROLLER_EPOCH for the partition
// (Kafka ignores such a state and answers the same). Otherwise the
// partition's log is opened or created, and the replica becomes leader
// (its fetcher removed first, so no fetch lands after MakeLeader) or
// follower (then its fetcher is started at the new leader and epoch, and
// truncates first). A leader of -1 (no live replica in sync) makes the
// replica a follower with no fetcher.

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/replica"
	"github.com/sluice/sluice/replication"
)

func handleLeaderAndIsr(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.LeaderAndISRRequest)
	resp := r.ResponseKind().(*kmsg.LeaderAndISRResponse)
	err := s.az.checkControlListener(rc)
	if err == nil {
		err = s.ib.acceptControllerRequest(r.ControllerID, r.ControllerEpoch, r.BrokerEpoch)
	}
	if err != nil {
		rc.logRefused(s.log, r, r.ControllerID, r.ControllerEpoch, err)
		resp.ErrorCode = errorCode(err)
		return kresp(resp), nil
	}
	s.ib.liveLeaders(r.LiveLeaders)

	s.rm.Lock()
	defer s.rm.Unlock()
	for _, ts := range r.TopicStates {
		rt := kmsg.NewLeaderAndISRResponseTopic()
		rt.TopicID = ts.TopicID
		for _, ps := range ts.PartitionStates {
			code := applyLeaderAndIsrLocked(s, ts.Topic, ts.TopicID, ps)
			if r.Version >= 5 {
				rp := kmsg.NewLeaderAndISRResponseTopicPartition()
				rp.Partition, rp.ErrorCode = ps.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			} else {
				rp := kmsg.NewLeaderAndISRResponseTopicPartition()
				rp.Topic, rp.Partition, rp.ErrorCode = ts.Topic, ps.Partition, code
				resp.Partitions = append(resp.Partitions, rp)
			}
		}
		if r.Version >= 5 {
			resp.Topics = append(resp.Topics, rt)
		}
	}
	return kresp(resp), nil
}

// applyLeaderAndIsrLocked applies one partition state of a LeaderAndIsr
// request to the replica manager and returns the partition's error code.
// REQUIRES: s.rm.Lock held.
func applyLeaderAndIsrLocked(s *Server, topicName string, topicID [16]byte, ps kmsg.LeaderAndISRRequestTopicPartition) int16 {
	st := replication.LeaderAndIsr{
		Leader: ps.Leader, LeaderEpoch: ps.LeaderEpoch, ISR: ps.ISR, Replicas: ps.Replicas, ZkVersion: ps.ZKVersion,
		IsNew: ps.IsNew,
	}
	switch err := s.rm.BecomeLeaderOrFollowerLocked(topicName, topicID, ps.Partition, st, ps.ControllerEpoch); {
	case err == nil:
		return 0
	case errors.Is(err, replica.ErrOpen):
		s.log.Error("server: LeaderAndIsr: open replica", "topic", topicName, "partition", ps.Partition, "err", err)
		return kerr.KafkaStorageError.Code
	case errors.Is(err, replication.ErrStaleLeaderEpoch):
		s.log.Info("server: ignoring LeaderAndIsr with an old leader epoch", "topic", topicName, "partition", ps.Partition, "err", err)
		return kerr.StaleControllerEpoch.Code
	default:
		s.log.Error("server: LeaderAndIsr", "topic", topicName, "partition", ps.Partition, "err", err)
		return errorCode(err)
	}
}
