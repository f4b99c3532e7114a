package server

// ReadShareGroupStateSummary (key 87), served v0-v1, inter-broker: a share
// partition's state epoch, leader epoch and start offset without its
// batches (what DescribeShareGroupOffsets shows); it does not move the
// leader epoch. No state: start offset -1, state epoch 0, leader epoch
// -1. A leader epoch older than the state's: FENCED_LEADER_EPOCH (-1: no
// check).
//
//	v1: DeliveryCompleteCount (KIP-1226): the offsets from the start offset
//	    on that are acknowledged or archived (-1 without state)
//
// The common checks are shareStateReq.check's
// (83_initialize_share_group_state.go).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleReadShareGroupStateSummary(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.ReadShareGroupStateSummaryRequest)
	resp := r.ResponseKind().(*kmsg.ReadShareGroupStateSummaryResponse)
	sr := newShareStateReq(s, rc, r, r.GroupID)
	ctx, cancel := shareStateCtx(rc)
	defer cancel()
	for _, t := range r.Topics {
		rt := kmsg.NewReadShareGroupStateSummaryResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewReadShareGroupStateSummaryResponseTopicPartition()
			rp.Partition, rp.StartOffset, rp.LeaderEpoch = p.Partition, -1, -1
			k, code, msg := sr.check(t.TopicID, p.Partition, true, p.LeaderEpoch)
			if code == 0 {
				st, _, err := s.share.coord.ReadState(ctx, k, -1)
				if code, msg = shareStateCode(err); code == 0 {
					if p.LeaderEpoch != -1 && st.LeaderEpoch > p.LeaderEpoch {
						code = kerr.FencedLeaderEpoch.Code
					} else {
						rp.StateEpoch, rp.LeaderEpoch, rp.StartOffset = st.StateEpoch, st.LeaderEpoch, st.StartOffset
						if st.StartOffset >= 0 {
							rp.DeliveryCompleteCount = int32(min(shareDeliveryComplete(st.Snapshot), 1<<31-1))
						}
					}
				}
			}
			rp.ErrorCode, rp.ErrorMessage = code, msg
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return kresp(resp), nil
}
