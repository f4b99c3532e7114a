package server

// Authorization of the KIP-848 consumer group APIs, as Kafka's KafkaApis:
// Read on the group, Describe on subscribed topic names, regexes that
// resolve only to describable topics, Describe on the group for
// ConsumerGroupDescribe and TOPIC_AUTHORIZATION_FAILED for a group that
// holds topics the principal may not Describe.

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/config"
)

func join848(t *testing.T, s *Server, group, member string, topics []string, regex *string) *kmsg.ConsumerGroupHeartbeatResponse {
	t.Helper()
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.RebalanceTimeoutMillis = group, member, 30000
	req.SubscribedTopicNames, req.SubscribedTopicRegex = topics, regex
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	return mustCall(t, s, 1, req).(*kmsg.ConsumerGroupHeartbeatResponse)
}

func assignedTopics(s *Server, a *kmsg.ConsumerGroupHeartbeatResponseAssignment) map[string]int {
	out := map[string]int{}
	if a == nil {
		return out
	}
	for _, t := range a.Topics {
		for _, name := range s.md.topicNames() {
			if id, ok := s.md.topicID(name); ok && id == t.TopicID {
				out[name] += len(t.Partitions)
			}
		}
	}
	return out
}

func TestConsumerGroup848Authorization(t *testing.T) {
	s, az := newDenyServer(t, nil, "pub-a", "pub-b", "secret")
	re := `pub-.*|secret`

	az.set(denyKey{acl.OpRead, acl.ResourceGroup, "g"})
	if r := join848(t, s, "g", "m", []string{"pub-a"}, nil); r.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("no Read on the group: %s", code(r.ErrorCode))
	}

	az.set(denyKey{acl.OpDescribe, acl.ResourceTopic, "secret"})
	if r := join848(t, s, "g", "m", []string{"pub-a", "secret"}, nil); r.ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("no Describe on a subscribed topic: %s", code(r.ErrorCode))
	}
	r := join848(t, s, "g", "m", nil, &re)
	if r.ErrorCode != 0 {
		t.Fatalf("regex join: %s", code(r.ErrorCode))
	}
	got := assignedTopics(s, r.Assignment)
	if got["pub-a"] != 1 || got["pub-b"] != 1 || got["secret"] != 0 {
		t.Fatalf("regex assignment %v: want pub-a and pub-b, not secret", got)
	}

	// Describe: refused without Describe on the group.
	az.set(denyKey{acl.OpDescribe, acl.ResourceGroup, "g"})
	d := kmsg.NewPtrConsumerGroupDescribeRequest()
	d.Groups = []string{"g"}
	resp := mustCall(t, s, 1, d).(*kmsg.ConsumerGroupDescribeResponse)
	if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("describe without Describe on the group: %+v", resp.Groups)
	}
	// A group holding a topic the principal may not Describe.
	az.set(denyKey{acl.OpDescribe, acl.ResourceTopic, "pub-b"})
	d.Groups = []string{"g"} // the handler takes refused groups out of the request
	resp = mustCall(t, s, 1, d).(*kmsg.ConsumerGroupDescribeResponse)
	if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("describe of a group holding an undescribable topic: %+v", resp.Groups)
	}
	az.set()
	d.IncludeAuthorizedOperations = true
	d.Groups = []string{"g"}
	resp = mustCall(t, s, 1, d).(*kmsg.ConsumerGroupDescribeResponse)
	if g := resp.Groups[0]; g.ErrorCode != 0 || len(g.Members) != 1 || g.AuthorizedOperations == authorizedOperationsUnset {
		t.Fatalf("describe: %s, %d members, operations %d", code(g.ErrorCode), len(g.Members), g.AuthorizedOperations)
	}
}

// TestConsumerProtocolAdvertised: ApiVersions lists ConsumerGroupHeartbeat
// and ConsumerGroupDescribe (v0-1) by default and leaves them out, like
// Kafka, when group.coordinator.rebalance.protocols is only `classic`.
func TestConsumerProtocolAdvertised(t *testing.T) {
	keys := func(s *Server) map[int16][2]int16 {
		out := map[int16][2]int16{}
		for _, k := range s.apis.versions() {
			out[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
		}
		return out
	}
	on := keys(newTestServer(t, nil, Options{}))
	if on[68] != [2]int16{0, 1} || on[69] != [2]int16{0, 1} {
		t.Fatalf("default: 68 %v, 69 %v; want [0 1] each", on[68], on[69])
	}
	cfg := config.Default()
	if err := cfg.Set("group.coordinator.rebalance.protocols", "classic"); err != nil {
		t.Fatal(err)
	}
	off := keys(newTestServer(t, &cfg, Options{}))
	if _, ok := off[68]; ok {
		t.Fatal("ConsumerGroupHeartbeat advertised with only the classic protocol")
	}
	if _, ok := off[69]; ok {
		t.Fatal("ConsumerGroupDescribe advertised with only the classic protocol")
	}
	if err := cfg.Set("group.coordinator.rebalance.protocols", "consumer"); err == nil {
		t.Fatal("protocols without classic accepted")
	}
}
