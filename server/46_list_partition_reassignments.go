package server

// ListPartitionReassignments (key 46), served v0, cluster mode only
// (KIP-455; kafka-reassign-partitions.sh --verify/--list,
// kadm.ListPartitionReassignments).
//
//	v0: flexible; topics and partitions asked for (null: every move)
//
// The controller answers from its context (cluster.Node.ListPartitionReassignments):
// each partition being moved with its replicas (RS: the target, then the
// replicas leaving), adding and removing replicas; partitions asked for that
// are not moving are left out, as Kafka does. Any other broker answers
// NOT_CONTROLLER. Describe on the CLUSTER is required
// (CLUSTER_AUTHORIZATION_FAILED for the whole request otherwise).

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/cluster"
	"github.com/sluice/sluice/metadata"
)

func handleListPartitionReassignments(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.ListPartitionReassignmentsRequest)
	resp := r.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	if !s.az.allowedCluster(rc, acl.OpDescribe) {
		resp.ErrorCode = errorCode(errClusterAuthorization)
		return kresp(resp), nil
	}
	ra, ok := s.ib.(reassigner)
	if !ok {
		resp.ErrorCode = errorCode(cluster.ErrNotController)
		return kresp(resp), nil
	}
	var tps []metadata.TopicPartition // nil: all
	if r.Topics != nil {
		// Deduplicated through a set: a frame can name ~260,000
		// partitions, which a scan per entry would make quadratic.
		tps = []metadata.TopicPartition{}
		seen := map[metadata.TopicPartition]struct{}{}
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				tp := metadata.TopicPartition{Topic: t.Topic, Partition: p}
				if _, dup := seen[tp]; !dup {
					seen[tp] = struct{}{}
					tps = append(tps, tp)
				}
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), reassignTimeout(r.TimeoutMillis))
	list, err := ra.listReassignments(ctx, tps)
	cancel()
	if err != nil {
		resp.ErrorCode = errorCode(err)
		resp.ErrorMessage = errorMessage(err)
		return kresp(resp), nil
	}
	slices.SortFunc(list, func(a, b cluster.PartitionReassignment) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Partition - b.Partition)
	})
	for _, pr := range list {
		if n := len(resp.Topics); n == 0 || resp.Topics[n-1].Topic != pr.Topic {
			t := kmsg.NewListPartitionReassignmentsResponseTopic()
			t.Topic = pr.Topic
			resp.Topics = append(resp.Topics, t)
		}
		p := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
		p.Partition, p.Replicas, p.AddingReplicas, p.RemovingReplicas = pr.Partition, pr.Replicas, pr.Adding, pr.Removing
		if p.AddingReplicas == nil {
			p.AddingReplicas = []int32{}
		}
		if p.RemovingReplicas == nil {
			p.RemovingReplicas = []int32{}
		}
		t := &resp.Topics[len(resp.Topics)-1]
		t.Partitions = append(t.Partitions, p)
	}
	return kresp(resp), nil
}
