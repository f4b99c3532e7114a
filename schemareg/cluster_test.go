package schemareg_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sluice/sluice/broker"
	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/internal/zktest"
)

// In a three-broker cluster exactly one registry (the leader of
// _schemas-0's) takes writes, the others refuse them with 50004, and a
// schema registered there is read from every broker's registry.
func TestClusterOneWriterReadsEverywhere(t *testing.T) {
	zk := zktest.Start(t) // NeedsProcess
	var bs []*broker.Broker
	for id := int32(1); id <= 3; id++ {
		bs = append(bs, brokertest.Start(t, "memory", withRegistry, func(c *config.Config) {
			c.BrokerID = id
			c.ZooKeeperConnect = zk.Addr() + "/sluice"
			c.ControlledShutdownEnable = false
			c.DefaultReplicationFactor = 3
		}))
	}
	brokertest.WaitForBrokers(t, 3, nil, bs...)
	c, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var cls []*sr.Client
	for _, b := range bs {
		cl, err := sr.NewClient(sr.URLs("http://" + b.SchemaRegistry().Addr()))
		if err != nil {
			t.Fatal(err)
		}
		cls = append(cls, cl)
	}
	// A different schema for each broker: a registry that has the schema
	// already answers with its id without writing, writer or not.
	schemas := []string{avroV1, avroV2, avroV3}
	writer := -1
	var id int
	for i, cl := range cls {
		s, err := cl.CreateSchema(c, "orders-value", sr.Schema{Schema: schemas[i]})
		switch {
		case err == nil:
			if writer >= 0 {
				t.Fatalf("brokers %d and %d both took a write", writer+1, i+1)
			}
			writer, id = i, s.ID
		case srCode(err) != 50004:
			t.Fatalf("broker %d: %v, want success or 50004", i+1, err)
		}
	}
	if writer < 0 {
		t.Fatal("no broker took the write")
	}
	for i, cl := range cls {
		// Other brokers' views follow the topic: poll, bounded by c.
		for {
			got, err := cl.SchemaByID(c, id)
			if err == nil {
				if got.Schema != schemas[writer] {
					t.Fatalf("broker %d: schema %q", i+1, got.Schema)
				}
				break
			}
			if srCode(err) != 40403 || c.Err() != nil {
				t.Fatalf("broker %d: schema %d: %v", i+1, id, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// The writer leaves the cluster: another broker becomes the leader of
// _schemas-0 and takes writes, its ids above every id handed out before,
// and no schema is lost.
func TestClusterWriterFailover(t *testing.T) {
	zk := zktest.Start(t) // NeedsProcess
	var bs []*broker.Broker
	for id := int32(1); id <= 3; id++ {
		bs = append(bs, brokertest.Start(t, "memory", withRegistry, func(c *config.Config) {
			c.BrokerID = id
			c.ZooKeeperConnect = zk.Addr() + "/sluice"
			c.ControlledShutdownEnable = false
			c.DefaultReplicationFactor = 3
			c.ReplicaLagTimeMax = 2 * time.Second
		}))
	}
	brokertest.WaitForBrokers(t, 3, nil, bs...)
	c, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cls := make([]*sr.Client, len(bs))
	for i, b := range bs {
		cl, err := sr.NewClient(sr.URLs("http://" + b.SchemaRegistry().Addr()))
		if err != nil {
			t.Fatal(err)
		}
		cls[i] = cl
	}
	// register tries every live broker's registry until one (the writer)
	// takes the schema; bounded by c.
	register := func(live []int, subject, schema string) (int, sr.SubjectSchema) {
		t.Helper()
		for {
			for _, i := range live {
				s, err := cls[i].CreateSchema(c, subject, sr.Schema{Schema: schema})
				if err == nil {
					return i, s
				}
				if code := srCode(err); code != 50004 && code != 50001 && code != 50002 {
					t.Fatalf("broker %d: %v", i+1, err)
				}
			}
			if c.Err() != nil {
				t.Fatal("no registry took the write")
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	var ids []int
	writer := -1
	for i, schema := range []string{avroV1, `"int"`, `"long"`} {
		w, s := register([]int{0, 1, 2}, fmt.Sprintf("s%d", i), schema)
		writer = w
		ids = append(ids, s.ID)
	}
	if err := bs[writer].Close(); err != nil {
		t.Fatal(err)
	}
	var live []int
	for i := range bs {
		if i != writer {
			live = append(live, i)
		}
	}
	newWriter, s := register(live, "after-failover", `"string"`)
	for _, id := range ids {
		if s.ID == id {
			t.Fatalf("id %d handed out twice (new writer broker %d)", id, newWriter+1)
		}
		got, err := cls[newWriter].SchemaByID(c, id)
		if err != nil || got.Schema == "" {
			t.Fatalf("schema %d lost after failover: %+v %v", id, got, err)
		}
	}
	if s.ID <= ids[len(ids)-1] {
		t.Fatalf("id after failover %d, want above %d", s.ID, ids[len(ids)-1])
	}
}
