package server

// ShareAcknowledge (key 79), versions 1-2 (Kafka 4.2's; v0 was 4.0's early
// access): a share group member acknowledges records without fetching.
//
//	v1: the stable protocol
//	v2: IsRenewAck (KIP-1222): Renew acknowledgements extend locks
//
// As Kafka: Read on the group, a member id of 1-36 characters, an open
// share session (SHARE_SESSION_NOT_FOUND) at its current epoch (epoch 0
// cannot acknowledge: INVALID_SHARE_SESSION_EPOCH), each partition's
// acknowledgements applied atomically with its own error code (Read on the
// topic, UNKNOWN_TOPIC_ID, NOT_LEADER_OR_FOLLOWER, INVALID_RECORD_STATE,
// INVALID_REQUEST). Epoch -1 closes the session after acknowledging and
// releases what the member still holds in it.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleShareAcknowledge(s *Server, rc *reqCtx, kreq kmsg.Request) (*response, error) {
	req := kreq.(*kmsg.ShareAcknowledgeRequest)
	resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
	group, member, code := s.shareMember(rc, req.GroupID, req.MemberID)
	if code != 0 {
		resp.ErrorCode = code
		return kresp(resp), nil
	}
	cfg := s.shareDataConfig(group)
	renew := req.Version >= 2 && req.IsRenewAck

	key := shareSessionKey{group, member}
	e := req.ShareSessionEpoch
	s.share.mu.Lock()
	ss := s.share.sessions[key]
	switch {
	case e == 0:
		code = kerr.InvalidShareSessionEpoch.Code
	case ss == nil:
		code = kerr.ShareSessionNotFound.Code
	case e != -1 && e != ss.epoch:
		code = kerr.InvalidShareSessionEpoch.Code
	case e == -1:
		delete(s.share.sessions, key)
	default:
		ss.bump()
	}
	var parts []sharePart
	if ss != nil {
		parts = append(parts, ss.parts...)
	}
	s.share.mu.Unlock()
	if code != 0 {
		resp.ErrorCode = code
		return kresp(resp), nil
	}
	if e == -1 {
		defer s.shareGroupIdle(group) // share_state.go
	}

	var acks []shareAckPart
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			acks = append(acks, shareAckPart{t.TopicID, p.Partition, shareAckBatches(p.AcknowledgementBatches,
				func(b *kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch) (int64, int64, []int8) {
					return b.FirstOffset, b.LastOffset, b.AcknowledgeTypes
				})})
		}
	}
	codes := s.shareAck(shareCtx(rc), rc, group, member, acks, renew, cfg)
	var out shareResp[kmsg.ShareAcknowledgeResponseTopicPartition]
	for i, a := range acks {
		e := out.get(a.topic, a.partition, func() kmsg.ShareAcknowledgeResponseTopicPartition {
			p := kmsg.NewShareAcknowledgeResponseTopicPartition()
			p.Partition = a.partition
			p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = -1, -1
			return p
		})
		if e.ErrorCode == 0 {
			e.ErrorCode = codes[i] // a partition named twice keeps its first error
		}
	}
	for i, id := range out.order {
		t := kmsg.NewShareAcknowledgeResponseTopic()
		t.TopicID, t.Partitions = id, out.parts[i]
		resp.Topics = append(resp.Topics, t)
	}
	if e == -1 {
		s.releaseSession(key, &shareSession{parts: parts})
	}
	return kresp(resp), nil
}
