package schemareg_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sluice/sluice/broker"
	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/internal/zktest"
)

// In a three-broker cluster every registry takes writes: the writer (the
// leader of _schemas-0) makes them, the others forward them to it; a
// schema registered through one broker is read from every broker, and ids
// stay unique.
func TestClusterForwardsWritesReadsEverywhere(t *testing.T) {
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
	schemas := []string{avroV1, avroV2, `"int"`}
	ids := map[int]string{}
	for _, cl := range cls {
		if _, err := cl.Subjects(c); err != nil { // every view loaded
			t.Fatal(err)
		}
	}
	for i, cl := range cls {
		s, err := cl.CreateSchema(c, fmt.Sprintf("s%d", i), sr.Schema{Schema: schemas[i]})
		if err != nil {
			t.Fatalf("register through broker %d: %v", i+1, err)
		}
		if _, dup := ids[s.ID]; dup {
			t.Fatalf("id %d handed out twice", s.ID)
		}
		// Read-your-writes: the broker the write went through shows it
		// at once, forwarded or not.
		if got, err := cl.SchemaByID(c, s.ID); err != nil || got.Schema != schemas[i] {
			t.Fatalf("broker %d: read its own write %d: %+v %v", i+1, s.ID, got, err)
		}
		if vs, err := cl.SubjectVersions(c, fmt.Sprintf("s%d", i)); err != nil || len(vs) != 1 {
			t.Fatalf("broker %d: versions of its own write: %v %v", i+1, vs, err)
		}
		ids[s.ID] = schemas[i]
	}
	if r := cls[1].SetCompatibility(c, sr.SetCompatibility{Level: sr.CompatFull}, "s0"); r[0].Err != nil {
		t.Fatalf("config through a non-writer: %v", r[0].Err)
	}
	// A forwarded incompatible write gets the writer's 409.
	if _, err := cls[2].CreateSchema(c, "s0", sr.Schema{Schema: avroV3}); srCode(err) != 409 {
		t.Fatalf("incompatible write: %v, want 409", err)
	}
	for i, cl := range cls {
		for id, want := range ids {
			// Other brokers' views follow the topic: poll, bounded by c.
			for {
				got, err := cl.SchemaByID(c, id)
				if err == nil {
					if got.Schema != want {
						t.Fatalf("broker %d: schema %d is %q, want %q", i+1, id, got.Schema, want)
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
				if code := srCode(err); code != 50001 && code != 50002 && code != 50003 && code != 50004 {
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
	for i, schema := range []string{avroV1, `"int"`, `"long"`} {
		_, s := register([]int{0, 1, 2}, fmt.Sprintf("s%d", i), schema)
		ids = append(ids, s.ID)
	}
	// The writer is the leader of _schemas-0 (the broker a write went
	// through may have forwarded it there).
	mcl, err := kgo.NewClient(kgo.SeedBrokers(bs[0].Addr()))
	if err != nil {
		t.Fatal(err)
	}
	md, err := kadm.NewClient(mcl).Metadata(c, "_schemas")
	mcl.Close()
	if err != nil {
		t.Fatal(err)
	}
	writer := int(md.Topics["_schemas"].Partitions[0].Leader) - 1
	if writer < 0 || writer >= len(bs) {
		t.Fatalf("_schemas-0 has leader %d", writer+1)
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
	// The new writer made its view whole before it picked the id: a NOOP
	// (Confluent's key) lies between the old writer's last record and the
	// new writer's first.
	kcl, err := kgo.NewClient(kgo.SeedBrokers(bs[newWriter].Addr()), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"_schemas": {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer kcl.Close()
	var keys []string
	for !slices.ContainsFunc(keys, func(k string) bool { return strings.Contains(k, `"after-failover"`) }) {
		fs := kcl.PollFetches(c)
		if c.Err() != nil {
			t.Fatalf("_schemas holds %q, no record of after-failover", keys)
		}
		fs.EachRecord(func(r *kgo.Record) { keys = append(keys, string(r.Key)) })
	}
	lastOld := slices.IndexFunc(keys, func(k string) bool { return strings.Contains(k, `"s2"`) })
	firstNew := slices.IndexFunc(keys, func(k string) bool { return strings.Contains(k, `"after-failover"`) })
	if lastOld < 0 || !slices.Contains(keys[lastOld+1:firstNew], `{"keytype":"NOOP","magic":0}`) {
		t.Fatalf("_schemas holds %q: no NOOP between the old writer's last record and the new writer's first", keys)
	}
}
