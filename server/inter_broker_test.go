package server_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/broker/brokertest"
)

// TestSingleNodeHidesClusterAPIs: a single-node broker does not advertise
// the inter-broker APIs (LeaderAndIsr, StopReplica, UpdateMetadata,
// ControlledShutdown), so no client or tool mistakes it for a cluster member.
func TestSingleNodeHidesClusterAPIs(t *testing.T) {
	b := brokertest.Start(t, "memory")
	rc := dialRaw(t, b.Addr())
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1"
	resp := rc.Do(req).(*kmsg.ApiVersionsResponse)
	for _, k := range resp.ApiKeys {
		if k.ApiKey >= 4 && k.ApiKey <= 7 {
			t.Errorf("single-node ApiVersions lists %s", kmsg.NameForKey(k.ApiKey))
		}
	}
}
