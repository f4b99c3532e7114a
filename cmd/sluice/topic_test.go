package main

import (
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/internal/zktest"
)

// TestTopicDescribeCleanupPolicy: `sluice topic describe` shows each
// topic's cleanup.policy and where it comes from, and follows a live
// alter-config.
func TestTopicDescribeCleanupPolicy(t *testing.T) {
	b := brokertest.Start(t, "memory")
	sl := func(args ...string) string {
		t.Helper()
		var stdout, stderr strings.Builder
		if code := run(append(args, "--bootstrap-server", b.Addr()), &stdout, &stderr); code != 0 {
			t.Fatalf("sluice %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
		}
		return stdout.String()
	}
	sl("topic", "create", "plain")
	sl("topic", "create", "kv", "--config", "cleanup.policy=compact")
	out := sl("topic", "describe", "plain", "kv")
	for _, want := range []string{
		"Configs: \n  CleanupPolicy: delete (default)\n",
		"Configs: cleanup.policy=compact\n  CleanupPolicy: compact (topic)  DirtyRatio: 0.00  LastCleaned: never (since the brokers started)\n",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("describe output lacks %q:\n%s", want, out)
		}
	}
	sl("topic", "alter-config", "kv", "--set", "cleanup.policy=compact,delete")
	if out := sl("topic", "describe", "kv"); !strings.Contains(out, "  CleanupPolicy: compact,delete (topic)  DirtyRatio: ") {
		t.Fatalf("describe after alter-config:\n%s", out)
	}
}

// TestTopicDescribeReassigning: while a partition is being moved, `sluice
// topic describe` shows its adding and removing replicas (kafka-topics.sh's
// "Adding Replicas" and "Removing Replicas", from
// ListPartitionReassignments), "-" for the partitions not moving; once the
// move is cancelled the columns go. The move is held in progress by a
// 10 kB/s throttle over 2 MiB: broker 4 gets at most its first fetch
// (replica.fetch.max.bytes, 1 MiB) before the throttle holds it back.
func TestTopicDescribeReassigning(t *testing.T) {
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
	if out := sl("topic", "describe", "moving"); strings.Contains(out, "ADDING") {
		t.Fatalf("describe before any move:\n%s", out)
	}

	plan := filepath.Join(t.TempDir(), "plan.json")
	os.WriteFile(plan, []byte(`{"version":1,"partitions":[{"topic":"moving","partition":0,"replicas":[4,2]}]}`), 0o644)
	sl("partitions", "reassign", "--execute", "--reassignment-json-file", plan, "--throttle", "10000")
	// The controller's answer to AlterPartitionReassignments comes after
	// it wrote the move: it is listed at once.
	rows := partitionRows(t, sl("topic", "describe", "moving"), "PARTITION", "LEADER", "REPLICAS", "ISR", "ADDING", "REMOVING")
	want := [][]string{{"0", "4,2,1", "4", "1"}, {"1", "2,3", "-", "-"}}
	if len(rows) != len(want) {
		t.Fatalf("rows %v", rows)
	}
	for i, w := range want {
		r := rows[i]
		if r["PARTITION"] != w[0] || r["REPLICAS"] != w[1] || r["ADDING"] != w[2] || r["REMOVING"] != w[3] {
			t.Errorf("partition row %v, want partition %s replicas %s adding %s removing %s", r, w[0], w[1], w[2], w[3])
		}
	}
	sl("partitions", "reassign", "--cancel", "--reassignment-json-file", plan)
	if out := sl("topic", "describe", "moving"); strings.Contains(out, "ADDING") {
		t.Fatalf("describe after the move was cancelled:\n%s", out)
	}
}

// partitionRows parses the partition table of a topic description: a header row
// of the given columns, then one row per partition, cells split on runs
// of spaces (no cell holds one).
func partitionRows(t *testing.T, out string, header ...string) []map[string]string {
	t.Helper()
	var rows []map[string]string
	var cols []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && f[0] == header[0] {
			cols = f
			if !slices.Equal(cols, header) {
				t.Fatalf("header %v, want %v:\n%s", cols, header, out)
			}
			continue
		}
		if cols == nil || len(f) != len(cols) {
			continue
		}
		r := map[string]string{}
		for i, c := range cols {
			r[c] = f[i]
		}
		rows = append(rows, r)
	}
	if cols == nil {
		t.Fatalf("no %v header:\n%s", header, out)
	}
	return rows
}
