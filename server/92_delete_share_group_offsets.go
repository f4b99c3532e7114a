package server

// DeleteShareGroupOffsets (key 92), version 0 (KIP-932), as Kafka 4.2's
// KafkaApis and GroupMetadataManager (and kfake):
//
//   - Delete on the group, else GROUP_AUTHORIZATION_FAILED for the request;
//     INVALID_GROUP_ID for an empty group id; NOT_COORDINATOR (or
//     COORDINATOR_LOAD_IN_PROGRESS) when this broker is not its coordinator;
//   - GROUP_ID_NOT_FOUND when no share group has that id; NON_EMPTY_GROUP
//     while it has members;
//   - per topic: Read on it, else TOPIC_AUTHORIZATION_FAILED; an unknown
//     topic is UNKNOWN_TOPIC_OR_PARTITION;
//   - the group's share state of each topic named is deleted (memory and
//     __share_group_state, DeleteShareGroupState on every share
//     coordinator that has some, share_persister.go): its next fetch
//     starts the topic's partitions afresh at share.auto.offset.reset.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
)

const apiKeyDeleteShareGroupOffsets int16 = 92

func handleDeleteShareGroupOffsets(s *Server, rc *reqCtx, kreq kmsg.Request) (*response, error) {
	req := kreq.(*kmsg.DeleteShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	ctx := shareCtx(rc)
	if code := s.shareOffsetsAdminCheck(rc, req.GroupID, acl.OpDelete); code != 0 {
		resp.ErrorCode = code
		return kresp(resp), nil
	}
	err := s.groups.WithEmptyShareGroup(req.GroupID, false, func() error {
		for _, rt := range req.Topics {
			out := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
			out.Topic = rt.Topic
			id, known := s.md.topicID(rt.Topic)
			switch {
			case !s.az.allowed(rc, acl.OpRead, acl.ResourceTopic, rt.Topic):
				out.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case !known:
				out.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				out.TopicID = id
				if err := s.shareDeleteTopic(ctx, req.GroupID, id); err != nil {
					out.ErrorCode = errorCode(err)
					s.logShareAdminErr("DeleteShareGroupOffsets", req.GroupID, rt.Topic, err)
				}
			}
			resp.Topics = append(resp.Topics, out)
		}
		return nil
	})
	if err != nil {
		resp.ErrorCode, resp.Topics = errorCode(err), nil
	}
	return kresp(resp), nil
}
