package broker_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/broker"
	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/internal/zktest"
)

// isrConflictCluster is three in-process brokers, a topic "c" (one
// partition, replication factor 3) with its leader, and the partition's
// state znode changed behind the leader's back before the leader's next
// ISR write: a follower f2 (neither the leader nor the controller) is
// stopped, so the controller takes it out of the ISR; then rewrite edits
// the state znode; then f2 starts again, catches up, and the leader's
// expansion of the ISR meets a version conflict.
type isrConflictCluster struct {
	t           *testing.T
	srv         *zktest.Server
	zc          *zk.Conn
	brokers     map[int32]*broker.Broker
	leader, f1  int32
	statePath   string
	stateBefore map[string]any
}

func startISRConflict(t *testing.T, rewrite func(st map[string]any, leader, f1 int32)) *isrConflictCluster {
	srv := zktest.Start(t)
	bs := brokertest.StartCluster(t, 3, "memory", srv.Addr())
	c := &isrConflictCluster{t: t, srv: srv, brokers: map[int32]*broker.Broker{}, statePath: "/sluice/brokers/topics/c/partitions/0/state"}
	for i, b := range bs {
		c.brokers[int32(i+1)] = b
	}
	zc, _, err := zk.Connect([]string{srv.Addr()}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(zc.Close)
	c.zc = zc

	adm := c.admin()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if res, err := adm.CreateTopic(ctx, 1, 3, nil, "c"); err != nil || res.Err != nil {
		t.Fatalf("create: %v %v", err, res.Err)
	}
	st := c.waitState("a full ISR", func(st map[string]any) bool { return len(st["isr"].([]any)) == 3 })
	c.leader = int32(st["leader"].(float64))
	m, err := adm.BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ctl := m.Controller
	var f2 int32
	for id := int32(1); id <= 3; id++ {
		if id != c.leader && id != ctl {
			f2 = id
		}
	}
	for id := int32(1); id <= 3; id++ {
		if id != c.leader && id != f2 {
			c.f1 = id
		}
	}
	t.Logf("leader %d, controller %d, stopping follower %d", c.leader, ctl, f2)
	c.produce(kgo.LeaderAck()) // something for f2 to catch up on

	if err := c.brokers[f2].Close(); err != nil {
		t.Fatal(err)
	}
	delete(c.brokers, f2)
	c.waitState("the controller to take broker f2 out of the ISR", func(st map[string]any) bool {
		return len(st["isr"].([]any)) == 2
	})
	time.Sleep(500 * time.Millisecond) // let the LeaderAndIsr with that version reach the leader
	data, stat, err := zc.Get(c.statePath)
	if err != nil {
		t.Fatal(err)
	}
	var cur map[string]any
	if err := json.Unmarshal(data, &cur); err != nil {
		t.Fatal(err)
	}
	c.stateBefore = cur
	rewrite(cur, c.leader, c.f1)
	data, _ = json.Marshal(cur)
	if _, err := zc.Set(c.statePath, data, stat.Version); err != nil {
		t.Fatal(err)
	}
	t.Logf("state rewritten behind the leader's back: %s", data)

	c.brokers[f2] = brokertest.Start(t, "memory", func(cf *config.Config) {
		cf.BrokerID = f2
		cf.ZooKeeperConnect = srv.Addr() + "/sluice"
		cf.ControlledShutdownEnable = false
		cf.OffsetsTopicReplication = 1
		cf.GroupInitialRebalanceDelay = 0
	})
	return c
}

func (c *isrConflictCluster) admin() *kadm.Client {
	var seeds []string
	for _, b := range c.brokers {
		seeds = append(seeds, b.Addr())
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// state reads the partition state znode.
func (c *isrConflictCluster) state() map[string]any {
	data, _, err := c.zc.Get(c.statePath)
	if err != nil {
		return nil
	}
	var st map[string]any
	if json.Unmarshal(data, &st) != nil {
		return nil
	}
	return st
}

func (c *isrConflictCluster) waitState(what string, cond func(map[string]any) bool) map[string]any {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if st := c.state(); st != nil && cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("timed out waiting for %s; state %v", what, c.state())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// produce writes one record to the leader alone (its own metadata names
// itself) and returns the outcome; no retries.
func (c *isrConflictCluster) produce(acks kgo.Acks) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.brokers[c.leader].Addr()), kgo.RequiredAcks(acks),
		kgo.DisableIdempotentWrite(), kgo.RecordRetries(0), kgo.RecordDeliveryTimeout(5*time.Second))
	if err != nil {
		c.t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return cl.ProduceSync(ctx, &kgo.Record{Topic: "c", Value: []byte("v")}).FirstErr()
}

// A leader whose ISR write is refused because the controller moved
// leadership meanwhile (the state names another leader at a newer epoch)
// stops answering as leader at once, instead of accepting writes for an
// epoch that is over until the controller's LeaderAndIsr reaches it.
func TestISRConflictWithNewLeaderFencesOldLeader(t *testing.T) {
	c := startISRConflict(t, func(st map[string]any, leader, f1 int32) {
		st["leader"] = float64(f1)
		st["leader_epoch"] = st["leader_epoch"].(float64) + 1
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := c.produce(kgo.LeaderAck())
		if errors.Is(err, kerr.NotLeaderForPartition) {
			t.Logf("old leader %d answers %v", c.leader, err)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("old leader %d still answers produce with %v 30 s after the partition state named broker %d at a newer epoch; state %v",
				c.leader, err, c.f1, c.state())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A leader whose ISR write is refused because the controller changed the
// state without moving leadership (same leader and epoch, newer version)
// adopts that version and makes its change again: the returning follower
// rejoins the ISR.
func TestISRConflictSameLeaderAdoptsAndRetries(t *testing.T) {
	c := startISRConflict(t, func(st map[string]any, leader, f1 int32) {
		st["controller_epoch"] = st["controller_epoch"].(float64) // same content, newer version
	})
	st := c.waitState("the returning follower back in the ISR", func(st map[string]any) bool {
		return len(st["isr"].([]any)) == 3
	})
	if int32(st["leader"].(float64)) != c.leader || st["leader_epoch"] != c.stateBefore["leader_epoch"] {
		t.Fatalf("state %v, before %v", st, c.stateBefore)
	}
	if err := c.produce(kgo.AllISRAcks()); err != nil {
		t.Fatalf("acks=all produce after the ISR grew back: %v", err)
	}
	t.Logf("ISR in ZooKeeper: %v", st["isr"])
}
