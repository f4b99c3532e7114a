package server

// CreateTopics (key 19), served v0-v7.
//
//	v0: topics with partitions, replication factor, replica assignment, configs
//	v1: validate_only; per-topic error message
//	v2: throttle time
//	v4: -1 partitions / replication factor mean the broker defaults (KIP-464)
//	v5: flexible; the response echoes partitions, replication factor and the
//	    resulting configs (KIP-525)
//	v7: topic id in the response
//
// Names are checked as Kafka checks them (1-249 of [a-zA-Z0-9._-], not "."
// or "..", no collision with an existing topic once '.' becomes '_'). The
// only replication factor a single broker can satisfy is 1; a manual
// assignment must put every partition on this broker. Sluice applies -1
// defaults at every version. timeout_ms is ignored: creation is synchronous.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleCreateTopics(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.CreateTopicsRequest)
	if s.cm != nil {
		return s.cm.handleCreateTopics(r), nil
	}
	resp := r.ResponseKind().(*kmsg.CreateTopicsResponse)

	seen := map[string]int{}
	for _, rt := range r.Topics {
		seen[rt.Topic]++
	}
	s.topics.admin.Lock()
	defer s.topics.admin.Unlock()
	for _, rt := range r.Topics {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		st.NumPartitions, st.ReplicationFactor = -1, -1
		t, err := s.createOne(rt, r.ValidateOnly, seen[rt.Topic] > 1)
		if err != nil {
			st.ErrorCode = errorCode(err)
			st.ErrorMessage = errorMessage(err)
			if st.ErrorCode == kerr.UnknownServerError.Code {
				s.log.Error("server: create topic", "topic", rt.Topic, "err", err)
			}
			resp.Topics = append(resp.Topics, st)
			continue
		}
		st.TopicID = t.id
		st.NumPartitions = t.meta.Partitions
		st.ReplicationFactor = t.meta.ReplicationFactor
		for _, d := range topicConfigDefs {
			v, src := s.configValue(t.meta.Configs, d.name)
			c := kmsg.NewCreateTopicsResponseTopicConfig()
			c.Name, c.Value, c.Source = d.name, &v, src
			st.Configs = append(st.Configs, c)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return kresp(resp), nil
}

// createOne validates and (unless validateOnly) creates one topic. With
// validateOnly the returned topic is a description only.
// REQUIRES: s.topics.admin held.
func (s *Server) createOne(rt kmsg.CreateTopicsRequestTopic, validateOnly, duplicate bool) (*topic, error) {
	if duplicate {
		return nil, fmt.Errorf("%w: topic %q appears more than once in the request", errInvalidRequest, rt.Topic)
	}
	spec := topicSpec{name: rt.Topic, partitions: rt.NumPartitions, rf: rt.ReplicationFactor, configs: map[string]string{}}
	for _, c := range rt.Configs {
		if c.Value == nil {
			return nil, fmt.Errorf("%w: null value for config %q", errInvalidConfig, c.Name)
		}
		spec.configs[c.Name] = *c.Value
	}
	asg, err := replicaAssignment(rt)
	if err != nil {
		return nil, err
	}
	if asg != nil {
		for _, reps := range asg {
			for _, b := range reps {
				if b != s.nodeID {
					return nil, fmt.Errorf("%w: unknown broker %d", errInvalidReplicaAssignment, b)
				}
			}
		}
		spec.partitions, spec.rf = int32(len(asg)), int16(len(asg[0]))
	}
	if err := s.checkNewTopic(&spec); err != nil {
		return nil, err
	}
	if validateOnly {
		return &topic{name: spec.name, meta: metaPreview(spec)}, nil
	}
	return s.createTopicLocked(spec)
}

// replicaAssignment returns rt's manual replica assignment indexed by
// partition (nil when it has none), checked for shape as Kafka checks it:
// partitions 0..n-1 each once (in any order), the same non-zero number of
// replicas for each, and no partition count or replication factor besides.
// Which brokers it names is for the caller to check.
func replicaAssignment(rt kmsg.CreateTopicsRequestTopic) ([][]int32, error) {
	if len(rt.ReplicaAssignment) == 0 {
		return nil, nil
	}
	if rt.NumPartitions != -1 || rt.ReplicationFactor != -1 {
		return nil, fmt.Errorf("%w: both a replica assignment and partitions/replication factor were given", errInvalidRequest)
	}
	out := make([][]int32, len(rt.ReplicaAssignment))
	rf := len(rt.ReplicaAssignment[0].Replicas)
	for _, a := range rt.ReplicaAssignment {
		if a.Partition < 0 || int(a.Partition) >= len(out) || out[a.Partition] != nil {
			return nil, fmt.Errorf("%w: partitions must be 0..%d, each once (got %d)", errInvalidReplicaAssignment, len(out)-1, a.Partition)
		}
		if len(a.Replicas) != rf || rf == 0 {
			return nil, fmt.Errorf("%w: every partition needs the same, non-zero number of replicas", errInvalidReplicaAssignment)
		}
		out[a.Partition] = a.Replicas
	}
	return out, nil
}
