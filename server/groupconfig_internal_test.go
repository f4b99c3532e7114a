package server

// Authorization of GROUP config resources, as Kafka's KafkaApis:
// AlterConfigs on the group to alter (IncrementalAlterConfigs and
// AlterConfigs), DescribeConfigs on the group to describe, else
// GROUP_AUTHORIZATION_FAILED for that resource.

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/config"
)

func TestGroupConfigAuthorization(t *testing.T) {
	s, az := newDenyServer(t, nil)
	v := "6000"
	alter := func(group string) int16 {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = resourceGroup, group
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = "consumer.heartbeat.interval.ms", &v
		rr.Configs = append(rr.Configs, c)
		req.Resources = append(req.Resources, rr)
		return mustCall(t, s, 1, req).(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode
	}
	alterLegacy := func(group string) int16 {
		req := kmsg.NewPtrAlterConfigsRequest()
		rr := kmsg.NewAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = resourceGroup, group
		c := kmsg.NewAlterConfigsRequestResourceConfig()
		c.Name, c.Value = "consumer.heartbeat.interval.ms", &v
		rr.Configs = append(rr.Configs, c)
		req.Resources = append(req.Resources, rr)
		return mustCall(t, s, 1, req).(*kmsg.AlterConfigsResponse).Resources[0].ErrorCode
	}
	describe := func(group string) (int16, int) {
		req := kmsg.NewPtrDescribeConfigsRequest()
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = resourceGroup, group
		req.Resources = append(req.Resources, rr)
		r := mustCall(t, s, 1, req).(*kmsg.DescribeConfigsResponse).Resources[0]
		return r.ErrorCode, len(r.Configs)
	}

	az.set(denyKey{acl.OpAlterConfigs, acl.ResourceGroup, "g"})
	if c := alter("g"); c != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("incremental alter without AlterConfigs on the group: %s", code(c))
	}
	if c := alterLegacy("g"); c != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("alter without AlterConfigs on the group: %s", code(c))
	}
	if c := alter("h"); c != 0 {
		t.Fatalf("incremental alter of another group: %s", code(c))
	}
	if c, n := describe("g"); c != 0 || n != len(config.GroupKeys()) {
		t.Fatalf("describe with DescribeConfigs: %s, %d configs", code(c), n)
	}
	az.set(denyKey{acl.OpDescribeConfigs, acl.ResourceGroup, "g"})
	if c, n := describe("g"); c != kerr.GroupAuthorizationFailed.Code || n != 0 {
		t.Fatalf("describe without DescribeConfigs on the group: %s, %d configs", code(c), n)
	}
	if got := s.groupConfig("h")["consumer.heartbeat.interval.ms"]; got != v {
		t.Fatalf("h's stored heartbeat interval %q, want %s", got, v)
	}
}
