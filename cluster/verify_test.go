package cluster

import (
	"errors"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestVerifyReplicaEpoch: a follower fetch passes with the current
// registration epoch of a live broker and nothing else; a replica id that
// is not a live broker is refused without a ZooKeeper read (even one
// registered in ZooKeeper, as a forger could arrange, is refused until the
// controller lists it) and leaves nothing cached, whatever ids a client
// makes up.
func TestVerifyReplicaEpoch(t *testing.T) {
	tc := newTestCluster(t, 2, nil)
	n, other := tc.nodes[1], tc.nodes[2]
	epoch := other.BrokerEpoch()
	// Registered in ZooKeeper, never listed by the controller.
	if _, err := tc.client.Create("/sluice"+brokerPath(77), []byte(`{}`), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	_, st, err := tc.client.Get("/sluice" + brokerPath(77))
	if err != nil {
		t.Fatal(err)
	}
	live := func(ids ...int32) {
		req := kmsg.NewPtrUpdateMetadataRequest()
		req.ControllerEpoch = 1
		for _, id := range ids {
			lb := kmsg.NewUpdateMetadataRequestLiveBroker()
			lb.ID, lb.Host, lb.Port = id, "127.0.0.1", 9000+id
			req.LiveBrokers = append(req.LiveBrokers, lb)
		}
		if !n.Metadata().Apply(req) {
			t.Fatal("UpdateMetadata not applied")
		}
	}
	cached := func() int {
		n.verify.replicaMu.Lock()
		defer n.verify.replicaMu.Unlock()
		return len(n.verify.replicas)
	}
	check := func(what string, id int32, epoch int64, want error) {
		t.Helper()
		if err := n.VerifyReplicaEpoch(id, epoch); !errors.Is(err, want) || (want == nil) != (err == nil) {
			t.Errorf("%s: VerifyReplicaEpoch(%d, %d) = %v, want %v", what, id, epoch, err, want)
		}
	}

	check("broker 2 before any UpdateMetadata", 2, epoch, ErrStaleBrokerEpoch)
	check("registered, not live", 77, st.Czxid, ErrStaleBrokerEpoch)
	for id := int32(1000); id < 2000; id++ {
		check("made-up id", id, 1, ErrStaleBrokerEpoch)
	}
	if c := cached(); c != 0 {
		t.Fatalf("%d replica epochs cached for brokers that are not live, want 0", c)
	}

	live(1, 2)
	check("live broker, current epoch", 2, epoch, nil)
	check("live broker, another epoch", 2, epoch+1, ErrStaleBrokerEpoch)
	check("registered, still not live", 77, st.Czxid, ErrStaleBrokerEpoch)
	if c := cached(); c != 1 {
		t.Fatalf("%d replica epochs cached, want 1 (broker 2)", c)
	}

	live(1) // broker 2 leaves: its entry goes at its next check
	check("broker 2 no longer live", 2, epoch, ErrStaleBrokerEpoch)
	if c := cached(); c != 0 {
		t.Fatalf("%d replica epochs cached after broker 2 left, want 0", c)
	}
}
