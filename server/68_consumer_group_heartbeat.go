package server

// ConsumerGroupHeartbeat (key 68), versions 0-1: the next-generation
// consumer group protocol (KIP-848). The group coordinator (package group,
// consumer_heartbeat.go) owns the semantics; here, as Kafka's KafkaApis:
//
//   - Read on the group, else GROUP_AUTHORIZATION_FAILED;
//   - Describe on every subscribed topic name, else the whole answer is
//     TOPIC_AUTHORIZATION_FAILED;
//   - a regex subscription resolves only to the topics the principal may
//     Describe (group.WithTopicAuthorizer).
//
// The key is served only when group.coordinator.rebalance.protocols lists
// `consumer` (apisFor leaves it out otherwise, as Kafka's ApiVersions does).

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/group"
	"github.com/sluice/sluice/internal/errcode"
)

const (
	apiKeyConsumerGroupHeartbeat int16 = 68
	apiKeyConsumerGroupDescribe  int16 = 69
)

func handleConsumerGroupHeartbeat(s *Server, rc *reqCtx, kreq kmsg.Request) (*response, error) {
	req := kreq.(*kmsg.ConsumerGroupHeartbeatRequest)
	deny := func(err error) (*response, error) {
		resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		resp.ErrorCode = errorCode(err)
		return kresp(resp), nil
	}
	if !s.az.allowed(rc, acl.OpRead, acl.ResourceGroup, req.Group) {
		return deny(errGroupAuthorization)
	}
	for _, t := range req.SubscribedTopicNames {
		if !s.az.allowed(rc, acl.OpDescribe, acl.ResourceTopic, t) {
			return deny(errcode.ErrTopicAuthorization)
		}
	}
	return handleGroupWith(s, rc, req, func(name string) bool {
		return s.az.allowed(rc, acl.OpDescribe, acl.ResourceTopic, name)
	})
}

// groupTopics is the cluster's topics as the consumer group coordinator
// sees them (group.TopicSource), from the metadata view.
type groupTopics struct{ md metadataView }

func (t groupTopics) Topic(name string) (group.TopicInfo, bool) {
	id, ok := t.md.topicID(name)
	if !ok {
		return group.TopicInfo{}, false
	}
	return group.TopicInfo{Name: name, ID: id, Partitions: int32(len(t.md.partitions(name)))}, true
}

func (t groupTopics) TopicNames() []string { return t.md.topicNames() }
