package server

// DeleteTopics (key 20), served v0-v6.
//
//	v0: topic names and a timeout
//	v1: throttle time
//	v4: flexible
//	v5: per-topic error message
//	v6: topics by name or by id (KIP-516)
//
// A single node deletes synchronously: the topic leaves lookups at once,
// its partitions close (ending long polls on them), its logs and its
// metastore entry are deleted before the answer. A cluster marks the topic
// for deletion in ZooKeeper and the controller carries it out with
// StopReplica. delete.topic.enable=false answers TOPIC_DELETION_DISABLED;
// an internal topic (__consumer_offsets) TOPIC_AUTHORIZATION_FAILED. A
// topic asked for by id that the principal may not Describe is refused
// with the id and a null name (Kafka's handleDeleteTopicsRequest).

import (
	"context"
	"fmt"

	"github.com/sluice/sluice/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/quota"
)

func handleDeleteTopics(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.DeleteTopicsRequest)
	resp := r.ResponseKind().(*kmsg.DeleteTopicsResponse)
	reqs := r.Topics
	if r.Version < 6 {
		reqs = nil
		for _, n := range r.TopicNames {
			reqs = append(reqs, kmsg.DeleteTopicsRequestTopic{Topic: &n})
		}
	}
	mq := s.mutationQuota(rc, r.Version >= 5) // KIP-599: strict from v5
	for _, rt := range reqs {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		err := func() error {
			if !s.cfg.DeleteTopicEnable {
				return errTopicDeletionDisabled
			}
			name := ""
			switch {
			case rt.Topic != nil && rt.TopicID != ([16]byte{}):
				return fmt.Errorf("%w: give a topic name or a topic id, not both", errInvalidRequest)
			case rt.Topic != nil:
				name = *rt.Topic
			default:
				if name = s.lookup.topicNameByID(rt.TopicID); name == "" {
					return errUnknownTopicID
				}
				if !s.az.allowedTopic(rc, acl.OpDescribe, name) {
					// The id is not secret, the name is: it
					// stays null, as Kafka answers.
					return errTopicAuthorization
				}
				st.Topic = &name
			}
			if !s.az.allowedTopic(rc, acl.OpDelete, name) {
				return errTopicAuthorization
			}
			if isInternalTopic(name) {
				return fmt.Errorf("%w: %s is an internal topic", errTopicAuthorization, name)
			}
			if id, ok := s.md.topicID(name); ok {
				st.TopicID = id
			}
			if err := mq.Record(float64(len(s.md.partitions(name)))); err != nil {
				return err
			}
			return s.admin.deleteTopic(context.Background(), name)
		}()
		if err != nil {
			st.ErrorCode = errorCode(err)
			st.ErrorMessage = errorMessage(err)
			if st.ErrorCode == kerr.UnknownServerError.Code {
				s.log.Error("server: delete topic", "err", err)
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	rc.throttle(quota.ControllerMutation, mq.ThrottleMs())
	return kresp(resp), nil
}
