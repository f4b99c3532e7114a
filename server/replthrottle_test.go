package server_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/broker"
	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/internal/testenv"
	"github.com/sluice/sluice/internal/zktest"
)

// replThrottleBytes is how much each catching-up replica copies, and
// replThrottleRate the throttle (bytes/s): ~20 s of throttled copying.
const (
	replThrottleBytes = 20 << 20
	replThrottleRate  = 1 << 20
)

// TestReplicationThrottleCatchUp: a replica that restarts empty (out of the
// ISR) catches up with ~20 MiB. Unthrottled first, then with
// leader.replication.throttled.rate and follower.replication.throttled.rate
// at 1 MiB/s set at run time (cluster-wide dynamic configs) and the topic's
// throttled replica lists naming it: its catch-up rate must stay well
// under both 3 × the throttle and the unthrottled rate measured here. A
// partition whose follower is in sync, named by "*" in both lists, keeps
// replicating at full speed meanwhile (acks=all produce to it is not held
// to the throttle). Rates are logged and checked loosely: the machine is
// shared.
func TestReplicationThrottleCatchUp(t *testing.T) {
	testenv.NeedsProcess(t, "ZooKeeper")
	if testing.Short() {
		t.Skip("copies 40 MiB between brokers, 20 s of it throttled")
	}
	zk := zktest.Start(t)
	bs := brokertest.StartCluster(t, 3, "memory", zk.Addr())
	cl, err := kgo.NewClient(kgo.SeedBrokers(bs[0].Addr()), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.MaxBufferedRecords(64))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	// Broker 1 leads all three; "free" is followed by 2, "thr" by 3,
	// "insync" by 2.
	createAssigned(t, bs[0].Addr(), "free", 1, 2)
	createAssigned(t, bs[0].Addr(), "thr", 1, 3)
	createAssigned(t, bs[0].Addr(), "insync", 1, 2)
	produceBytes(t, cl, "free", replThrottleBytes)
	produceBytes(t, cl, "thr", replThrottleBytes)

	// Unthrottled: broker 2 restarts empty and copies "free".
	bs[1] = restartEmpty(t, bs[1], zk.Addr(), 2)
	free := catchUp(t, bs[0], bs[1], "free")
	t.Logf("unthrottled catch-up: %d bytes in %v: %.1f MiB/s", free.bytes, free.took, free.rate()/(1<<20))

	// Throttled at run time: the rates cluster-wide, the lists on the
	// topics ("thr" is led by 1 and moves to 3; "insync" throttles every
	// replica, but its follower is in sync).
	rate := strconv.Itoa(replThrottleRate)
	alterBroker(t, adm, "leader.replication.throttled.rate", rate)
	alterBroker(t, adm, "follower.replication.throttled.rate", rate)
	alterTopic(t, adm, "thr", config.LeaderThrottledReplicas, "0:1")
	alterTopic(t, adm, "thr", config.FollowerThrottledReplicas, "0:3")
	alterTopic(t, adm, "insync", config.LeaderThrottledReplicas, "*")
	alterTopic(t, adm, "insync", config.FollowerThrottledReplicas, "*")
	time.Sleep(500 * time.Millisecond) // the other brokers apply the change notifications

	bs[2] = restartEmpty(t, bs[2], zk.Addr(), 3)
	type insyncResult struct {
		bytes int64
		took  time.Duration
	}
	done := make(chan insyncResult, 1)
	go func() {
		// acks=all to "insync" while "thr" is throttled: its follower,
		// in the ISR, must not be held back.
		start := time.Now()
		n := produceBytesErr(cl, "insync", 8<<20)
		done <- insyncResult{n, time.Since(start)}
	}()
	thr := catchUp(t, bs[0], bs[2], "thr")
	in := <-done
	inRate := float64(in.bytes) / in.took.Seconds()
	t.Logf("throttled catch-up (%d B/s): %d bytes in %v: %.2f MiB/s", replThrottleRate, thr.bytes, thr.took, thr.rate()/(1<<20))
	t.Logf("in-sync acks=all produce meanwhile: %d bytes in %v: %.1f MiB/s", in.bytes, in.took, inRate/(1<<20))

	if in.bytes < 8<<20 {
		t.Fatalf("in-sync produce wrote %d of %d bytes", in.bytes, 8<<20)
	}
	if thr.rate() > 3*replThrottleRate {
		t.Errorf("throttled catch-up ran at %.2f MiB/s, more than 3 × the %d B/s throttle", thr.rate()/(1<<20), replThrottleRate)
	}
	if free.rate() < 2*thr.rate() {
		t.Errorf("unthrottled catch-up (%.2f MiB/s) not well above the throttled one (%.2f MiB/s): the test proves nothing here", free.rate()/(1<<20), thr.rate()/(1<<20))
	}
	if inRate < 3*replThrottleRate {
		t.Errorf("in-sync replication held to %.2f MiB/s under a %d B/s throttle", inRate/(1<<20), replThrottleRate)
	}
	// The leader measured the throttled replicas' bytes.
	fams := scrape(t, "http://"+bs[0].HTTPAddr()+"/metrics")
	if v := mustValue(t, fams, "kafka_server_leaderreplication_byte_rate", nil); v <= 0 {
		t.Errorf("leader replication byte rate %v", v)
	}
	if v := mustValue(t, fams, "sluice_replication_throttled_partitions_total", map[string]string{"type": "leader"}); v <= 0 {
		t.Errorf("the leader never held a partition back (%v)", v)
	}
	// ... and so did the follower, which left the partition out.
	fams = scrape(t, "http://"+bs[2].HTTPAddr()+"/metrics")
	if v := mustValue(t, fams, "kafka_server_followerreplication_byte_rate", nil); v <= 0 {
		t.Errorf("follower replication byte rate %v", v)
	}
	if v := mustValue(t, fams, "sluice_replication_throttled_partitions_total", map[string]string{"type": "follower"}); v <= 0 {
		t.Errorf("the follower never left a partition out (%v)", v)
	}
}

// catchUpResult is one replica's catch-up.
type catchUpResult struct {
	bytes int64
	took  time.Duration
}

func (r catchUpResult) rate() float64 { return float64(r.bytes) / r.took.Seconds() }

// catchUp waits (at most 3 minutes) until follower's replica of topic-0 is
// as large as leader's, and reports the bytes and the time since the call.
func catchUp(t *testing.T, leader, follower *broker.Broker, topic string) catchUpResult {
	t.Helper()
	start := time.Now()
	want := replicaSize(t, leader, topic)
	if want <= 0 {
		t.Fatalf("leader's %s-0 is empty", topic)
	}
	deadline := start.Add(3 * time.Minute)
	for {
		if got := replicaSize(t, follower, topic); got >= want {
			return catchUpResult{got, time.Since(start)}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s-0: follower at %d of %d bytes after 3 minutes", topic, replicaSize(t, follower, topic), want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// replicaSize is the size of b's replica of topic-0 (DescribeLogDirs), -1
// with none.
func replicaSize(t *testing.T, b *broker.Broker, topic string) int64 {
	t.Helper()
	req := kmsg.NewPtrDescribeLogDirsRequest()
	rt := kmsg.NewDescribeLogDirsRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{0}
	req.Topics = append(req.Topics, rt)
	rc := dialRaw(t, b.Addr())
	defer rc.Close()
	resp := rc.Do(req).(*kmsg.DescribeLogDirsResponse)
	for _, d := range resp.Dirs {
		for _, tt := range d.Topics {
			for _, p := range tt.Partitions {
				if tt.Topic == topic && p.Partition == 0 {
					return p.Size
				}
			}
		}
	}
	return -1
}

// createAssigned creates topic with one partition on replicas (the first
// leads).
func createAssigned(t *testing.T, addr, topic string, replicas ...int32) {
	t.Helper()
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.TimeoutMillis = 10000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Partition, ra.Replicas = 0, replicas
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	ct.Topics = append(ct.Topics, rt)
	rc := dialRaw(t, addr)
	defer rc.Close()
	if r := rc.Do(ct).(*kmsg.CreateTopicsResponse); r.Topics[0].ErrorCode != 0 {
		t.Fatalf("create %s: %v", topic, kerr.ErrorForCode(r.Topics[0].ErrorCode))
	}
}

// produceBytes writes n bytes of 64 KiB records to topic at acks=all.
func produceBytes(t *testing.T, cl *kgo.Client, topic string, n int64) {
	t.Helper()
	if got := produceBytesErr(cl, topic, n); got < n {
		t.Fatalf("produced %d of %d bytes to %s", got, n, topic)
	}
}

// produceBytesErr writes n bytes of 64 KiB records to topic at acks=all
// and returns how many were acknowledged (less on an error).
func produceBytesErr(cl *kgo.Client, topic string, n int64) int64 {
	val := make([]byte, 64<<10)
	rand.Read(val)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var acked int64
	for sent := int64(0); sent < n; sent += int64(len(val)) {
		r := &kgo.Record{Topic: topic, Value: val}
		cl.Produce(ctx, r, func(r *kgo.Record, err error) {
			if err == nil {
				acked += int64(len(r.Value)) // callbacks run one at a time
			}
		})
	}
	cl.Flush(ctx)
	return acked
}

// restartEmpty closes broker id and starts it again with an empty memory
// store: its replicas are out of the ISR and copy everything again.
func restartEmpty(t *testing.T, b *broker.Broker, zkAddr string, id int32) *broker.Broker {
	t.Helper()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	nb := brokertest.Start(t, "memory", func(c *config.Config) {
		c.BrokerID = id
		c.ZooKeeperConnect = zkAddr + "/sluice"
		c.ControlledShutdownEnable = false
		c.OffsetsTopicReplication = 1
		c.GroupInitialRebalanceDelay = 0
	})
	return nb
}

func alterBroker(t *testing.T, adm *kadm.Client, key, v string) {
	t.Helper()
	resp, err := adm.AlterBrokerConfigs(context.Background(), []kadm.AlterConfig{{Op: kadm.SetConfig, Name: key, Value: &v}})
	if err == nil {
		for _, r := range resp {
			if r.Err != nil {
				err = fmt.Errorf("%s: %w %s", r.Name, r.Err, r.ErrMessage)
			}
		}
	}
	if err != nil {
		t.Fatalf("set %s=%s: %v", key, v, err)
	}
}

func alterTopic(t *testing.T, adm *kadm.Client, topic, key, v string) {
	t.Helper()
	resp, err := adm.AlterTopicConfigs(context.Background(), []kadm.AlterConfig{{Op: kadm.SetConfig, Name: key, Value: &v}}, topic)
	if err == nil {
		for _, r := range resp {
			if r.Err != nil {
				err = fmt.Errorf("%s: %w %s", r.Name, r.Err, r.ErrMessage)
			}
		}
	}
	if err != nil {
		t.Fatalf("set %s %s=%s: %v", topic, key, v, err)
	}
}
