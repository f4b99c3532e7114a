package broker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
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
	srv, members, bs := startJBODCluster(t, nil)

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

// jbodMember is one broker of startJBODCluster: two log dirs, its segment
// files opened through fs.
type jbodMember struct {
	b    *broker.Broker
	fs   *faultfs.FS
	dirs []string
}

// startJBODCluster starts three brokers (ids 1-3) with two log dirs each
// on a new ZooKeeper and waits until each sees all three.
func startJBODCluster(t *testing.T, override func(*config.Config)) (*zktest.Server, map[int32]*jbodMember, []*broker.Broker) {
	t.Helper()
	srv := zktest.Start(t)
	members := map[int32]*jbodMember{}
	var bs []*broker.Broker
	for id := int32(1); id <= 3; id++ {
		root := t.TempDir()
		m := &jbodMember{fs: faultfs.New(), dirs: []string{filepath.Join(root, "d0"), filepath.Join(root, "d1")}}
		cfg := brokertest.Config(m.dirs[0], "segment", func(c *config.Config) {
			c.BrokerID = id
			c.ZooKeeperConnect = srv.Addr() + "/sluice"
			c.ControlledShutdownEnable = false
			c.OffsetsTopicReplication = 1
			c.GroupInitialRebalanceDelay = 0
			if override != nil {
				override(c)
			}
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
	return srv, members, bs
}

// brokerDirOf returns the dir broker id lists topic-part in and whether it
// lists a future replica of it.
func brokerDirOf(t *testing.T, cl *kgo.Client, id int32, topic string, part int32) (string, bool) {
	t.Helper()
	req := kmsg.NewPtrDescribeLogDirsRequest()
	req.Version = 4
	resp, err := cl.Broker(int(id)).Request(ctxFor(t, 30*time.Second), req)
	if err != nil {
		t.Fatal(err)
	}
	return dirOf(resp.(*kmsg.DescribeLogDirsResponse), topic, part)
}

// TestJBODMoveInCluster moves the leader's and a follower's replica of a
// partition (replication factor 3) to their other log dirs while an
// acks=all producer writes: both moves finish, every acknowledged record
// is read back in order, and the ISR is whole again.
func TestJBODMoveInCluster(t *testing.T) {
	srv, members, bs := startJBODCluster(t, nil)
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
	adm := kadm.NewClient(cl)
	if r, err := adm.CreateTopic(ctxFor(t, 30*time.Second), 1, 3, nil, "c"); err != nil || r.Err != nil {
		t.Fatal(err, r.Err)
	}
	eventually(t, "a full ISR", func() bool { _, isr := state(); return len(isr) == 3 })
	leader, _ := state()
	follower := leader%3 + 1

	var mu sync.Mutex
	var acked []string
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(acked) }
	stop := make(chan struct{})
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		for i := range 100000 {
			select {
			case <-stop:
				return
			default:
			}
			v := fmt.Sprintf("%08d", i)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr()
			cancel()
			if err != nil {
				t.Errorf("produce %d: %v", i, err)
				return
			}
			mu.Lock()
			acked = append(acked, v)
			mu.Unlock()
		}
	}()
	eventually(t, "records flowing", func() bool { return count() > 200 })
	for _, id := range []int32{leader, follower} {
		from, _ := brokerDirOf(t, cl, id, "c", 0)
		to := members[id].dirs[0]
		if from == to {
			to = members[id].dirs[1]
		}
		req := kadm.AlterReplicaLogDirsReq{}
		req.Add(to, kadm.TopicsSet{"c": {0: {}}})
		res, err := adm.AlterBrokerReplicaLogDirs(ctxFor(t, 30*time.Second), id, req)
		if err != nil {
			t.Fatal(err)
		}
		res.Each(func(r kadm.AlterReplicaLogDirsResponse) {
			if r.Err != nil {
				t.Fatalf("broker %d: AlterReplicaLogDirs: %v", id, r.Err)
			}
		})
		eventually(t, fmt.Sprintf("broker %d's replica in %s", id, to), func() bool {
			dir, future := brokerDirOf(t, cl, id, "c", 0)
			return dir == to && !future
		})
		t.Logf("broker %d (leader %d): moved %s -> %s", id, leader, from, to)
	}
	n := count()
	eventually(t, "records flowing after the moves", func() bool { return count() > n+50 })
	close(stop)
	<-produced
	eventually(t, "a full ISR after the moves", func() bool { _, isr := state(); return len(isr) == 3 })

	cons := client(t, bs[0].Addr(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"c": {0: kgo.NewOffset().AtStart()}}))
	var got []string
	for len(got) < len(acked) {
		fs := cons.PollFetches(ctxFor(t, 30*time.Second))
		if err := fs.Err0(); err != nil {
			t.Fatalf("consume after %d records: %v", len(got), err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	for i, v := range acked {
		if got[i] != v {
			t.Fatalf("record %d is %q, want %q", i, got[i], v)
		}
	}
	t.Logf("%d records acknowledged and read back", len(acked))
}
