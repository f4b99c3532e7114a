package broker_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/broker"
	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/internal/faultfs"
	"github.com/sluice/sluice/record"
	"github.com/sluice/sluice/segment"
)

// jbodBroker starts a single-node "segment" broker on the log dirs dirs,
// its segment files opened through fs, and closes it at Cleanup.
func jbodBroker(t *testing.T, dirs []string, fs *faultfs.FS, overrides ...func(*config.Config)) *broker.Broker {
	t.Helper()
	cfg := brokertest.Config(dirs[0], "segment", overrides...)
	cfg.LogDirs = dirs
	b, err := broker.Start(cfg, broker.Options{Logger: brokertest.Logger(t),
		OpenStore: func(o engine.Options) (engine.Store, error) { return segment.OpenFS(o, fs) }})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func twoDirs(t *testing.T) []string {
	root := t.TempDir()
	return []string{filepath.Join(root, "d0"), filepath.Join(root, "d1")}
}

// describeLogDirs returns DescribeLogDirs v4 for every local replica of
// the single broker (id 0), sent to it alone: kgo's merge of a sharded
// request drops the per-dir error codes.
func describeLogDirs(t *testing.T, cl *kgo.Client) *kmsg.DescribeLogDirsResponse {
	t.Helper()
	req := kmsg.NewPtrDescribeLogDirsRequest()
	req.Version = 4
	resp, err := cl.Broker(0).Request(ctxFor(t, 30*time.Second), req)
	if err != nil {
		t.Fatal(err)
	}
	return resp.(*kmsg.DescribeLogDirsResponse)
}

// dirOf returns the dir DescribeLogDirs lists topic-part in, and whether
// a future replica of it is listed (anywhere).
func dirOf(resp *kmsg.DescribeLogDirsResponse, topic string, part int32) (dir string, future bool) {
	for _, d := range resp.Dirs {
		for _, tp := range d.Topics {
			if tp.Topic != topic {
				continue
			}
			for _, p := range tp.Partitions {
				if p.Partition != part {
					continue
				}
				if p.IsFuture {
					future = true
				} else {
					dir = d.Dir
				}
			}
		}
	}
	return dir, future
}

// produceRaw sends one acks=1 Produce of one record to topic-part on the
// single broker (id 0) and returns the partition's error code.
func produceRaw(t *testing.T, cl *kgo.Client, topic string, part int32) int16 {
	t.Helper()
	return produceRawTo(t, cl, 0, topic, part)
}

// produceRawTo is produceRaw sent to broker id, whatever the client's
// metadata says.
func produceRawTo(t *testing.T, cl *kgo.Client, id int32, topic string, part int32) int16 {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = 1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = part
	rp.Records = record.AppendBatch(nil, record.BatchOptions{ProducerID: -1, BaseSequence: -1},
		[]record.BuildRecord{{Value: []byte("v"), Timestamp: time.Now().UnixMilli()}})
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := cl.Broker(int(id)).Request(ctxFor(t, 30*time.Second), req)
	if err != nil {
		t.Fatal(err)
	}
	return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
}

// eventually polls cond until it holds; the deadline only ends a test
// that would otherwise hang, it asserts nothing about timing.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestJBODMoveUnderProduce moves a partition between log dirs with
// AlterReplicaLogDirs while an idempotent franz-go producer writes to it,
// the copy throttled (replica.alter.log.dirs.io.max.bytes.per.second) so
// that the move lasts: DescribeLogDirs shows the partition in its first
// dir, then a future replica in the target, then the partition there;
// every acknowledged record is read back once, in order.
func TestJBODMoveUnderProduce(t *testing.T) {
	t.Parallel()
	dirs := twoDirs(t)
	const rate = 32 << 10
	b := jbodBroker(t, dirs, faultfs.New(), func(c *config.Config) { c.ReplicaAlterLogDirsIOMaxBytesPerSecond = rate })
	cl := client(t, b.Addr(), kgo.DefaultProduceTopic("m"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	if r, err := adm.CreateTopic(ctxFor(t, 30*time.Second), 1, 1, nil, "m"); err != nil || r.Err != nil {
		t.Fatal(err, r.Err)
	}
	from, _ := dirOf(describeLogDirs(t, cl), "m", 0)
	if from != dirs[0] {
		t.Fatalf("m-0 in %q, want the first dir %q", from, dirs[0])
	}
	var acked []string
	value := func(i int) string { return fmt.Sprintf("%08d-%s", i, strings.Repeat("x", 100)) }
	// Three throttle-seconds of records before the move.
	var batch []*kgo.Record
	for i := 0; len(batch)*110 < 3*rate; i++ {
		batch = append(batch, &kgo.Record{Value: []byte(value(i))})
	}
	if err := cl.ProduceSync(ctxFor(t, 30*time.Second), batch...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for _, r := range batch {
		acked = append(acked, string(r.Value))
	}

	req := kadm.AlterReplicaLogDirsReq{}
	req.Add(dirs[1], kadm.TopicsSet{"m": {0: {}}})
	res, err := adm.AlterBrokerReplicaLogDirs(ctxFor(t, 30*time.Second), 0, req)
	if err != nil {
		t.Fatal(err)
	}
	res.Each(func(r kadm.AlterReplicaLogDirsResponse) {
		if r.Err != nil {
			t.Fatalf("AlterReplicaLogDirs %s-%d: %v", r.Topic, r.Partition, r.Err)
		}
	})

	// Produce goes on, one record at a time, slower than the throttle
	// (else the copy never catches up, as in Kafka), until the move is
	// seen done; bounded.
	moved := make(chan struct{})
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		for i := len(acked); i < len(batch)+20000; i++ {
			select {
			case <-moved:
				return
			case <-time.After(10 * time.Millisecond):
			}
			v := value(i)
			if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
				t.Errorf("produce %d: %v", i, err)
				return
			}
			acked = append(acked, v)
		}
	}()
	sawFuture := false
	eventually(t, "m-0 in the second dir", func() bool {
		dir, future := dirOf(describeLogDirs(t, cl), "m", 0)
		if future {
			sawFuture = true
			if dir != dirs[0] {
				t.Errorf("while the future replica copies, m-0 is in %q", dir)
			}
		}
		return dir == dirs[1] && !future
	})
	close(moved)
	<-produced
	if !sawFuture {
		t.Error("DescribeLogDirs never showed the future replica of the move")
	}
	t.Logf("%d records acknowledged, %d of them during the move", len(acked), len(acked)-len(batch))

	cons := client(t, b.Addr(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"m": {0: kgo.NewOffset().AtStart()}}))
	var got []string
	for len(got) < len(acked) {
		fs := cons.PollFetches(ctxFor(t, 30*time.Second))
		if err := fs.Err0(); err != nil {
			t.Fatalf("consume after %d records: %v", len(got), err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if len(got) != len(acked) {
		t.Fatalf("consumed %d records, want %d", len(got), len(acked))
	}
	for i, v := range got {
		if v != acked[i] {
			t.Fatalf("record %d is %q, want %q: lost, duplicated or reordered", i, v[:8], acked[i][:8])
		}
	}
	if _, err := os.Stat(filepath.Join(dirs[0], "m-0")); !os.IsNotExist(err) {
		t.Errorf("m-0 left in the first dir: %v", err)
	}
}

// TestJBODDirFailure: an I/O error in one log dir takes only its
// partitions offline: produce there answers KAFKA_STORAGE_ERROR, the other
// dir's partition keeps taking records, DescribeLogDirs answers the dir
// KAFKA_STORAGE_ERROR, and /readyz and the metrics name it.
func TestJBODDirFailure(t *testing.T) {
	dirs := twoDirs(t)
	fs := faultfs.New()
	b := jbodBroker(t, dirs, fs)
	cl := client(t, b.Addr())
	adm := kadm.NewClient(cl)
	if r, err := adm.CreateTopic(ctxFor(t, 30*time.Second), 2, 1, nil, "a"); err != nil || r.Err != nil {
		t.Fatal(err, r.Err)
	}
	resp := describeLogDirs(t, cl)
	if d, _ := dirOf(resp, "a", 0); d != dirs[0] {
		t.Fatalf("a-0 in %q", d)
	}
	if d, _ := dirOf(resp, "a", 1); d != dirs[1] {
		t.Fatalf("a-1 in %q", d)
	}
	for p := int32(0); p < 2; p++ {
		if code := produceRaw(t, cl, "a", p); code != 0 {
			t.Fatalf("a-%d: %v", p, kerr.ErrorForCode(code))
		}
	}

	fs.Fail(dirs[1])
	if code := produceRaw(t, cl, "a", 1); code != kerr.KafkaStorageError.Code {
		t.Fatalf("produce to the failed dir: %v, want KAFKA_STORAGE_ERROR", kerr.ErrorForCode(code))
	}
	eventually(t, "the second dir offline in DescribeLogDirs", func() bool {
		for _, d := range describeLogDirs(t, cl).Dirs {
			if d.Dir == dirs[1] {
				return d.ErrorCode == kerr.KafkaStorageError.Code
			}
		}
		return false
	})
	if code := produceRaw(t, cl, "a", 1); code != kerr.KafkaStorageError.Code {
		t.Errorf("produce to the offline partition: %v, want KAFKA_STORAGE_ERROR", kerr.ErrorForCode(code))
	}
	for range 3 {
		if code := produceRaw(t, cl, "a", 0); code != 0 {
			t.Fatalf("produce to the live dir: %v", kerr.ErrorForCode(code))
		}
	}
	if d, _ := dirOf(describeLogDirs(t, cl), "a", 0); d != dirs[0] {
		t.Errorf("a-0 no longer listed in the live dir: %q", d)
	}
	// Metadata names no leader for the offline partition (its only replica
	// offline), and still this broker for the live one, so clients stop
	// sending to a-1 rather than retrying KAFKA_STORAGE_ERROR.
	mreq := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("a")
	mreq.Topics = append(mreq.Topics, mt)
	mresp, err := mreq.RequestWith(ctxFor(t, 10*time.Second), cl)
	if err != nil || len(mresp.Topics) != 1 || len(mresp.Topics[0].Partitions) != 2 {
		t.Fatalf("metadata: %v %+v", err, mresp)
	}
	for _, p := range mresp.Topics[0].Partitions {
		switch p.Partition {
		case 0:
			if p.Leader < 0 || p.ErrorCode != 0 {
				t.Errorf("a-0: leader %d, %v", p.Leader, kerr.ErrorForCode(p.ErrorCode))
			}
		case 1:
			if p.Leader != -1 || len(p.OfflineReplicas) != 1 || p.ErrorCode != kerr.LeaderNotAvailable.Code {
				t.Errorf("a-1: leader %d, offline %v, %v; want no leader, its replica offline, LEADER_NOT_AVAILABLE",
					p.Leader, p.OfflineReplicas, kerr.ErrorForCode(p.ErrorCode))
			}
		}
	}

	body := httpGet(t, "http://"+b.HTTPAddr()+"/readyz")
	if !strings.Contains(body, dirs[1]) {
		t.Errorf("/readyz does not name the failed dir: %s", body)
	}
	metrics := httpGet(t, "http://"+b.HTTPAddr()+"/metrics")
	if !strings.Contains(metrics, "kafka_log_logmanager_offlinelogdirectorycount 1") ||
		!strings.Contains(metrics, fmt.Sprintf("kafka_log_logmanager_logdirectoryoffline{logDirectory=%q} 1", dirs[1])) {
		t.Errorf("metrics do not show the failed dir:\n%s", grepLines(metrics, "logmanager"))
	}
}

// TestJBODRestartWithDirMissing: a broker restarted with one of its log
// dirs gone (its mount point not a directory) starts, serves the
// partitions of the other dir, and answers KAFKA_STORAGE_ERROR for the
// missing dir's.
func TestJBODRestartWithDirMissing(t *testing.T) {
	dirs := twoDirs(t)
	fs := faultfs.New()
	b := jbodBroker(t, dirs, fs)
	cl := client(t, b.Addr())
	if r, err := kadm.NewClient(cl).CreateTopic(ctxFor(t, 30*time.Second), 2, 1, nil, "a"); err != nil || r.Err != nil {
		t.Fatal(err, r.Err)
	}
	for p := int32(0); p < 2; p++ {
		if code := produceRaw(t, cl, "a", p); code != 0 {
			t.Fatalf("a-%d: %v", p, kerr.ErrorForCode(code))
		}
	}
	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dirs[1]); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dirs[1], []byte("the disk is gone"), 0o644); err != nil {
		t.Fatal(err)
	}

	b = jbodBroker(t, dirs, fs)
	cl = client(t, b.Addr())
	if code := produceRaw(t, cl, "a", 0); code != 0 {
		t.Fatalf("a-0 after restart: %v", kerr.ErrorForCode(code))
	}
	if code := produceRaw(t, cl, "a", 1); code != kerr.KafkaStorageError.Code {
		t.Fatalf("a-1 (missing dir) after restart: %v, want KAFKA_STORAGE_ERROR", kerr.ErrorForCode(code))
	}
	var found bool
	for _, d := range describeLogDirs(t, cl).Dirs {
		if d.Dir == dirs[1] {
			found = d.ErrorCode == kerr.KafkaStorageError.Code
		}
	}
	if !found {
		t.Error("DescribeLogDirs does not answer the missing dir KAFKA_STORAGE_ERROR")
	}
	// a-1 has no leader (its replica is offline): kadm reports it as a
	// shard error beside a-0's answer.
	lo, err := kadm.NewClient(cl).ListEndOffsets(ctxFor(t, 30*time.Second), "a")
	var shardErrs *kadm.ShardErrors
	if err != nil && !errors.As(err, &shardErrs) {
		t.Fatal(err)
	}
	if o, ok := lo.Lookup("a", 0); !ok || o.Err != nil || o.Offset != 2 {
		t.Errorf("a-0 end offset after restart: %+v", o)
	}
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
