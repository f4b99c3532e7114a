package server

// WriteShareGroupState (key 85), served v0-v1, inter-broker: the leader
// of a user partition writes a share partition's state after
// acknowledgements, lock expiries and releases
// (sharecoord.Coordinator.Write: the batches are merged into the state,
// Kafka's PersisterStateBatchCombiner, and a ShareSnapshot is appended
// with acks=all before the answer).
//
//	v1: DeliveryCompleteCount (KIP-1226), taken and not kept: Sluice
//	    answers ReadShareGroupStateSummary v1 with -1 (unknown), which
//	    Kafka's readers take as "not counted"
//
// A leader epoch or state epoch older than the state's:
// FENCED_LEADER_EPOCH, FENCED_STATE_EPOCH (-1: no check); more state
// batches than a share partition may hold (sharecoord's bound, also after
// the merge): INVALID_REQUEST, nothing written. The common checks are
// shareStateReq.check's (83_initialize_share_group_state.go). Sluice's
// dead-letter bookkeeping rides in the partition's tagged field
// sharecoord.TagDLQ (one that does not decode: INVALID_REQUEST).

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/group/share"
	"github.com/sluice/sluice/sharecoord"
)

func handleWriteShareGroupState(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.WriteShareGroupStateRequest)
	resp := r.ResponseKind().(*kmsg.WriteShareGroupStateResponse)
	sr := newShareStateReq(s, rc, r, r.GroupID)
	ctx, cancel := shareStateCtx(rc)
	defer cancel()
	for _, t := range r.Topics {
		rt := kmsg.NewWriteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewWriteShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			k, code, msg := sr.check(t.TopicID, p.Partition, true, p.LeaderEpoch, p.StateEpoch)
			if code == 0 && p.StartOffset < -1 {
				code, msg = shareStateCode(sharecoord.ErrInvalid)
			}
			if code == 0 {
				w := sharecoord.WriteReq{StateEpoch: p.StateEpoch, LeaderEpoch: p.LeaderEpoch, StartOffset: p.StartOffset}
				if len(p.StateBatches) <= sharecoord.MaxBatches {
					w.Batches = make([]share.StateBatch, 0, len(p.StateBatches))
					for _, b := range p.StateBatches {
						w.Batches = append(w.Batches, share.StateBatch{First: b.FirstOffset, Last: b.LastOffset, DeliveryState: share.RecordState(b.DeliveryState), DeliveryCount: b.DeliveryCount})
					}
				} else {
					w.Batches = make([]share.StateBatch, sharecoord.MaxBatches+1) // refused by Write
				}
				var derr error
				p.UnknownTags.Each(func(tag uint32, b []byte) {
					if tag == sharecoord.TagDLQ {
						w.DLQ, derr = sharecoord.DecodeDLQ(b)
					}
				})
				if derr != nil {
					code, msg = shareStateCode(fmt.Errorf("%w: %v", sharecoord.ErrInvalid, derr))
				} else {
					code, msg = shareStateCode(s.share.coord.Write(ctx, k, w))
				}
			}
			rp.ErrorCode, rp.ErrorMessage = code, msg
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return kresp(resp), nil
}
