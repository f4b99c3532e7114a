package server

// DeleteShareGroupState (key 86), served v0, inter-broker: a share
// partition's state is deleted (tombstones of its ShareSnapshot and
// ShareUpdate keys, acks=all; sharecoord.Coordinator.Delete), as the group
// coordinator does for DeleteGroups and DeleteShareGroupOffsets. A share
// partition without state answers no error; its topic need not exist any
// more. The common checks are shareStateReq.check's
// (83_initialize_share_group_state.go).

import "github.com/twmb/franz-go/pkg/kmsg"

func handleDeleteShareGroupState(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.DeleteShareGroupStateRequest)
	resp := r.ResponseKind().(*kmsg.DeleteShareGroupStateResponse)
	sr := newShareStateReq(s, rc, r, r.GroupID)
	ctx, cancel := shareStateCtx(rc)
	defer cancel()
	for _, t := range r.Topics {
		rt := kmsg.NewDeleteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewDeleteShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			k, code, msg := sr.check(t.TopicID, p.Partition, false)
			if code == 0 {
				code, msg = shareStateCode(s.share.coord.Delete(ctx, k))
			}
			rp.ErrorCode, rp.ErrorMessage = code, msg
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return kresp(resp), nil
}
