package server

// DeleteTopics (key 20), served v0-v6.
//
//	v0: topic names and a timeout
//	v1: throttle time
//	v4: flexible
//	v5: per-topic error message
//	v6: topics by name or by id (KIP-516)
//
// Deletion is synchronous: the topic leaves lookups at once, its partitions
// close (ending long polls on them), its logs and its metastore entry are
// deleted before the answer. delete.topic.enable=false answers
// TOPIC_DELETION_DISABLED.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleDeleteTopics(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.DeleteTopicsRequest)
	if s.cm != nil {
		return s.cm.handleDeleteTopics(r), nil
	}
	resp := r.ResponseKind().(*kmsg.DeleteTopicsResponse)
	reqs := r.Topics
	if r.Version < 6 {
		reqs = nil
		for _, n := range r.TopicNames {
			reqs = append(reqs, kmsg.DeleteTopicsRequestTopic{Topic: &n})
		}
	}
	s.topics.admin.Lock()
	defer s.topics.admin.Unlock()
	for _, rt := range reqs {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		var name string
		if rt.Topic != nil {
			name = *rt.Topic
		}
		err := func() error {
			if !s.cfg.DeleteTopicEnable {
				return errTopicDeletionDisabled
			}
			if rt.Topic != nil && rt.TopicID != ([16]byte{}) {
				return fmt.Errorf("%w: give a topic name or a topic id, not both", errInvalidRequest)
			}
			t, err := s.resolveTopic(name, rt.TopicID)
			if err != nil {
				return err
			}
			n := t.name
			st.Topic, st.TopicID = &n, t.id
			return s.deleteTopicLocked(t)
		}()
		if err != nil {
			st.ErrorCode = errorCode(err)
			st.ErrorMessage = errorMessage(err)
			if st.ErrorCode == kerr.UnknownServerError.Code {
				s.log.Error("server: delete topic", "topic", name, "err", err)
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	return kresp(resp), nil
}
