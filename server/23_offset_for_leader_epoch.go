package server

// OffsetForLeaderEpoch (key 23), served v0-v4.
//
//	v0: per partition, the end offset of a leader epoch
//	v1: the answer names the epoch it used (the largest <= the requested one)
//	v2: current leader epoch in the request (fencing); throttle time
//	v3: replica id (consumers send -2, followers their broker id)
//	v4: flexible
//
// The answer comes from the log's leader-epoch history: the start offset of
// the first epoch above the requested one, or the log end offset for the
// current epoch; an epoch older than any in the history gives epoch -1 and
// offset -1 (UNDEFINED), as Kafka answers.

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleOffsetForLeaderEpoch(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.OffsetForLeaderEpochRequest)
	resp := r.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	for _, rt := range r.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LeaderEpoch, sp.EndOffset = -1, -1
			p := s.partition(rt.Topic, rp.Partition)
			switch {
			case s.cm != nil: // only the leader answers, followers and consumers alike
				var err error
				if p, err = s.cm.leaderPartition(rt.Topic, rp.Partition); err == nil {
					sp.LeaderEpoch, sp.EndOffset, err = p.HandleOffsetForLeaderEpoch(rp.CurrentLeaderEpoch, rp.LeaderEpoch)
				}
				sp.ErrorCode = errorCode(err)
			case p == nil:
				sp.ErrorCode = errorCode(errUnknownTopicOrPartition)
			default:
				if err := checkLeaderEpoch(p, rp.CurrentLeaderEpoch); err != nil {
					sp.ErrorCode = errorCode(err)
					break
				}
				sp.LeaderEpoch, sp.EndOffset = p.EndOffsetForEpoch(rp.LeaderEpoch)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return kresp(resp), nil
}
