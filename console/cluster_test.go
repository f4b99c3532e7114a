package console_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/internal/zktest"
)

// In a two-broker cluster each broker's API shows the whole cluster (its
// client is an admin on the inter-broker listener), sizes are the leaders',
// and /readyz checks the ZooKeeper registration.
func TestClusterView(t *testing.T) {
	zk := zktest.Start(t)
	bs := brokertest.StartCluster(t, 2, "memory", zk.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := kclient(t, bs[0].Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()))
	if r, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 2, nil, "rep"); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	for i := range 20 {
		rec := &kgo.Record{Topic: "rep", Partition: int32(i % 2), Value: []byte("value")}
		if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	for _, b := range bs {
		a := newAPI(t, b)
		// Ready once registered and leading what the controller gave it.
		var rd struct {
			Ready  bool `json:"ready"`
			Checks map[string]struct {
				OK     bool   `json:"ok"`
				Detail string `json:"detail"`
			} `json:"checks"`
		}
		for {
			code, body := a.do("GET", "/readyz", "", nil)
			if err := json.Unmarshal(body, &rd); err != nil {
				t.Fatalf("/readyz: %s", body)
			}
			if code == 200 {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("not ready: %s", body)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if !rd.Checks["zookeeper"].OK || !rd.Checks["partitions"].OK {
			t.Fatalf("checks: %+v", rd.Checks)
		}
		var c struct {
			Controller int32 `json:"controller"`
			ThisBroker int32 `json:"thisBroker"`
			Brokers    []struct {
				ID int32 `json:"id"`
			} `json:"brokers"`
		}
		a.get("/api/cluster", 200, &c)
		if len(c.Brokers) != 2 || c.Controller < 1 || c.ThisBroker < 1 {
			t.Fatalf("cluster: %+v", c)
		}
		var td topicDetail
		a.get("/api/topics/rep", 200, &td)
		if len(td.Partitions) != 2 {
			t.Fatalf("topic: %+v", td)
		}
		for _, p := range td.Partitions {
			if len(p.Replicas) != 2 || p.EndOffset != 10 || p.Size <= 0 {
				t.Fatalf("partition: %+v", p)
			}
		}
		var tl topicList
		a.get("/api/topics", 200, &tl)
		found := false
		for _, tp := range tl.Topics {
			if tp.Name == "rep" {
				found = true
				if tp.Messages != 20 || tp.ReplicationFactor != 2 || tp.Size != td.Partitions[0].Size+td.Partitions[1].Size {
					t.Fatalf("rep in the list: %+v", tp)
				}
			}
		}
		if !found {
			t.Fatalf("topics: %+v", tl)
		}
	}
}
