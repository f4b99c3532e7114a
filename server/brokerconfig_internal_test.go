package server

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
)

// TestBrokerConfigsAuthorizeCluster: altering a BROKER resource needs
// AlterConfigs on the cluster and describing one DescribeConfigs on the
// cluster, as Kafka's KafkaApis checks; refused, nothing is stored; allowed,
// the value applies.
func TestBrokerConfigsAuthorizeCluster(t *testing.T) {
	s, az := newDenyServer(t, nil)
	incremental := func(name, key, value string) int16 {
		r := kmsg.NewPtrIncrementalAlterConfigsRequest()
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, name
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = key, kmsg.StringPtr(value)
		rr.Configs = append(rr.Configs, c)
		r.Resources = append(r.Resources, rr)
		return mustCall(t, s, 1, r).(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode
	}
	legacy := func(name, key, value string) int16 {
		r := kmsg.NewPtrAlterConfigsRequest()
		rr := kmsg.NewAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, name
		c := kmsg.NewAlterConfigsRequestResourceConfig()
		c.Name, c.Value = key, kmsg.StringPtr(value)
		rr.Configs = append(rr.Configs, c)
		r.Resources = append(r.Resources, rr)
		return mustCall(t, s, 1, r).(*kmsg.AlterConfigsResponse).Resources[0].ErrorCode
	}
	describe := func(name string) int16 {
		r := kmsg.NewPtrDescribeConfigsRequest()
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, name
		r.Resources = append(r.Resources, rr)
		return mustCall(t, s, 1, r).(*kmsg.DescribeConfigsResponse).Resources[0].ErrorCode
	}
	az.set(denyKey{acl.OpAlterConfigs, acl.ResourceCluster, "kafka-cluster"}, denyKey{acl.OpDescribeConfigs, acl.ResourceCluster, "kafka-cluster"})
	for _, name := range []string{"0", ""} {
		if c := incremental(name, "log.retention.ms", "1000"); kerr.ErrorForCode(c) != kerr.ClusterAuthorizationFailed {
			t.Errorf("IncrementalAlterConfigs %q denied: %s", name, code(c))
		}
		if c := legacy(name, "log.retention.ms", "1000"); kerr.ErrorForCode(c) != kerr.ClusterAuthorizationFailed {
			t.Errorf("AlterConfigs %q denied: %s", name, code(c))
		}
		if c := describe(name); kerr.ErrorForCode(c) != kerr.ClusterAuthorizationFailed {
			t.Errorf("DescribeConfigs %q denied: %s", name, code(c))
		}
	}
	if def, own := s.currentConfig().DynamicLayers(); len(def) != 0 || len(own) != 0 {
		t.Fatalf("denied alters stored %v %v", def, own)
	}
	az.set()
	if c := incremental("0", "log.retention.ms", "1000"); c != 0 {
		t.Fatalf("IncrementalAlterConfigs allowed: %s", code(c))
	}
	if c := legacy("", "log.retention.bytes", "5000"); c != 0 {
		t.Fatalf("AlterConfigs allowed: %s", code(c))
	}
	cur := s.currentConfig()
	if cur.LogRetention.Milliseconds() != 1000 || cur.LogRetentionBytes != 5000 {
		t.Fatalf("applied log.retention.ms %d, log.retention.bytes %d", cur.LogRetention.Milliseconds(), cur.LogRetentionBytes)
	}
	if c := describe("0"); c != 0 {
		t.Fatalf("DescribeConfigs allowed: %s", code(c))
	}
}
