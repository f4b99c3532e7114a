package server

// OffsetForLeaderEpoch (key 23), served v0-v4.
//
//	v0: per partition, the end offset of a leader epoch
//	v1: the answer names the epoch it used (the largest <= the requested one)
//	v2: current leader epoch in the request (fencing); throttle time
//	v3: replica id (consumers send -2, followers their broker id)
//	v4: flexible
//
// The answer comes from the partition leader's epoch history through
// replication.Partition.HandleOffsetForLeaderEpoch (engine.EndOffsetForEpoch
// states the cases: the start offset of the first epoch above the requested
// one, the log end for the current epoch, UNDEFINED for an epoch newer than
// any known), after the request's current leader epoch is checked.

import (
	"github.com/sluice/sluice/acl"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleOffsetForLeaderEpoch(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.OffsetForLeaderEpochRequest)
	resp := r.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	// As Kafka's handleOffsetForLeaderEpochRequest, whatever the replica
	// id: ClusterAction on the cluster, or Describe on each topic
	// (TOPIC_AUTHORIZATION_FAILED per partition otherwise).
	clusterAction := s.az.allowedCluster(rc, acl.OpClusterAction)
	for _, rt := range r.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		var authErr error
		if !clusterAction && !s.az.allowedTopic(rc, acl.OpDescribe, rt.Topic) {
			authErr = errTopicAuthorization
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LeaderEpoch, sp.EndOffset = -1, -1
			p, err := s.lookup.leaderPartition(rt.Topic, rp.Partition)
			if authErr != nil {
				err = authErr
			} else if err == nil {
				sp.LeaderEpoch, sp.EndOffset, err = p.HandleOffsetForLeaderEpoch(rp.CurrentLeaderEpoch, rp.LeaderEpoch)
			}
			sp.ErrorCode = errorCode(err)
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return kresp(resp), nil
}
