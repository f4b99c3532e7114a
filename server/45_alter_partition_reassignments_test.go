package server

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
)

// TestPartitionReassignmentsAuthorization: AlterPartitionReassignments
// needs Alter on the cluster and ListPartitionReassignments Describe, as
// Kafka's KafkaApis checks them; refused, the whole request is
// CLUSTER_AUTHORIZATION_FAILED. Allowed on a broker with no controller
// behind it, both answer NOT_CONTROLLER.
func TestPartitionReassignmentsAuthorization(t *testing.T) {
	s, a := newACLServer(t, "t")
	s.apis = clusterAPIs
	alter := func() int16 {
		req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
		rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		rp.Replicas = []int32{1}
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := mustCall(t, s, 0, req).(*kmsg.AlterPartitionAssignmentsResponse)
		switch {
		case resp.ErrorCode == kerr.ClusterAuthorizationFailed.Code:
			// Kafka's getErrorResponse: in every partition too.
			if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != resp.ErrorCode {
				t.Fatalf("refused without the error per partition: %+v", resp.Topics)
			}
		case len(resp.Topics) != 0:
			t.Fatalf("per-partition answers with top-level error %d: %+v", resp.ErrorCode, resp.Topics)
		}
		return resp.ErrorCode
	}
	list := func() int16 {
		return mustCall(t, s, 0, kmsg.NewPtrListPartitionReassignmentsRequest()).(*kmsg.ListPartitionReassignmentsResponse).ErrorCode
	}
	for _, tc := range []struct {
		name        string
		ops         []acl.Operation
		alter, list error
	}{
		{"none", nil, kerr.ClusterAuthorizationFailed, kerr.ClusterAuthorizationFailed},
		{"describe", []acl.Operation{acl.OpDescribe}, kerr.ClusterAuthorizationFailed, kerr.NotController},
		{"alter", []acl.Operation{acl.OpAlter}, kerr.NotController, kerr.NotController}, // Alter implies Describe
	} {
		t.Run(tc.name, func(t *testing.T) {
			a.Load(grant(acl.PatternLiteral, acl.ResourceCluster, acl.ClusterName, acl.PermissionAllow, tc.ops...))
			if got := kerr.ErrorForCode(alter()); got != tc.alter {
				t.Errorf("alter: %v, want %v", got, tc.alter)
			}
			if got := kerr.ErrorForCode(list()); got != tc.list {
				t.Errorf("list: %v, want %v", got, tc.list)
			}
		})
	}
	if _, ok := apis[apiKeyAlterPartitionReassign]; ok {
		t.Error("a single node serves AlterPartitionReassignments")
	}
}
