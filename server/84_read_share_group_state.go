package server

// ReadShareGroupState (key 84), served v0, inter-broker: the leader of a
// user partition reads the state of a share partition when it first uses
// it (sharecoord.Coordinator.ReadState, Kafka's
// readStateAndMaybeUpdateLeaderEpoch). No state: start offset -1, state
// epoch 0, no batches, no error. A leader epoch older than the one the
// state was written or read with: FENCED_LEADER_EPOCH; a newer one is
// written before the answer. The common checks are shareStateReq.check's
// (83_initialize_share_group_state.go). Sluice's dead-letter bookkeeping
// rides in the partition's tagged field sharecoord.TagDLQ (Kafka's readers
// skip it).

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/sharecoord"
)

func handleReadShareGroupState(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.ReadShareGroupStateRequest)
	resp := r.ResponseKind().(*kmsg.ReadShareGroupStateResponse)
	sr := newShareStateReq(s, rc, r, r.GroupID)
	ctx, cancel := shareStateCtx(rc)
	defer cancel()
	for _, t := range r.Topics {
		rt := kmsg.NewReadShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewReadShareGroupStateResponseTopicPartition()
			rp.Partition, rp.StartOffset = p.Partition, -1
			k, code, msg := sr.check(t.TopicID, p.Partition, true, p.LeaderEpoch)
			if code == 0 {
				st, _, err := s.share.coord.ReadState(ctx, k, p.LeaderEpoch)
				if code, msg = shareStateCode(err); code == 0 {
					rp.StateEpoch, rp.StartOffset = st.StateEpoch, st.StartOffset
					for _, b := range st.Batches {
						sb := kmsg.NewReadShareGroupStateResponseTopicPartitionStateBatch()
						sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount = b.First, b.Last, int8(b.DeliveryState), b.DeliveryCount
						rp.StateBatches = append(rp.StateBatches, sb)
					}
					if st.DLQ != nil {
						rp.UnknownTags.Set(sharecoord.TagDLQ, sharecoord.AppendDLQ(nil, st.DLQ))
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
