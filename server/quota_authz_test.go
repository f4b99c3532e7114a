package server

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
)

// TestClientQuotasAuthorization: DescribeClientQuotas needs
// DescribeConfigs on the cluster and AlterClientQuotas AlterConfigs, as in
// Kafka's KafkaApis; a refused alteration changes nothing.
func TestClientQuotasAuthorization(t *testing.T) {
	s, az := newDenyServer(t, nil)
	alter := func() *kmsg.AlterClientQuotasResponse {
		req := kmsg.NewPtrAlterClientQuotasRequest()
		e := kmsg.NewAlterClientQuotasRequestEntry()
		ent := kmsg.NewAlterClientQuotasRequestEntryEntity()
		ent.Type, ent.Name = "user", kmsg.StringPtr("alice")
		op := kmsg.NewAlterClientQuotasRequestEntryOp()
		op.Key, op.Value = "producer_byte_rate", 1024
		e.Entity, e.Ops = append(e.Entity, ent), append(e.Ops, op)
		req.Entries = append(req.Entries, e)
		return mustCall(t, s, 1, req).(*kmsg.AlterClientQuotasResponse)
	}
	describe := func() *kmsg.DescribeClientQuotasResponse {
		return mustCall(t, s, 1, kmsg.NewPtrDescribeClientQuotasRequest()).(*kmsg.DescribeClientQuotasResponse)
	}
	az.set(denyKey{acl.OpAlterConfigs, acl.ResourceCluster, acl.ClusterName})
	if r := alter(); r.Entries[0].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("alter without AlterConfigs: %s", code(r.Entries[0].ErrorCode))
	}
	if r := describe(); r.ErrorCode != 0 || len(r.Entries) != 0 {
		t.Fatalf("after a refused alter: %s, %d entries", code(r.ErrorCode), len(r.Entries))
	}
	if s.quotas.Enabled() {
		t.Fatal("a refused alteration enabled quotas")
	}
	az.set(denyKey{acl.OpDescribeConfigs, acl.ResourceCluster, acl.ClusterName})
	if r := alter(); r.Entries[0].ErrorCode != 0 {
		t.Fatalf("alter with AlterConfigs: %s", code(r.Entries[0].ErrorCode))
	}
	if r := describe(); r.ErrorCode != kerr.ClusterAuthorizationFailed.Code || len(r.Entries) != 0 {
		t.Fatalf("describe without DescribeConfigs: %s, %d entries", code(r.ErrorCode), len(r.Entries))
	}
	az.set()
	if r := describe(); r.ErrorCode != 0 || len(r.Entries) != 1 {
		t.Fatalf("describe: %s, %d entries", code(r.ErrorCode), len(r.Entries))
	}
}
