package broker_test

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/internal/zktest"
)

// TestCloseStopsClusterSecurity: in cluster mode Close stops the SCRAM
// credential watch and the ZooKeeper ACL store's watches before it
// returns, instead of leaving them to end with the node.
func TestCloseStopsClusterSecurity(t *testing.T) {
	zk := zktest.Start(t)
	b := brokertest.Start(t, "memory", func(c *config.Config) {
		c.ZooKeeperConnect = zk.Addr() + "/sluice"
		c.ControlledShutdownEnable = false
		c.Listeners = []string{"PLAINTEXT://127.0.0.1:0", "SASL_PLAINTEXT://127.0.0.1:0"}
		c.SASLEnabledMechanisms = []string{"SCRAM-SHA-512"}
		c.AuthorizerClassName = "kafka.security.authorizer.AclAuthorizer"
		c.SuperUsers = []string{"User:ANONYMOUS"} // the controller's requests on PLAINTEXT
	})
	running := func() []string {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		var found []string
		for _, frame := range []string{"cluster.(*ScramStore).Watch", "cluster.(*ACLStore).watchChanges"} {
			if strings.Contains(string(buf), frame) {
				found = append(found, frame)
			}
		}
		return found
	}
	// The watches start on their own goroutines: wait until both show.
	for deadline := time.Now().Add(10 * time.Second); len(running()) != 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("before Close, running: %v; want the SCRAM and ACL watches (test out of date?)", running())
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if got := running(); len(got) != 0 {
		t.Fatalf("after Close, still running: %v", got)
	}
}
