package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/internal/testenv"
	"github.com/sluice/sluice/record"
)

// TestTieredFollowerRebuildsFromRemote (KIP-405; Kafka's
// ReplicaFetcherTierStateMachine) on a 2-broker cluster with a shared
// local-directory remote store: the follower is stopped while an
// idempotent producer writes and the leader tiers those records and
// deletes them locally. Restarted below the leader's local log start, the
// follower is answered OFFSET_MOVED_TO_TIERED_STORAGE and rebuilds from
// the remote tier: it rejoins the ISR with the leader's
// leader-epoch-checkpoint, and once it leads (the old leader stopped) it
// knows the producer that wrote only below its local start: a retried
// batch is answered with its original offset, a sequence gap refused
// OUT_OF_ORDER_SEQUENCE_NUMBER, the next sequence taken. Before, the
// follower restarted at the leader's local start with no producer state
// and appended both.
func TestTieredFollowerRebuildsFromRemote(t *testing.T) {
	t.Parallel()
	testenv.NeedsProcess(t, "a 2-broker cluster with ZooKeeper")
	remoteDir := filepath.Join(t.TempDir(), "remote")
	c := startCluster(t, 2, tieredSets(remoteDir)...)
	const topic = "tierfollow"
	c.createTopic(topic, 1, 2, smallTieredTopic())
	pd, _ := c.partition(topic, 0)
	leader := pd.Leader
	follower := int32(3 - leader)
	if err := c.brokers[follower].stop(); err != nil {
		t.Fatal(err)
	}

	cl, err := c.newClient(kgo.SeedBrokers(c.seeds()...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(), kgo.ProducerBatchMaxBytes(16<<10))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	ipr, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, cl)
	cancel()
	if err != nil || ipr.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %v %v", err, kerr.ErrorForCode(ipr.ErrorCode))
	}
	pid, pepoch := ipr.ProducerID, ipr.ProducerEpoch

	if code, base := produceIdempotent(t, cl, leader, topic, pid, pepoch, 0, 5); code != 0 || base != 0 {
		t.Fatalf("producer %d sequences 0-4: code %d at %d, want 0 at 0", pid, code, base)
	}
	// Filler rolls segments, which are tiered and deleted locally.
	for i := 0; i < 512; i += 64 {
		var recs []*kgo.Record
		for j := i; j < i+64; j++ {
			recs = append(recs, &kgo.Record{Value: tieredValue(j)})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		err := cl.ProduceSync(ctx, recs...).FirstErr()
		cancel()
		if err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	c.waitLong(2*time.Minute, "the leader's local log start past producer's records", func() bool {
		return listOffsetV8(t, cl, topic, -4) > 5
	})

	c.brokers[follower].restart()
	c.waitISR(topic, []int32{1, 2}, 2*time.Minute)
	if !bytes.Contains([]byte(c.brokers[follower].logText()), []byte("follower log rebuilt from the remote tier")) {
		t.Errorf("broker %d did not rebuild from the remote tier\n%s", follower, c.logs())
	}
	ckpt := func(id int32) []byte {
		b, _ := os.ReadFile(filepath.Join(c.brokers[id].dir, topic+"-0", "leader-epoch-checkpoint"))
		return b
	}
	c.waitLong(time.Minute, "the follower's leader-epoch-checkpoint to equal the leader's", func() bool {
		l, f := ckpt(leader), ckpt(follower)
		return len(l) > 0 && bytes.Equal(l, f)
	})

	// The follower leads: the producer's state came from the remote tier.
	if err := c.brokers[leader].stop(); err != nil {
		t.Fatal(err)
	}
	c.waitFor(60*time.Second, "the follower to lead", func(*kadm.Client) bool {
		pd, ok := c.partition(topic, 0)
		return ok && pd.Leader == follower
	})
	cl2, err := c.newClient(kgo.SeedBrokers(c.seeds()...)) // cl knew only the old leader
	if err != nil {
		t.Fatal(err)
	}
	defer cl2.Close()
	if code, base := produceIdempotent(t, cl2, follower, topic, pid, pepoch, 0, 5); code != 0 || base != 0 {
		t.Errorf("retry of sequences 0-4 on the new leader: code %d at %d, want 0 at the original offset 0", code, base)
	}
	if code, _ := produceIdempotent(t, cl2, follower, topic, pid, pepoch, 9, 1); code != kerr.OutOfOrderSequenceNumber.Code {
		t.Errorf("sequence 9 after 4 on the new leader: code %d, want OUT_OF_ORDER_SEQUENCE_NUMBER", code)
	}
	if code, base := produceIdempotent(t, cl2, follower, topic, pid, pepoch, 5, 1); code != 0 || base != 517 {
		t.Errorf("sequence 5 on the new leader: code %d at %d, want 0 at 517", code, base)
	}
}

// produceIdempotent sends one batch of n records of producer pid from
// sequence seq (acks=1) to broker id, the partition's leader, retrying
// NOT_LEADER_OR_FOLLOWER for a bounded while, and returns the error code
// and base offset.
func produceIdempotent(t *testing.T, cl *kgo.Client, id int32, topic string, pid int64, epoch int16, seq int32, n int) (int16, int64) {
	t.Helper()
	recs := make([]record.BuildRecord, n)
	for i := range recs {
		recs[i] = record.BuildRecord{Value: []byte(fmt.Sprintf("idem-%d", int(seq)+i)), Timestamp: time.Now().UnixMilli()}
	}
	b := record.AppendBatch(nil, record.BatchOptions{ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq}, recs)
	var last error
	for try := 0; try < 50; try++ {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = 1, 10000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = b
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		kr, err := cl.Broker(int(id)).Request(ctx, req)
		cancel()
		resp, _ := kr.(*kmsg.ProduceResponse)
		if err == nil && resp != nil && len(resp.Topics) == 1 && len(resp.Topics[0].Partitions) == 1 {
			p := resp.Topics[0].Partitions[0]
			if p.ErrorCode != kerr.NotLeaderForPartition.Code && p.ErrorCode != kerr.LeaderNotAvailable.Code {
				return p.ErrorCode, p.BaseOffset
			}
			last = kerr.ErrorForCode(p.ErrorCode)
		} else {
			last = err
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("produce to %s-0: %v", topic, last)
	return -1, -1
}

// listOffsetV8 is ListOffsets v8 of topic-0 at ts (-4: the earliest local
// offset), -1 on an error.
func listOffsetV8(t *testing.T, cl *kgo.Client, topic string, ts int64) int64 {
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version, req.ReplicaID = 8, -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = 0, ts, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		return -1
	}
	return resp.Topics[0].Partitions[0].Offset
}

// tieredSets are the broker settings of the small tiered tests: tiering on,
// a local-directory remote store at remoteDir (shared by a cluster's
// brokers) and a remote log manager run every 200 ms.
func tieredSets(remoteDir string) []string {
	return []string{
		"remote.log.storage.system.enable=true",
		"rsm.config.dir=" + remoteDir,
		"remote.log.manager.task.interval.ms=200",
	}
}

// smallTieredTopic is the config of the small tiered tests' topic: 64 KiB
// segments of which 128 KiB stay local.
func smallTieredTopic() map[string]*string {
	return map[string]*string{
		"remote.storage.enable": kadm.StringPtr("true"),
		"local.retention.bytes": kadm.StringPtr("131072"),
		"segment.bytes":         kadm.StringPtr("65536"),
	}
}
