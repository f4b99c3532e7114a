package broker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/broker"
	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/internal/faultfs"
	"github.com/sluice/sluice/internal/zktest"
	"github.com/sluice/sluice/segment"
)

// TestJBODDirFailureMovesLeadership: three brokers with two log dirs each;
// the dir holding the leader's replica of a partition fails (injected
// I/O errors). The leader writes Kafka's
// /log_dir_event_notification/log_dir_event_<seq>, the controller asks it
// for its replicas (LeaderAndIsr), it answers KAFKA_STORAGE_ERROR for that
// one, and the controller moves leadership to another in-sync replica and
// takes the failed one out of the ISR. Acknowledged records survive, and
// producing goes on through the new leader.
func TestJBODDirFailureMovesLeadership(t *testing.T) {
	srv := zktest.Start(t)
	type member struct {
		b    *broker.Broker
		fs   *faultfs.FS
		dirs []string
	}
	members := map[int32]*member{}
	var bs []*broker.Broker
	for id := int32(1); id <= 3; id++ {
		root := t.TempDir()
		m := &member{fs: faultfs.New(), dirs: []string{filepath.Join(root, "d0"), filepath.Join(root, "d1")}}
		cfg := brokertest.Config(m.dirs[0], "segment", func(c *config.Config) {
			c.BrokerID = id
			c.ZooKeeperConnect = srv.Addr() + "/sluice"
			c.ControlledShutdownEnable = false
			c.OffsetsTopicReplication = 1
			c.GroupInitialRebalanceDelay = 0
		})
		cfg.LogDirs = m.dirs
		fs := m.fs
		b, err := broker.Start(cfg, broker.Options{Logger: brokertest.Logger(t),
			OpenStore: func(o engine.Options) (engine.Store, error) { return segment.OpenFS(o, fs) }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		m.b = b
		members[id] = m
		bs = append(bs, b)
	}
	brokertest.WaitForBrokers(t, 3, nil, bs...)

	zc, _, err := zk.Connect([]string{srv.Addr()}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(zc.Close)
	state := func() (leader int32, isr []int32) {
		data, _, err := zc.Get("/sluice/brokers/topics/c/partitions/0/state")
		if err != nil {
			return -1, nil
		}
		var st struct {
			Leader int32   `json:"leader"`
			ISR    []int32 `json:"isr"`
		}
		if err := json.Unmarshal(data, &st); err != nil {
			t.Fatal(err)
		}
		return st.Leader, st.ISR
	}

	cl := client(t, bs[0].Addr(), kgo.DefaultProduceTopic("c"), kgo.RequiredAcks(kgo.AllISRAcks()))
	if r, err := kadm.NewClient(cl).CreateTopic(ctxFor(t, 30*time.Second), 1, 3, nil, "c"); err != nil || r.Err != nil {
		t.Fatal(err, r.Err)
	}
	eventually(t, "a full ISR", func() bool { _, isr := state(); return len(isr) == 3 })
	leader, _ := state()
	const before = 100
	for i := range before {
		if err := cl.ProduceSync(ctxFor(t, 30*time.Second), &kgo.Record{Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	// The leader's dir holding c-0 fails.
	lm := members[leader]
	lcl := client(t, lm.b.Addr())
	req := kmsg.NewPtrDescribeLogDirsRequest()
	req.Version = 4
	resp, err := lcl.Broker(int(leader)).Request(ctxFor(t, 30*time.Second), req)
	if err != nil {
		t.Fatal(err)
	}
	failed, _ := dirOf(resp.(*kmsg.DescribeLogDirsResponse), "c", 0)
	if !slices.Contains(lm.dirs, failed) {
		t.Fatalf("c-0 on leader %d in %q, not one of %v", leader, failed, lm.dirs)
	}
	t.Logf("leader %d: failing %s", leader, failed)
	// The leader may not have applied its LeaderAndIsr yet: until it
	// has, it answers NOT_LEADER_OR_FOLLOWER.
	eventually(t, "the leader acting as leader", func() bool {
		return produceRawTo(t, lcl, leader, "c", 0) == 0
	})
	lm.fs.Fail(failed)
	if code := produceRawTo(t, lcl, leader, "c", 0); code != kerr.KafkaStorageError.Code {
		t.Fatalf("produce to the failed dir: %v, want KAFKA_STORAGE_ERROR", kerr.ErrorForCode(code))
	}

	eventually(t, "leadership moved off the failed replica", func() bool {
		l, isr := state()
		return l >= 0 && l != leader && !slices.Contains(isr, leader)
	})
	newLeader, isr := state()
	t.Logf("new leader %d, ISR %v", newLeader, isr)
	if kids, _, err := zc.Children("/sluice/log_dir_event_notification"); err != nil || len(kids) != 0 {
		t.Errorf("log dir event notifications left unhandled: %v %v", kids, err)
	}
	// Metadata names the failed replica offline (the controller's
	// UpdateMetadata).
	eventually(t, "Metadata naming the offline replica", func() bool {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr("c")
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctxFor(t, 30*time.Second), cl)
		if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return false
		}
		return slices.Contains(resp.Topics[0].Partitions[0].OfflineReplicas, leader)
	})

	// Producing goes on through the new leader; nothing acknowledged is
	// lost. (The record produced raw before the failure is in the log
	// too: it is skipped.)
	for i := before; i < before+50; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprint(i))}).FirstErr()
		cancel()
		if err != nil {
			t.Fatalf("produce %d after the failover: %v", i, err)
		}
	}
	cons := client(t, members[newLeader].b.Addr(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"c": {0: kgo.NewOffset().AtStart()}}))
	var got []string
	for len(got) < before+50 {
		fs := cons.PollFetches(ctxFor(t, 30*time.Second))
		if err := fs.Err0(); err != nil {
			t.Fatalf("consume after %d records: %v", len(got), err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) != "v" { // produceRawTo's
				got = append(got, string(r.Value))
			}
		})
	}
	for i, v := range got {
		if v != fmt.Sprint(i) {
			t.Fatalf("record %d is %q", i, v)
		}
	}
}
