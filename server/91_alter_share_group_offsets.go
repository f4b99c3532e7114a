package server

// AlterShareGroupOffsets (key 91), version 0 (KIP-932), as Kafka 4.2's
// KafkaApis and GroupMetadataManager (and kfake):
//
//   - Read on the group, else GROUP_AUTHORIZATION_FAILED for the request;
//     INVALID_GROUP_ID for an empty group id; NOT_COORDINATOR (or
//     COORDINATOR_LOAD_IN_PROGRESS) when this broker is not its coordinator;
//   - GROUP_ID_NOT_FOUND when the id is a consumer or classic group; an
//     absent share group is created; NON_EMPTY_GROUP while it has members;
//   - per topic: Read on it, else TOPIC_AUTHORIZATION_FAILED on each of its
//     partitions; an unknown topic or partition is UNKNOWN_TOPIC_OR_PARTITION;
//   - each partition named gets the start offset asked and loses its
//     in-flight state (every record from there on is Available and never
//     delivered), written to __share_group_state before the answer, by
//     InitializeShareGroupState to the partition's share coordinator
//     (share_persister.go), whichever broker it is; the partition's
//     leader, another broker maybe, forgot its copy when the group's last
//     share session there ended (shareGroupIdle).
//
// A negative start offset is INVALID_REQUEST on its partition (Sluice's
// choice: kafka-share-groups.sh resolves --to-earliest/--to-latest to
// offsets before it asks).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/group/share"
)

const apiKeyAlterShareGroupOffsets int16 = 91

func handleAlterShareGroupOffsets(s *Server, rc *reqCtx, kreq kmsg.Request) (*response, error) {
	req := kreq.(*kmsg.AlterShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	ctx := shareCtx(rc)
	if code := s.shareOffsetsAdminCheck(rc, req.GroupID, acl.OpRead); code != 0 {
		resp.ErrorCode = code
		return kresp(resp), nil
	}
	err := s.groups.WithEmptyShareGroup(req.GroupID, true, func() error {
		for _, rt := range req.Topics {
			resp.Topics = append(resp.Topics, s.alterShareTopic(ctx, rc, req.GroupID, rt))
		}
		return nil
	})
	if err != nil {
		resp.ErrorCode, resp.Topics = errorCode(err), nil
	}
	return kresp(resp), nil
}

// alterShareTopic resets the partitions of one topic of an
// AlterShareGroupOffsets request.
func (s *Server) alterShareTopic(ctx context.Context, rc *reqCtx, group string, rt kmsg.AlterShareGroupOffsetsRequestTopic) kmsg.AlterShareGroupOffsetsResponseTopic {
	out := kmsg.NewAlterShareGroupOffsetsResponseTopic()
	out.Topic = rt.Topic
	code := int16(0)
	// The cluster's metadata: this broker may have no replica of the
	// topic, whose share state is on any share coordinator.
	id, known := s.md.topicID(rt.Topic)
	n := len(s.md.partitions(rt.Topic))
	switch {
	case !s.az.allowed(rc, acl.OpRead, acl.ResourceTopic, rt.Topic):
		code = kerr.TopicAuthorizationFailed.Code
	case !known:
		code = kerr.UnknownTopicOrPartition.Code
	default:
		out.TopicID = id
	}
	for _, rp := range rt.Partitions {
		p := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
		p.Partition, p.ErrorCode = rp.Partition, code
		switch {
		case code != 0:
		case rp.Partition < 0 || int(rp.Partition) >= n:
			p.ErrorCode = kerr.UnknownTopicOrPartition.Code
		case rp.StartOffset < 0:
			p.ErrorCode = kerr.InvalidRequest.Code
		default:
			k := share.Key{Group: group, Topic: id, Partition: rp.Partition}
			if err := s.shareResetStart(ctx, k, rp.StartOffset); err != nil {
				p.ErrorCode = errorCode(err)
				s.logShareAdminErr("AlterShareGroupOffsets", group, rt.Topic, err)
			}
		}
		out.Partitions = append(out.Partitions, p)
	}
	return out
}

// shareOffsetsAdminCheck is what 91 and 92 check before the group's
// state: op on the group, a group id, this broker its coordinator.
func (s *Server) shareOffsetsAdminCheck(rc *reqCtx, group string, op acl.Operation) int16 {
	if !s.az.allowed(rc, op, acl.ResourceGroup, group) {
		return errorCode(errGroupAuthorization)
	}
	if group == "" {
		return kerr.InvalidGroupID.Code
	}
	if owned, loading := s.offsets.Owns(group); !owned {
		if loading {
			return kerr.CoordinatorLoadInProgress.Code
		}
		return kerr.NotCoordinator.Code
	}
	return 0
}

// logShareAdminErr logs an error of 91 or 92 whose code is
// UNKNOWN_SERVER_ERROR (the others are the client's to read).
func (s *Server) logShareAdminErr(api, group, topic string, err error) {
	if errorCode(err) == kerr.UnknownServerError.Code {
		s.log.Warn("server: "+api+" failed", "group", group, "topic", topic, "err", err)
	}
}
