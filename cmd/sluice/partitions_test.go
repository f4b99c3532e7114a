package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/internal/zktest"
)

func TestAssignRackUnaware(t *testing.T) {
	// Kafka's AdminUtilsTest.testReplicaAssignment with brokers 0-4,
	// 10 partitions, rf 3, start index 0, shift 0 (fixedStartIndex 0).
	want := [][]int32{{0, 1, 2}, {1, 2, 3}, {2, 3, 4}, {3, 4, 0}, {4, 0, 1}, {0, 2, 3}, {1, 3, 4}, {2, 4, 0}, {3, 0, 1}, {4, 1, 2}}
	got := assignRackUnaware([]int32{0, 1, 2, 3, 4}, 10, 3, 0, 0)
	for p := range want {
		if !slices.Equal(got[p], want[p]) {
			t.Fatalf("partition %d: %v, want %v (all: %v)", p, got[p], want[p], got)
		}
	}
}

func TestParseReassignmentRefusesBadFiles(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"not json":       `{"version":1,`,
		"empty":          `{"version":1,"partitions":[]}`,
		"duplicate":      `{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1]},{"topic":"t","partition":0,"replicas":[2]}]}`,
		"replica twice":  `{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,1]}]}`,
		"no replicas":    `{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[]}]}`,
		"log dirs count": `{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["any"]}]}`,
		"empty log dir":  `{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1],"log_dirs":[""]}]}`,
	} {
		f := filepath.Join(dir, strings.ReplaceAll(name, " ", "_"))
		os.WriteFile(f, []byte(body), 0o644)
		if _, _, err := parseReassignment(f); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestPartitionsReassign: `sluice partitions reassign` against a real
// cluster of in-process brokers: --generate proposes a placement over four
// brokers, --execute --throttle moves partitions onto the fourth and sets
// Kafka's throttle configs, --verify reports the moves done and removes
// the throttles; the records are all there afterwards.
func TestPartitionsReassign(t *testing.T) {
	zk := zktest.Start(t)
	bs := brokertest.StartCluster(t, 3, "memory", zk.Addr())
	cl, err := kgo.NewClient(kgo.SeedBrokers(bs[0].Addr()), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if r, err := adm.CreateTopic(ctx, 6, 2, nil, "moving"); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	const records = 300
	for i := range records {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "moving", Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	b4 := brokertest.Start(t, "memory", func(c *config.Config) {
		c.BrokerID = 4
		c.ZooKeeperConnect = zk.Addr() + "/sluice"
		c.ControlledShutdownEnable = false
		c.OffsetsTopicReplication = 1
	})
	brokertest.WaitForBrokers(t, 4, nil, append(bs, b4)...)

	dir := t.TempDir()
	sl := func(wantCode int, args ...string) string {
		t.Helper()
		var stdout, stderr strings.Builder
		if code := run(append(args, "--bootstrap-server", bs[1].Addr()), &stdout, &stderr); code != wantCode {
			t.Fatalf("sluice %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, wantCode, stdout.String(), stderr.String())
		}
		return stdout.String()
	}
	sl(2, "partitions", "reassign", "--verify")
	sl(2, "partitions", "reassign", "--execute", "--reassignment-json-file", "x", "--verify")
	if out := sl(0, "partitions", "reassign", "--list"); out != "No partition reassignments found.\n" {
		t.Fatalf("list: %q", out)
	}

	topicsFile := filepath.Join(dir, "topics.json")
	os.WriteFile(topicsFile, []byte(`{"topics":[{"topic":"moving"}],"version":1}`), 0o644)
	out := sl(0, "partitions", "reassign", "--generate", "--topics-to-move-json-file", topicsFile, "--broker-list", "1,2,3,4")
	lines := strings.Split(out, "\n")
	if len(lines) < 5 || lines[0] != "Current partition replica assignment" || lines[3] != "Proposed partition reassignment configuration" {
		t.Fatalf("generate:\n%s", out)
	}
	var cur, proposed reassignFile
	if err := json.Unmarshal([]byte(lines[1]), &cur); err != nil || len(cur.Partitions) != 6 {
		t.Fatalf("current: %v %+v", err, cur)
	}
	if err := json.Unmarshal([]byte(lines[4]), &proposed); err != nil || len(proposed.Partitions) != 6 {
		t.Fatalf("proposed: %v %+v", err, proposed)
	}
	// Move a third of the partitions: two that the proposal puts on
	// broker 4.
	var plan reassignFile
	plan.Version = 1
	for _, e := range proposed.Partitions {
		if slices.Contains(e.Replicas, 4) && len(plan.Partitions) < 2 {
			if len(e.Replicas) != 2 || len(e.LogDirs) != 2 {
				t.Fatalf("proposed entry %+v", e)
			}
			plan.Partitions = append(plan.Partitions, e)
		}
	}
	if len(plan.Partitions) != 2 {
		t.Fatalf("the proposal puts broker 4 on fewer than 2 partitions: %s", lines[4])
	}
	planFile := filepath.Join(dir, "plan.json")
	b, _ := json.Marshal(plan)
	os.WriteFile(planFile, b, 0o644)

	out = sl(0, "partitions", "reassign", "--execute", "--reassignment-json-file", planFile, "--throttle", "50000000")
	for _, want := range []string{"Current partition replica assignment\n\n{\"version\":1,\"partitions\":[",
		"Save this to use as the --reassignment-json-file option during rollback\n",
		"The inter-broker throttle limit was set to 50000000 B/s\n", "Successfully started partition reassignments for moving-"} {
		if !strings.Contains(out, want) {
			t.Fatalf("execute lacks %q:\n%s", want, out)
		}
	}
	// The throttles are Kafka's configs, on the brokers and the topic.
	tcs, err := adm.DescribeTopicConfigs(ctx, "moving")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range tcs[0].Configs {
		if c.Value != nil {
			got[c.Key] = *c.Value
		}
	}
	for _, e := range plan.Partitions {
		moving := false
		for _, ce := range cur.Partitions {
			if ce.Partition == e.Partition {
				for _, r := range ce.Replicas {
					if !strings.Contains(got[leaderThrottledReplicas], strconv.Itoa(int(e.Partition))+":"+strconv.Itoa(int(r))) {
						t.Errorf("leader throttle %q lacks %d:%d", got[leaderThrottledReplicas], e.Partition, r)
					}
				}
				moving = !slices.Equal(ce.Replicas, e.Replicas)
			}
		}
		if moving && slices.Contains(e.Replicas, 4) && !strings.Contains(got[followerThrottledReplica], strconv.Itoa(int(e.Partition))+":4") {
			t.Errorf("follower throttle %q lacks %d:4", got[followerThrottledReplica], e.Partition)
		}
	}
	bcs, err := adm.DescribeBrokerConfigs(ctx, 4)
	if err != nil {
		t.Fatal(err)
	}
	rate := ""
	for _, c := range bcs[0].Configs {
		if c.Key == leaderThrottleRate {
			rate = c.MaybeValue()
		}
	}
	if rate != "50000000" {
		t.Fatalf("broker 4 %s = %q", leaderThrottleRate, rate)
	}
	var verified string
	for i := 0; ; i++ {
		verified = sl(0, "partitions", "reassign", "--verify", "--reassignment-json-file", planFile)
		if strings.Count(verified, "is completed.") == 2 {
			break
		}
		if i > 300 {
			t.Fatalf("moves not done:\n%s", verified)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.HasPrefix(verified, "Status of partition reassignment:\n") || !strings.Contains(verified, "Clearing broker-level throttles on brokers 1,2,3,4\n") ||
		!strings.Contains(verified, "Clearing topic-level throttles on topic moving\n") {
		t.Fatalf("verify:\n%s", verified)
	}
	tcs, _ = adm.DescribeTopicConfigs(ctx, "moving")
	for _, c := range tcs[0].Configs {
		if (c.Key == leaderThrottledReplicas || c.Key == followerThrottledReplica) && c.Source == 1 /* DYNAMIC_TOPIC_CONFIG */ {
			t.Errorf("throttle left after verify: %s=%v", c.Key, c.MaybeValue())
		}
	}
	// Every record is still there, read back from the new replicas'
	// partitions through their leaders.
	// (Each broker's metadata follows the controller's UpdateMetadata.)
	for i := 0; ; i++ {
		md, err := adm.Metadata(ctx, "moving")
		if err != nil {
			t.Fatal(err)
		}
		var wrong []string
		for _, e := range plan.Partitions {
			if rs := md.Topics["moving"].Partitions[e.Partition].Replicas; !slices.Equal(rs, e.Replicas) {
				wrong = append(wrong, fmt.Sprintf("partition %d replicas %v, want %v", e.Partition, rs, e.Replicas))
			}
		}
		if len(wrong) == 0 {
			break
		}
		if i > 300 {
			t.Fatal(wrong)
		}
		time.Sleep(100 * time.Millisecond)
	}
	consumer, err := kgo.NewClient(kgo.SeedBrokers(b4.Addr()), kgo.ConsumeTopics("moving"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	seen := map[string]bool{}
	for len(seen) < records && ctx.Err() == nil {
		consumer.PollFetches(ctx).EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
	}
	if len(seen) != records {
		t.Fatalf("read back %d of %d records", len(seen), records)
	}
	if out := sl(0, "partitions", "reassign", "--cancel", "--reassignment-json-file", planFile); !strings.HasPrefix(out, "Successfully cancelled partition reassignments for: \n") {
		t.Fatalf("cancel of finished moves: %q", out)
	}
}
