package server

// CreatePartitions (key 37), served v0-v3.
//
//	v0: per topic, the new total partition count and optionally where the new
//	    partitions go; validate_only
//	v1: no changes
//	v2: flexible
//	v3: no changes
//
// A count not above the current one is INVALID_PARTITIONS. An assignment
// must list one replica set per new partition, each exactly this broker.
// Existing partitions are untouched, so keys hashed to them before may now
// map elsewhere, as in Kafka.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleCreatePartitions(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.CreatePartitionsRequest)
	if s.cm != nil {
		return s.cm.handleCreatePartitions(r), nil
	}
	resp := r.ResponseKind().(*kmsg.CreatePartitionsResponse)
	seen := map[string]int{}
	for _, rt := range r.Topics {
		seen[rt.Topic]++
	}
	s.topics.admin.Lock()
	defer s.topics.admin.Unlock()
	for _, rt := range r.Topics {
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		err := s.createPartitionsLocked(rt, r.ValidateOnly, seen[rt.Topic] > 1)
		if err != nil {
			st.ErrorCode = errorCode(err)
			st.ErrorMessage = errorMessage(err)
			if st.ErrorCode == kerr.UnknownServerError.Code {
				s.log.Error("server: create partitions", "topic", rt.Topic, "err", err)
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	return kresp(resp), nil
}

// REQUIRES: s.topics.admin held.
func (s *Server) createPartitionsLocked(rt kmsg.CreatePartitionsRequestTopic, validateOnly, duplicate bool) error {
	if duplicate {
		return fmt.Errorf("%w: topic %q appears more than once in the request", errInvalidRequest, rt.Topic)
	}
	t := s.topics.get(rt.Topic)
	if t == nil {
		return errUnknownTopicOrPartition
	}
	cur := int32(len(t.parts))
	if rt.Count <= cur {
		return fmt.Errorf("%w: topic %q has %d partitions; the new count %d must be larger", errInvalidPartitions, t.name, cur, rt.Count)
	}
	if rt.Count > s.maxPartitions {
		return fmt.Errorf("%w: %d partitions is above the limit of %d", errInvalidPartitions, rt.Count, s.maxPartitions)
	}
	if rt.Assignment != nil {
		if int32(len(rt.Assignment)) != rt.Count-cur {
			return fmt.Errorf("%w: %d assignments for %d new partitions", errInvalidReplicaAssignment, len(rt.Assignment), rt.Count-cur)
		}
		for _, a := range rt.Assignment {
			if len(a.Replicas) != 1 || a.Replicas[0] != s.nodeID {
				return fmt.Errorf("%w: replicas %v; the only broker is %d", errInvalidReplicaAssignment, a.Replicas, s.nodeID)
			}
		}
	}
	if validateOnly {
		return nil
	}
	m := t.meta
	m.Partitions = rt.Count
	m.Assignment = append([][]int32(nil), m.Assignment...)
	for i := cur; i < rt.Count; i++ {
		m.Assignment = append(m.Assignment, []int32{s.nodeID})
	}
	if err := s.meta.PutTopic(m); err != nil {
		return fmt.Errorf("server: store topic %q: %w", t.name, err)
	}
	nt := *t
	nt.meta = m
	nt.parts = append([]*partition(nil), t.parts...)
	for i := cur; i < rt.Count; i++ {
		p, err := s.openPartition(&nt, i, true)
		if err != nil {
			// Publish what opened; the metastore already says Count, and
			// the next start creates the missing logs.
			s.topics.publish(&nt)
			return err
		}
		nt.parts = append(nt.parts, p)
	}
	s.topics.publish(&nt)
	s.log.Info("server: added partitions", "topic", t.name, "partitions", rt.Count)
	return nil
}
