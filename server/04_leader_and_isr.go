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
// For each partition state: a controller epoch older than one applied
// already is STALE_CONTROLLER_EPOCH for the whole request; a leader epoch
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

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/offsets"
	"github.com/sluice/sluice/replication"
)

func handleLeaderAndIsr(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	cm := s.cm
	if cm == nil {
		return nil, errClusterOnly
	}
	r := req.(*kmsg.LeaderAndISRRequest)
	resp := r.ResponseKind().(*kmsg.LeaderAndISRResponse)

	cm.mu.Lock()
	stale := r.ControllerEpoch < cm.ctrlEpoch
	if !stale {
		cm.ctrlEpoch = r.ControllerEpoch
		for _, ll := range r.LiveLeaders {
			cm.leaderAddrs[ll.BrokerID] = hostPort(ll.Host, ll.Port)
		}
	}
	cm.mu.Unlock()
	if stale {
		cm.log.Warn("server: ignoring LeaderAndIsr from an old controller", "controller", r.ControllerID, "controller_epoch", r.ControllerEpoch)
		resp.ErrorCode = kerr.StaleControllerEpoch.Code
		return kresp(resp), nil
	}

	s.topics.admin.Lock()
	defer s.topics.admin.Unlock()
	for _, ts := range r.TopicStates {
		rt := kmsg.NewLeaderAndISRResponseTopic()
		rt.TopicID = ts.TopicID
		for _, ps := range ts.PartitionStates {
			code := cm.applyLeaderAndIsrLocked(ts.Topic, ts.TopicID, ps)
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

// applyLeaderAndIsrLocked applies one partition state and returns its
// error code. REQUIRES: s.topics.admin held.
func (cm *clusterMode) applyLeaderAndIsrLocked(topicName string, topicID [16]byte, ps kmsg.LeaderAndISRRequestTopicPartition) int16 {
	s := cm.s
	t, err := cm.localTopic(topicName, topicID, ps.Partition)
	if err != nil {
		cm.log.Error("server: LeaderAndIsr: topic", "topic", topicName, "partition", ps.Partition, "err", err)
		return errorCode(err)
	}
	p := t.parts[ps.Partition]
	fresh := p == nil
	if fresh {
		if p, err = cm.openReplica(t, ps.Partition); err != nil {
			cm.log.Error("server: LeaderAndIsr: open replica", "topic", topicName, "partition", ps.Partition, "err", err)
			return kerr.KafkaStorageError.Code
		}
	}
	cm.mu.Lock()
	cm.partCtrlEpoch[engine.PartitionID{Topic: topicName, Partition: ps.Partition}] = ps.ControllerEpoch
	cm.mu.Unlock()
	st := replication.LeaderAndIsr{
		Leader: ps.Leader, LeaderEpoch: ps.LeaderEpoch, ISR: ps.ISR, Replicas: ps.Replicas, ZkVersion: ps.ZKVersion,
	}
	if ps.Leader == s.nodeID {
		cm.fetchers.Remove(p.Partition)
		err = p.MakeLeader(st)
	} else {
		err = p.MakeFollower(st)
		if err == nil {
			if ps.Leader >= 0 {
				cm.fetchers.Add(p.Partition, ps.Leader, ps.LeaderEpoch)
			} else {
				cm.fetchers.Remove(p.Partition)
			}
		}
	}
	if err != nil {
		if fresh {
			p.Close()
		}
		if errors.Is(err, replication.ErrStaleLeaderEpoch) {
			cm.log.Info("server: ignoring LeaderAndIsr with an old leader epoch", "topic", topicName, "partition", ps.Partition, "err", err)
			return kerr.StaleControllerEpoch.Code
		}
		cm.log.Error("server: LeaderAndIsr", "topic", topicName, "partition", ps.Partition, "err", err)
		return errorCode(err)
	}
	if fresh {
		cm.setPartitionLocked(t, ps.Partition, p)
	}
	if topicName == offsets.Topic {
		cm.offsets.OnRole(ps.Partition, ps.Leader == s.nodeID)
	}
	return 0
}
