package server

// ShareGroupDescribe (key 77), version 1 (KIP-932). As Kafka's KafkaApis:
// Describe on each group, else GROUP_AUTHORIZATION_FAILED for that group;
// the coordinator answers the others; a group with a member subscribed to
// or assigned a topic the principal may not Describe is answered
// TOPIC_AUTHORIZATION_FAILED instead of its description (all or nothing);
// authorized operations when asked for. Gated with 76 (apisFor).

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/internal/errcode"
)

func handleShareGroupDescribe(s *Server, rc *reqCtx, kreq kmsg.Request) (*response, error) {
	req := kreq.(*kmsg.ShareGroupDescribeRequest)
	var refused []kmsg.ShareGroupDescribeResponseGroup
	kept := req.GroupIDs[:0:0]
	for _, g := range req.GroupIDs {
		if s.az.allowed(rc, acl.OpDescribe, acl.ResourceGroup, g) {
			kept = append(kept, g)
			continue
		}
		rg := kmsg.NewShareGroupDescribeResponseGroup()
		rg.GroupID, rg.ErrorCode = g, errorCode(errGroupAuthorization)
		rg.AuthorizedOperations = authorizedOperationsUnset
		refused = append(refused, rg)
	}
	req.GroupIDs = kept
	out, err := handleGroupWith(s, rc, req, nil)
	if err != nil || out == nil {
		return out, err
	}
	resp := out.kresp.(*kmsg.ShareGroupDescribeResponse)
	for i := range resp.Groups {
		rg := &resp.Groups[i]
		if rg.ErrorCode != 0 {
			continue
		}
		if !shareDescribableTopics(s, rc, rg) {
			*rg = kmsg.NewShareGroupDescribeResponseGroup()
			rg.GroupID = kept[i]
			rg.ErrorCode = errorCode(errcode.ErrTopicAuthorization)
			msg := "The group has described topic(s) that the client is not authorized to describe."
			rg.ErrorMessage = &msg
			rg.AuthorizedOperations = authorizedOperationsUnset
			continue
		}
		if req.IncludeAuthorizedOperations {
			rg.AuthorizedOperations = s.az.authorizedOperations(rc, acl.ResourceGroup, rg.GroupID)
		}
	}
	resp.Groups = append(refused, resp.Groups...)
	return out, nil
}

// shareDescribableTopics reports whether rc's principal may Describe every
// topic rg's members subscribe to or are assigned.
func shareDescribableTopics(s *Server, rc *reqCtx, rg *kmsg.ShareGroupDescribeResponseGroup) bool {
	return mayDescribeTopics(s, rc, func(yield func(string) bool) {
		for _, m := range rg.Members {
			for _, t := range m.SubscribedTopicNames {
				if !yield(t) {
					return
				}
			}
			for _, tp := range m.Assignment.TopicPartitions {
				if !yield(tp.Topic) {
					return
				}
			}
		}
	})
}
