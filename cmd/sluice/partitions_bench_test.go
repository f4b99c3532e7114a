package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/broker"
	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/internal/zktest"
)

// reassignBenchBytes is what each partition of a benchmark move holds (64
// KiB records, incompressible).
const reassignBenchBytes = 12 << 20

// BenchmarkReassignCopyRate: how fast `sluice partitions reassign
// --execute` copies two partitions (2 × 12 MiB) onto a new broker,
// unthrottled and with --throttle 10 MiB/s and 2 MiB/s. Four in-process
// brokers on one ZooKeeper, the segment (on-disk) backend; each move is
// [1,2],[2,3] -> [4,2],[4,3] of a fresh topic. The copy is timed from
// --execute until broker 4's replicas (DescribeLogDirs, sampled every
// 50 ms) hold the bytes the partitions had; --verify then completes the
// move and removes the throttles. Each move starts 12 s after the last
// (see below). Reported as MiB/s (and ns/op is the
// copy time); run with -benchtime=1x, each op moves 24 MiB.
func BenchmarkReassignCopyRate(b *testing.B) {
	zk := zktest.Start(b)
	bs := brokertest.StartCluster(b, 3, "segment", zk.Addr())
	b4 := brokertest.Start(b, "segment", func(c *config.Config) {
		c.BrokerID = 4
		c.ZooKeeperConnect = zk.Addr() + "/sluice"
		c.ControlledShutdownEnable = false
		c.OffsetsTopicReplication = 1
	})
	brokertest.WaitForBrokers(b, 4, nil, append(bs, b4)...)
	for _, tc := range []struct {
		name     string
		throttle int64 // B/s; 0: none
	}{{"throttle=none", 0}, {"throttle=10MiB", 10 << 20}, {"throttle=2MiB", 2 << 20}} {
		// A throttle measures the bytes of the last
		// replication.quota.window.num × replication.quota.window.size.seconds
		// (11 × 1 s): a move started sooner after a throttled one
		// inherits its bytes and starts held back (1.25 MiB/s measured
		// at 2 MiB/s right after the 10 MiB/s move). Each move here
		// starts with the window clear, as on a cluster idle that long.
		if tc.throttle > 0 {
			time.Sleep(12 * time.Second)
		}
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			var copied int64
			var took time.Duration
			for i := range b.N {
				b.StopTimer()
				topic := fmt.Sprintf("copy-%s-%d", strings.TrimPrefix(tc.name, "throttle="), i)
				if i > 0 {
					time.Sleep(12 * time.Second)
				}
				n, d := benchMove(b, bs[0], b4, topic, tc.throttle)
				copied += n
				took += d
			}
			b.SetBytes(copied / int64(b.N))
			b.ReportMetric(float64(copied)/(1<<20)/took.Seconds(), "MiB/s")
		})
	}
}

// benchMove fills topic's two partitions, moves them onto b4 (timer
// running from --execute until b4 holds their bytes) and waits for the
// move to complete. It returns b4's bytes and the copy time.
func benchMove(b *testing.B, seed, b4 *broker.Broker, topic string, throttle int64) (int64, time.Duration) {
	sl := func(args ...string) string {
		b.Helper()
		var stdout, stderr strings.Builder
		if code := run(append(args, "--bootstrap-server", seed.Addr()), &stdout, &stderr); code != 0 {
			b.Fatalf("sluice %s: exit %d\n%s\n%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
		}
		return stdout.String()
	}
	sl("topic", "create", topic, "--replica-assignment", "1:2,2:3")
	cl, err := kgo.NewClient(kgo.SeedBrokers(seed.Addr()), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(1<<20), kgo.MaxBufferedRecords(64))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	val := make([]byte, 64<<10)
	rand.Read(val)
	var failed error
	for range reassignBenchBytes / len(val) {
		for p := range int32(2) {
			cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: p, Value: val}, func(_ *kgo.Record, err error) {
				if err != nil {
					failed = err // callbacks run one at a time
				}
			})
		}
	}
	if err := cl.Flush(ctx); err != nil || failed != nil {
		b.Fatalf("fill %s: %v %v", topic, err, failed)
	}
	want := int64(0)
	dirs, err := kadm.NewClient(cl).DescribeAllLogDirs(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	dirs.Each(func(d kadm.DescribedLogDir) {
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
			if p.Topic == topic && p.Broker == 1+p.Partition { // the leaders, 1 and 2
				want += p.Size
			}
		})
	})
	on4, err := kgo.NewClient(kgo.SeedBrokers(b4.Addr()))
	if err != nil {
		b.Fatal(err)
	}
	defer on4.Close()
	plan := filepath.Join(b.TempDir(), "plan.json")
	os.WriteFile(plan, []byte(`{"version":1,"partitions":[{"topic":"`+topic+`","partition":0,"replicas":[4,2]},{"topic":"`+topic+`","partition":1,"replicas":[4,3]}]}`), 0o644)
	args := []string{"partitions", "reassign", "--execute", "--reassignment-json-file", plan}
	if throttle > 0 {
		args = append(args, "--throttle", strconv.FormatInt(throttle, 10))
	}

	b.StartTimer()
	start := time.Now()
	sl(args...)
	var have int64
	for have < want {
		if ctx.Err() != nil {
			b.Fatalf("broker 4 holds %d of %d bytes of %s after 5 minutes", have, want, topic)
		}
		time.Sleep(50 * time.Millisecond)
		have = replicaBytes(ctx, on4, topic)
	}
	took := time.Since(start)
	b.StopTimer()

	for !strings.Contains(sl("partitions", "reassign", "--verify", "--reassignment-json-file", plan), "Clearing topic-level throttles") {
		if ctx.Err() != nil {
			b.Fatalf("the move of %s never completed", topic)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return have, took
}

// replicaBytes is the size of the broker's replicas of topic, asked of
// the client's seed broker alone (-1 on an error).
func replicaBytes(ctx context.Context, cl *kgo.Client, topic string) int64 {
	req := kmsg.NewPtrDescribeLogDirsRequest()
	rt := kmsg.NewDescribeLogDirsRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{0, 1}
	req.Topics = append(req.Topics, rt)
	// Through the client, DescribeLogDirs would go to every broker.
	kr, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		return -1
	}
	var n int64
	for _, d := range kr.(*kmsg.DescribeLogDirsResponse).Dirs {
		for _, t := range d.Topics {
			for _, p := range t.Partitions {
				n += p.Size
			}
		}
	}
	return n
}
