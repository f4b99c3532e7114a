package main

import (
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/internal/zktest"
)

// TestReassignAdditionalKeepsThrottles: `--execute --additional
// --throttle` while another move of the same topic runs keeps that move
// throttled, as Kafka's tool does (calculateProposedMoveMap: the topic's
// throttled replica lists name the moves in progress too, since they are
// replaced as a whole); and `--throttle 0` is a rate, as Kafka's (>= 0),
// which holds the moves back. Partition 0's move is held in progress by a
// 10 kB/s throttle over 2 MiB.
func TestReassignAdditionalKeepsThrottles(t *testing.T) {
	zk := zktest.Start(t)
	bs := brokertest.StartCluster(t, 3, "memory", zk.Addr())
	b4 := brokertest.Start(t, "memory", func(c *config.Config) {
		c.BrokerID = 4
		c.ZooKeeperConnect = zk.Addr() + "/sluice"
		c.ControlledShutdownEnable = false
		c.OffsetsTopicReplication = 1
	})
	brokertest.WaitForBrokers(t, 4, nil, append(bs, b4)...)
	sl := func(args ...string) string {
		t.Helper()
		var stdout, stderr strings.Builder
		if code := run(append(args, "--bootstrap-server", bs[0].Addr()), &stdout, &stderr); code != 0 {
			t.Fatalf("sluice %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
		}
		return stdout.String()
	}
	sl("topic", "create", "moving", "--replica-assignment", "1:2,2:3")
	cl, err := kgo.NewClient(kgo.SeedBrokers(bs[0].Addr()), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	val := make([]byte, 64<<10)
	rand.Read(val)
	for range 32 { // 2 MiB into partition 0
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "moving", Partition: 0, Value: val}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	planA, planB := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	os.WriteFile(planA, []byte(`{"version":1,"partitions":[{"topic":"moving","partition":0,"replicas":[4,2]}]}`), 0o644)
	os.WriteFile(planB, []byte(`{"version":1,"partitions":[{"topic":"moving","partition":1,"replicas":[4,3]}]}`), 0o644)
	sl("partitions", "reassign", "--execute", "--reassignment-json-file", planA, "--throttle", "10000")
	sl("partitions", "reassign", "--execute", "--reassignment-json-file", planB, "--throttle", "10000", "--additional")

	adm := kadm.NewClient(cl)
	topicConfig := func(key string) string {
		t.Helper()
		rcs, err := adm.DescribeTopicConfigs(ctx, "moving")
		if err != nil || len(rcs) != 1 || rcs[0].Err != nil {
			t.Fatalf("describe configs: %v %v", err, rcs)
		}
		for _, c := range rcs[0].Configs {
			if c.Key == key {
				return c.MaybeValue()
			}
		}
		return ""
	}
	if got := topicConfig(leaderThrottledReplicas); got != "0:1,0:2,1:2,1:3" {
		t.Errorf("%s = %q after the second move, want both moves' sources 0:1,0:2,1:2,1:3", leaderThrottledReplicas, got)
	}
	if got := topicConfig(followerThrottledReplica); got != "0:4,1:4" {
		t.Errorf("%s = %q after the second move, want both moves' destinations 0:4,1:4", followerThrottledReplica, got)
	}

	// --throttle 0 sets a rate of 0 on the brokers of the moves.
	sl("partitions", "reassign", "--execute", "--reassignment-json-file", planA, "--throttle", "0", "--additional")
	for _, id := range []int32{1, 2, 4} {
		rcs, err := adm.DescribeBrokerConfigs(ctx, id)
		if err != nil || len(rcs) != 1 {
			t.Fatalf("describe broker %d: %v", id, err)
		}
		for _, c := range rcs[0].Configs {
			if (c.Key == leaderThrottleRate || c.Key == followerThrottleRate) && c.MaybeValue() != "0" {
				t.Errorf("broker %d: %s = %q after --throttle 0", id, c.Key, c.MaybeValue())
			}
		}
	}
	if out := sl("partitions", "reassign", "--list"); !strings.Contains(out, "moving-0: replicas: 4,2,1. adding: 4. removing: 1.") {
		t.Fatalf("partition 0's move is not in progress:\n%s", out)
	}
	sl("partitions", "reassign", "--cancel", "--reassignment-json-file", planA)
}
