package brokertest

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/broker"
	"github.com/sluice/sluice/config"
)

// WaitForBrokers waits (up to 30 s) until every one of bs answers Metadata
// with n brokers and a controller. Brokers register in ZooKeeper and learn
// of each other asynchronously, so a test that creates a topic with a
// replication factor above 1 right after starting its brokers can get
// INVALID_REPLICATION_FACTOR from a controller that has not yet seen them
// all. opts are extra client options (TLS, SASL) for reaching the brokers.
// The request is sent raw to each broker: kadm would answer from the
// client's metadata cache.
func WaitForBrokers(t testing.TB, n int, opts []kgo.Opt, bs ...*broker.Broker) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, b := range bs {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.Addr())}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			m, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl.SeedBrokers()[0])
			cancel()
			if err == nil && len(m.Brokers) == n && m.ControllerID >= 0 {
				break
			}
			if time.Now().After(deadline) {
				cl.Close()
				t.Fatalf("broker %s: metadata %+v, %v: want %d brokers and a controller", b.Addr(), m, err, n)
			}
			time.Sleep(50 * time.Millisecond)
		}
		cl.Close()
	}
}

// StartCluster starts n in-process brokers in cluster mode (ids 1..n) on
// the ZooKeeper at zkAddr, under the chroot /sluice, with what the tests of
// a small cluster want (no controlled shutdown, offsets topic RF 1, no
// initial rebalance delay), then overrides; it returns once every broker
// sees all n (WaitForBrokers), so replicated topics can be created at once.
// The brokers use PLAINTEXT listeners unless overrides change that, in
// which case the caller waits itself with the client options it needs.
func StartCluster(t testing.TB, n int, backend, zkAddr string, overrides ...func(*config.Config)) []*broker.Broker {
	t.Helper()
	var bs []*broker.Broker
	for id := int32(1); id <= int32(n); id++ {
		bs = append(bs, Start(t, backend, append([]func(*config.Config){func(c *config.Config) {
			c.BrokerID = id
			c.ZooKeeperConnect = zkAddr + "/sluice"
			c.ControlledShutdownEnable = false
			c.OffsetsTopicReplication = 1
			c.GroupInitialRebalanceDelay = 0
		}}, overrides...)...))
	}
	WaitForBrokers(t, n, nil, bs...)
	return bs
}
