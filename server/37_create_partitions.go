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
// must list one replica set per new partition, each of the topic's
// replication factor in distinct live brokers (on a single node: exactly
// this broker). Existing partitions are untouched, so keys hashed to them
// before may now map elsewhere, as in Kafka. A single node adds the
// partitions synchronously; a cluster writes the new assignment to
// ZooKeeper and the controller brings the partitions online.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/cluster"
	"github.com/sluice/sluice/quota"
	"github.com/sluice/sluice/tiered"
)

func handleCreatePartitions(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.CreatePartitionsRequest)
	resp := r.ResponseKind().(*kmsg.CreatePartitionsResponse)
	seen := map[string]int{}
	for _, rt := range r.Topics {
		seen[rt.Topic]++
	}
	mq := s.mutationQuota(rc, r.Version >= 3) // KIP-599: strict from v3
	for _, rt := range r.Topics {
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		asg, err := s.rules.checkNewPartitions(rt, seen[rt.Topic] > 1)
		// A name given twice is INVALID_REQUEST before Alter is checked,
		// as in Kafka's handleCreatePartitionsRequest.
		if seen[rt.Topic] <= 1 && !s.az.allowedTopic(rc, acl.OpAlter, rt.Topic) {
			err = errTopicAuthorization
		}
		if err == nil && !r.ValidateOnly {
			err = mq.Record(float64(rt.Count - int32(len(s.md.partitions(rt.Topic)))))
		}
		if err == nil && !r.ValidateOnly {
			err = s.admin.addPartitions(context.Background(), rt.Topic, rt.Count, asg)
		}
		if err != nil {
			st.ErrorCode = errorCode(err)
			st.ErrorMessage = errorMessage(err)
			if st.ErrorCode == kerr.UnknownServerError.Code {
				s.log.Error("server: create partitions", "topic", rt.Topic, "err", err)
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	rc.throttle(quota.ControllerMutation, mq.ThrottleMs())
	return kresp(resp), nil
}

// checkNewPartitions validates one topic of a CreatePartitions request
// against the control plane's view and returns its manual assignment (nil:
// automatic).
func (r *topicRules) checkNewPartitions(rt kmsg.CreatePartitionsRequestTopic, duplicate bool) ([][]int32, error) {
	if duplicate {
		return nil, fmt.Errorf("%w: topic %q appears more than once in the request", errInvalidRequest, rt.Topic)
	}
	if isInternalTopic(rt.Topic) {
		return nil, fmt.Errorf("%w: %s is an internal topic; its partition count is offsets.topic.num.partitions", errInvalidTopic, rt.Topic)
	}
	parts := r.md.partitions(rt.Topic)
	if parts == nil {
		return nil, errUnknownTopicOrPartition
	}
	if rt.Topic == tiered.RemoteLogMetadataTopic {
		// Records are spread over its partitions by a hash modulo their
		// count: brokers reading before and after a change would keep
		// different views of what is remote (Kafka's manager refuses to
		// start on a count other than the configured one).
		return nil, fmt.Errorf("%w: %s keeps the partition count it was created with: the remote log metadata is partitioned by it", errInvalidPartitions, rt.Topic)
	}
	cur := int32(len(parts))
	if rt.Count <= cur {
		return nil, fmt.Errorf("%w: topic %q has %d partitions; the new count %d must be larger", errInvalidPartitions, rt.Topic, cur, rt.Count)
	}
	if rt.Count > r.maxPartitions {
		return nil, fmt.Errorf("%w: %d partitions is above the limit of %d", errInvalidPartitions, rt.Count, r.maxPartitions)
	}
	if len(rt.Assignment) == 0 {
		return nil, nil
	}
	if int32(len(rt.Assignment)) != rt.Count-cur {
		return nil, fmt.Errorf("%w: %d assignments for %d new partitions", errInvalidReplicaAssignment, len(rt.Assignment), rt.Count-cur)
	}
	asg := make([][]int32, len(rt.Assignment))
	for i, a := range rt.Assignment {
		asg[i] = a.Replicas
	}
	if err := cluster.ValidateAssignment(asg, len(parts[0].Replicas), liveIDs(r.md.brokers())); err != nil {
		return nil, err
	}
	return asg, nil
}
