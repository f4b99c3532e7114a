package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/internal/zktest"
)

// TestReassignLogDirs: a reassignment file's log_dirs, as Kafka's tool
// reads them. In one plan, partition 0 keeps its replicas but broker 1's
// moves to its other log dir (AlterReplicaLogDirs on the same broker), and
// partition 1 moves from broker 1 to broker 3 into a given dir of broker 3
// (AlterReplicaLogDirs retried until the reassignment has created the
// replica there). --replica-alter-log-dirs-throttle 1024 sets
// replica.alter.log.dirs.io.max.bytes.per.second on brokers 1 and 3 only,
// which holds the 256 KiB copy back: --verify reports the replica move
// still in progress; run again with --additional and a high throttle, it
// completes, and --verify reports it and clears that throttle with the
// others. A move back, held by the throttle again, is cancelled with
// --cancel (the replica sent to the dir it is in) and --verify then says
// it is not being moved.
func TestReassignLogDirs(t *testing.T) {
	zk := zktest.Start(t)
	var mu sync.Mutex
	dirs := map[int32][]string{}
	bs := brokertest.StartCluster(t, 3, "segment", zk.Addr(), func(c *config.Config) {
		root := c.LogDirs[0]
		c.LogDirs = []string{filepath.Join(root, "d0"), filepath.Join(root, "d1")}
		mu.Lock()
		dirs[c.BrokerID] = c.LogDirs
		mu.Unlock()
	})
	sl := func(args ...string) string {
		t.Helper()
		var stdout, stderr strings.Builder
		if code := run(append(args, "--bootstrap-server", bs[0].Addr()), &stdout, &stderr); code != 0 {
			t.Fatalf("sluice %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
		}
		return stdout.String()
	}
	sl("topic", "create", "dirs", "--replica-assignment", "1:2,1:2")
	cl, err := kgo.NewClient(kgo.SeedBrokers(bs[0].Addr()), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	val := make([]byte, 16<<10)
	for range 16 { // 256 KiB into partition 0, a batch per record
		rand.Read(val)
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "dirs", Partition: 0, Value: val}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// Where broker 1 has partition 0 now; the plan names its other dir.
	ld, err := adm.DescribeBrokerLogDirs(ctx, 1, kadm.TopicsSet{"dirs": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	var from string
	ld.Each(func(d kadm.DescribedLogDir) {
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) { from = d.Dir })
	})
	to := dirs[1][0]
	if from == to {
		to = dirs[1][1]
	}
	if from == "" {
		t.Fatal("broker 1 lists no log dir for dirs-0")
	}
	plan := reassignFile{Version: 1, Partitions: []reassignEntry{
		{Topic: "dirs", Partition: 0, Replicas: []int32{1, 2}, LogDirs: []string{to, anyLogDir}},
		{Topic: "dirs", Partition: 1, Replicas: []int32{3, 2}, LogDirs: []string{dirs[3][1], anyLogDir}},
	}}
	planFile := filepath.Join(t.TempDir(), "plan.json")
	b, _ := json.Marshal(plan)
	os.WriteFile(planFile, b, 0o644)

	out := sl("partitions", "reassign", "--execute", "--reassignment-json-file", planFile, "--replica-alter-log-dirs-throttle", "1024")
	for _, want := range []string{
		"Warning: You must run --verify periodically",
		"The replica-alter-dir throttle limit was set to 1024 B/s\n",
		fmt.Sprintf("Successfully started moving log directory to %s for replica dirs-0 with broker 1 \n", to),
		fmt.Sprintf("Successfully started moving log directory to %s for replica dirs-1 with broker 3 \n", dirs[3][1]),
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("execute lacks %q:\n%s", want, out)
		}
	}
	rateOn := func(id int32) (string, kmsg.ConfigSource) {
		t.Helper()
		rcs, err := adm.DescribeBrokerConfigs(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range rcs[0].Configs {
			if c.Key == logDirThrottleRate {
				return c.MaybeValue(), c.Source
			}
		}
		t.Fatalf("broker %d describes no %s", id, logDirThrottleRate)
		return "", 0
	}
	for id, want := range map[int32]string{1: "1024", 2: "9223372036854775807", 3: "1024"} {
		if v, _ := rateOn(id); v != want {
			t.Errorf("broker %d: %s = %s, want %s", id, logDirThrottleRate, v, want)
		}
	}
	// The copy of broker 1's replica steps a 16 KiB batch, then waits 16 s
	// for the next: in progress for minutes.
	out = sl("partitions", "reassign", "--verify", "--reassignment-json-file", planFile)
	if !strings.Contains(out, "Reassignment of replica dirs-0-1 is still in progress.\n") || strings.Contains(out, "Clearing") {
		t.Fatalf("verify while broker 1's replica copies:\n%s", out)
	}

	out = sl("partitions", "reassign", "--execute", "--additional", "--reassignment-json-file", planFile, "--replica-alter-log-dirs-throttle", "1073741824")
	if !strings.Contains(out, "The replica-alter-dir throttle limit was set to 1073741824 B/s\n") {
		t.Fatalf("execute --additional:\n%s", out)
	}
	for i := 0; ; i++ {
		out = sl("partitions", "reassign", "--verify", "--reassignment-json-file", planFile)
		if strings.Contains(out, "Clearing broker-level throttles") {
			break
		}
		if i > 300 {
			t.Fatalf("moves not done:\n%s", out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, want := range []string{
		"Reassignment of partition dirs-0 is completed.\n",
		"Reassignment of partition dirs-1 is completed.\n",
		"Reassignment of replica dirs-0-1 completed successfully.\nReassignment of replica dirs-1-3 completed successfully.\n",
		"Clearing broker-level throttles on brokers 1,2,3\n",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("verify lacks %q:\n%s", want, out)
		}
	}
	for id := int32(1); id <= 3; id++ {
		if v, src := rateOn(id); src == kmsg.ConfigSourceDynamicBrokerConfig {
			t.Errorf("broker %d: %s = %s left after verify", id, logDirThrottleRate, v)
		}
	}
	// The replicas are where the plan put them.
	for id, p := range map[int32]int32{1: 0, 3: 1} {
		ld, err := adm.DescribeBrokerLogDirs(ctx, id, kadm.TopicsSet{"dirs": {p: {}}})
		if err != nil {
			t.Fatal(err)
		}
		var in []string
		ld.Each(func(d kadm.DescribedLogDir) {
			d.Topics.Each(func(dp kadm.DescribedLogDirPartition) { in = append(in, fmt.Sprint(d.Dir, dp.IsFuture)) })
		})
		want := fmt.Sprint(plan.Partitions[p].LogDirs[0], false)
		if len(in) != 1 || in[0] != want {
			t.Errorf("broker %d lists dirs-%d in %v, want %s", id, p, in, want)
		}
	}

	// Back to the first dir, throttled again, then cancelled.
	back := reassignFile{Version: 1, Partitions: []reassignEntry{
		{Topic: "dirs", Partition: 0, Replicas: []int32{1, 2}, LogDirs: []string{from, anyLogDir}},
	}}
	backFile := filepath.Join(t.TempDir(), "back.json")
	b, _ = json.Marshal(back)
	os.WriteFile(backFile, b, 0o644)
	sl("partitions", "reassign", "--execute", "--reassignment-json-file", backFile, "--replica-alter-log-dirs-throttle", "1024")
	if out := sl("partitions", "reassign", "--verify", "--reassignment-json-file", backFile); !strings.Contains(out, "Reassignment of replica dirs-0-1 is still in progress.\n") {
		t.Fatalf("verify of the move back:\n%s", out)
	}
	out = sl("partitions", "reassign", "--cancel", "--reassignment-json-file", backFile)
	if want := fmt.Sprintf("Successfully started moving log directory to %s for replica dirs-0 with broker 1 \n", to); !strings.Contains(out, want) ||
		!strings.Contains(out, "Clearing broker-level throttles") {
		t.Fatalf("cancel lacks %q:\n%s", want, out)
	}
	want := fmt.Sprintf("Partition dirs-0 on broker 1 is not being moved from log dir %s to %s.\n", to, from)
	if out := sl("partitions", "reassign", "--verify", "--reassignment-json-file", backFile); !strings.Contains(out, want) {
		t.Fatalf("verify after cancel lacks %q:\n%s", want, out)
	}
	if out := sl("partitions", "reassign", "--cancel", "--reassignment-json-file", backFile); !strings.Contains(out, "None of the specified partition moves are active.\n") {
		t.Fatalf("cancel of nothing:\n%s", out)
	}
}
