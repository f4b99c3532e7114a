package server

// AlterPartitionReassignments (key 45), served v0, cluster mode only
// (KIP-455; kafka-reassign-partitions.sh, kadm.AlterPartitionAssignments).
//
//	v0: flexible; per partition the target replicas, null to cancel
//
// The controller carries the moves out (cluster.Node.AlterPartitionReassignments,
// Kafka's ZooKeeper-mode algorithm); any other broker answers NOT_CONTROLLER
// for the whole request, as Kafka's ZooKeeper-mode brokers do (clients send
// it to the controller). Alter on the CLUSTER is required
// (CLUSTER_AUTHORIZATION_FAILED otherwise, at the top and for every
// partition, as Kafka's getErrorResponse answers). Per
// partition: no error (started, changed, cancelled or completed),
// INVALID_REPLICA_ASSIGNMENT (empty list, duplicate or negative id, a new
// replica on a broker that is not live), NO_REASSIGNMENT_IN_PROGRESS (a
// cancellation of a partition not moving), UNKNOWN_TOPIC_OR_PARTITION
// (unknown, or its topic is being deleted). A request that names one
// partition twice keeps the last entry, as Kafka's map does.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/cluster"
	"github.com/sluice/sluice/metadata"
)

// reassigner is the cluster plane's side of partition reassignment.
type reassigner interface {
	alterReassignments(ctx context.Context, targets map[metadata.TopicPartition][]int32) (map[metadata.TopicPartition]error, error)
	listReassignments(ctx context.Context, tps []metadata.TopicPartition) ([]cluster.PartitionReassignment, error)
}

var _ reassigner = (*zkPlane)(nil)

func (zp *zkPlane) alterReassignments(ctx context.Context, targets map[metadata.TopicPartition][]int32) (map[metadata.TopicPartition]error, error) {
	return zp.node.AlterPartitionReassignments(ctx, targets)
}

func (zp *zkPlane) listReassignments(ctx context.Context, tps []metadata.TopicPartition) ([]cluster.PartitionReassignment, error) {
	return zp.node.ListPartitionReassignments(ctx, tps)
}

// reassignTimeout is how long a reassignment request waits for the
// controller: the request's timeout, at least a second.
func reassignTimeout(ms int32) time.Duration {
	return time.Duration(max(ms, 1000)) * time.Millisecond
}

func handleAlterPartitionReassignments(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.AlterPartitionAssignmentsRequest)
	resp := r.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	if !s.az.allowedCluster(rc, acl.OpAlter) {
		// Kafka's getErrorResponse: the error at the top and in every
		// partition asked for.
		code := errorCode(errClusterAuthorization)
		resp.ErrorCode = code
		for _, t := range r.Topics {
			rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return kresp(resp), nil
	}
	ra, ok := s.ib.(reassigner)
	if !ok {
		resp.ErrorCode = errorCode(cluster.ErrNotController)
		return kresp(resp), nil
	}
	targets := map[metadata.TopicPartition][]int32{}
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			targets[metadata.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = p.Replicas
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), reassignTimeout(r.TimeoutMillis))
	results, err := ra.alterReassignments(ctx, targets)
	cancel()
	if err != nil {
		resp.ErrorCode = errorCode(err)
		resp.ErrorMessage = errorMessage(err)
		return kresp(resp), nil
	}
	resp.Topics = topicResults(results,
		func(partition int32, code int16, msg *string) kmsg.AlterPartitionAssignmentsResponseTopicPartition {
			p := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			p.Partition, p.ErrorCode, p.ErrorMessage = partition, code, msg
			return p
		},
		func(topic string, parts []kmsg.AlterPartitionAssignmentsResponseTopicPartition) kmsg.AlterPartitionAssignmentsResponseTopic {
			t := kmsg.NewAlterPartitionAssignmentsResponseTopic()
			t.Topic, t.Partitions = topic, parts
			return t
		})
	return kresp(resp), nil
}
