package server

// ConsumerGroupDescribe (key 69), versions 0-1 (KIP-848). As Kafka's
// KafkaApis: Describe on each group, else GROUP_AUTHORIZATION_FAILED for
// that group; the coordinator answers the others; a group whose members
// subscribe to or hold a topic the principal may not Describe is answered
// TOPIC_AUTHORIZATION_FAILED instead of its description; authorized
// operations when asked for.

import (
	"iter"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/internal/errcode"
)

func handleConsumerGroupDescribe(s *Server, rc *reqCtx, kreq kmsg.Request) (*response, error) {
	req := kreq.(*kmsg.ConsumerGroupDescribeRequest)
	var refused []kmsg.ConsumerGroupDescribeResponseGroup
	kept := req.Groups[:0:0]
	for _, g := range req.Groups {
		if s.az.allowed(rc, acl.OpDescribe, acl.ResourceGroup, g) {
			kept = append(kept, g)
			continue
		}
		rg := kmsg.NewConsumerGroupDescribeResponseGroup()
		rg.Group, rg.ErrorCode = g, errorCode(errGroupAuthorization)
		rg.AuthorizedOperations = authorizedOperationsUnset
		refused = append(refused, rg)
	}
	req.Groups = kept
	out, err := handleGroupWith(s, rc, req, nil)
	if err != nil || out == nil {
		return out, err
	}
	resp := out.kresp.(*kmsg.ConsumerGroupDescribeResponse)
	for i := range resp.Groups {
		rg := &resp.Groups[i]
		if rg.ErrorCode != 0 {
			continue
		}
		if !describableTopics(s, rc, rg) {
			*rg = kmsg.NewConsumerGroupDescribeResponseGroup()
			rg.Group = kept[i]
			rg.ErrorCode = errorCode(errcode.ErrTopicAuthorization)
			msg := "The group has described topic(s) that the client is not authorized to describe."
			rg.ErrorMessage = &msg
			rg.AuthorizedOperations = authorizedOperationsUnset
			continue
		}
		if req.IncludeAuthorizedOperations {
			rg.AuthorizedOperations = s.az.authorizedOperations(rc, acl.ResourceGroup, rg.Group)
		}
	}
	resp.Groups = append(refused, resp.Groups...)
	return out, nil
}

// describableTopics reports whether rc's principal may Describe every
// topic rg's members subscribe to or are assigned.
func describableTopics(s *Server, rc *reqCtx, rg *kmsg.ConsumerGroupDescribeResponseGroup) bool {
	return mayDescribeTopics(s, rc, func(yield func(string) bool) {
		for _, m := range rg.Members {
			for _, t := range m.SubscribedTopics {
				if !yield(t) {
					return
				}
			}
			for _, a := range []kmsg.Assignment{m.Assignment, m.TargetAssignment} {
				for _, tp := range a.TopicPartitions {
					if !yield(tp.Topic) {
						return
					}
				}
			}
		}
	})
}

// mayDescribeTopics reports whether rc's principal may Describe every topic
// a group description names, as Kafka's describe handlers check before
// they answer a group. An empty name (an assigned topic id whose topic is
// gone) names nothing to hide and is skipped.
func mayDescribeTopics(s *Server, rc *reqCtx, topics iter.Seq[string]) bool {
	for t := range topics {
		if t != "" && !s.az.allowed(rc, acl.OpDescribe, acl.ResourceTopic, t) {
			return false
		}
	}
	return true
}
