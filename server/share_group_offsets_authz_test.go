package server

// Authorization of AlterShareGroupOffsets (91) and DeleteShareGroupOffsets
// (92), as Kafka 4.2's KafkaApis: Read on the group for Alter, Delete on
// the group for Delete (GROUP_AUTHORIZATION_FAILED for the request), Read
// on each topic (TOPIC_AUTHORIZATION_FAILED on it).

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
)

func TestShareGroupOffsetsAuthorization(t *testing.T) {
	s, az := newDenyServer(t, shareEnabled(), "pub", "secret")
	// A member joins (the coordinator loads) and leaves: g is empty.
	if r := joinShare(t, s, "g", "m", []string{"pub"}); r.ErrorCode != 0 {
		t.Fatalf("join: %s", code(r.ErrorCode))
	}
	leave := kmsg.NewPtrShareGroupHeartbeatRequest()
	leave.GroupID, leave.MemberID, leave.MemberEpoch = "g", "m", -1
	if r := mustCall(t, s, 1, leave).(*kmsg.ShareGroupHeartbeatResponse); r.ErrorCode != 0 {
		t.Fatalf("leave: %s", code(r.ErrorCode))
	}
	alter := func() *kmsg.AlterShareGroupOffsetsResponse {
		req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
		req.GroupID = "g"
		for _, tp := range []string{"pub", "secret"} {
			req.Topics = append(req.Topics, kmsg.AlterShareGroupOffsetsRequestTopic{Topic: tp,
				Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0, StartOffset: 0}}})
		}
		return mustCall(t, s, 0, req).(*kmsg.AlterShareGroupOffsetsResponse)
	}
	del := func() *kmsg.DeleteShareGroupOffsetsResponse {
		req := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
		req.GroupID = "g"
		req.Topics = []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: "pub"}, {Topic: "secret"}}
		return mustCall(t, s, 0, req).(*kmsg.DeleteShareGroupOffsetsResponse)
	}

	az.set(denyKey{acl.OpRead, acl.ResourceGroup, "g"})
	if r := alter(); r.ErrorCode != kerr.GroupAuthorizationFailed.Code || len(r.Topics) != 0 {
		t.Fatalf("alter without Read on the group: %s", code(r.ErrorCode))
	}
	az.set(denyKey{acl.OpDelete, acl.ResourceGroup, "g"})
	if r := alter(); r.ErrorCode != 0 {
		t.Fatalf("alter needs no Delete on the group: %s", code(r.ErrorCode))
	}
	if r := del(); r.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("delete without Delete on the group: %s", code(r.ErrorCode))
	}
	az.set(denyKey{acl.OpRead, acl.ResourceGroup, "g"}, denyKey{acl.OpRead, acl.ResourceTopic, "secret"})
	if r := del(); r.ErrorCode != 0 || len(r.Topics) != 2 || r.Topics[0].ErrorCode != 0 ||
		r.Topics[1].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("delete, no Read on secret: %+v", r)
	}
	az.set(denyKey{acl.OpRead, acl.ResourceTopic, "secret"})
	r := alter()
	if r.ErrorCode != 0 || len(r.Topics) != 2 || r.Topics[0].Partitions[0].ErrorCode != 0 ||
		r.Topics[1].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("alter, no Read on secret: %+v", r)
	}
}
