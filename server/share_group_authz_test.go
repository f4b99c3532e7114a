package server

// Authorization of the share group APIs (KIP-932), as Kafka 4.2's
// KafkaApis: Read on the group and Describe on every subscribed topic for
// ShareGroupHeartbeat; Describe on the group for ShareGroupDescribe, and
// TOPIC_AUTHORIZATION_FAILED for a group holding a topic the principal may
// not Describe. And the gate: without group.share.enable the keys are not
// in the dispatch table.

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/config"
)

func shareEnabled() *config.Config {
	c := config.Default()
	c.GroupShare.Enable = true
	return &c
}

func joinShare(t *testing.T, s *Server, group, member string, topics []string) *kmsg.ShareGroupHeartbeatResponse {
	t.Helper()
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.SubscribedTopicNames = group, member, topics
	return mustCall(t, s, 1, req).(*kmsg.ShareGroupHeartbeatResponse)
}

func TestShareGroupAuthorization(t *testing.T) {
	s, az := newDenyServer(t, shareEnabled(), "pub", "secret")

	az.set(denyKey{acl.OpRead, acl.ResourceGroup, "g"})
	if r := joinShare(t, s, "g", "m", []string{"pub"}); r.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("no Read on the group: %s", code(r.ErrorCode))
	}
	az.set(denyKey{acl.OpDescribe, acl.ResourceTopic, "secret"})
	if r := joinShare(t, s, "g", "m", []string{"pub", "secret"}); r.ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("no Describe on a subscribed topic: %s", code(r.ErrorCode))
	}
	az.set()
	if r := joinShare(t, s, "g", "m", []string{"pub", "secret"}); r.ErrorCode != 0 {
		t.Fatalf("allowed join: %s", code(r.ErrorCode))
	}

	d := kmsg.NewPtrShareGroupDescribeRequest()
	az.set(denyKey{acl.OpDescribe, acl.ResourceGroup, "g"})
	d.GroupIDs = []string{"g"}
	resp := mustCall(t, s, 1, d).(*kmsg.ShareGroupDescribeResponse)
	if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("describe without Describe on the group: %+v", resp.Groups)
	}
	az.set(denyKey{acl.OpDescribe, acl.ResourceTopic, "secret"})
	d.GroupIDs = []string{"g"}
	resp = mustCall(t, s, 1, d).(*kmsg.ShareGroupDescribeResponse)
	if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != kerr.TopicAuthorizationFailed.Code || len(resp.Groups[0].Members) != 0 {
		t.Fatalf("describe of a group holding an undescribable topic: %+v", resp.Groups)
	}
	az.set()
	d.GroupIDs, d.IncludeAuthorizedOperations = []string{"g"}, true
	resp = mustCall(t, s, 1, d).(*kmsg.ShareGroupDescribeResponse)
	if g := resp.Groups[0]; g.ErrorCode != 0 || len(g.Members) != 1 || g.AuthorizedOperations == authorizedOperationsUnset {
		t.Fatalf("allowed describe: %+v", g)
	}
}

// TestShareGroupAPIsGated: the share group keys are served only with
// group.share.enable, so ApiVersions does not advertise them by default.
func TestShareGroupAPIsGated(t *testing.T) {
	off := newTestServer(t, nil, Options{})
	for _, k := range []int16{apiKeyShareGroupHeartbeat, apiKeyShareGroupDescribe} {
		if _, ok := off.apis[k]; ok {
			t.Fatalf("key %d served without group.share.enable", k)
		}
	}
	on := newTestServer(t, shareEnabled(), Options{})
	for _, k := range []int16{apiKeyShareGroupHeartbeat, apiKeyShareGroupDescribe} {
		if a, ok := on.apis[k]; !ok || a.min != 1 || a.max != 1 {
			t.Fatalf("key %d with group.share.enable: %+v %v", k, a, ok)
		}
	}
}
