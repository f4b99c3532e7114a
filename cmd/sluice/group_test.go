package main

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
)

// TestGroupAgainstKfake runs `sluice group` in process against franz-go's
// fake Kafka cluster, so the tool's own logic is checked against a
// reference broker independently of Sluice's group coordinator (e2e's
// TestCLIGroup runs the same commands against the real binary).
func TestGroupAgainstKfake(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := c.ListenAddrs()[0]
	sl := func(wantCode int, args ...string) (string, string) {
		t.Helper()
		var stdout, stderr strings.Builder
		if code := run(append(args, "--bootstrap-server", addr), &stdout, &stderr); code != wantCode {
			t.Fatalf("sluice %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, wantCode, stdout.String(), stderr.String())
		}
		return stdout.String(), stderr.String()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	produce := func(p int32, n int) {
		t.Helper()
		for range n {
			if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: p, Value: []byte("x")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	produce(0, 3)
	produce(1, 2)
	cons, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup("g"), kgo.ConsumeTopics("orders"),
		kgo.DisableAutoCommit(), kgo.ClientID("me"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	for got := 0; got < 5; {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of 5: %v", got, ctx.Err())
		}
		got += fs.NumRecords()
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}

	out, _ := sl(0, "group", "describe", "g")
	for _, want := range []string{"Stable", "orders:0,1", "g      orders  0          3               3               0    me-"} {
		if !strings.Contains(out, want) {
			t.Fatalf("describe of an active group lacks %q:\n%s", want, out)
		}
	}
	if _, stderr := sl(1, "group", "reset-offsets", "g", "--topic", "orders", "--to-earliest"); !strings.Contains(stderr, "inactive") {
		t.Fatalf("reset of an active group: %s", stderr)
	}
	if _, stderr := sl(1, "group", "delete", "g"); !strings.Contains(stderr, "active members") {
		t.Fatalf("delete of an active group: %s", stderr)
	}

	cons.Close()
	produce(0, 1)
	out, _ = sl(0, "group", "describe", "g")
	for _, want := range []string{"has no active members", "g      orders  0          3               4               1    -"} {
		if !strings.Contains(out, want) {
			t.Fatalf("describe of an empty group lacks %q:\n%s", want, out)
		}
	}
	sl(0, "group", "reset-offsets", "g", "--topic", "orders:1", "--to-offset", "1", "--execute")
	out, stderr := sl(0, "group", "reset-offsets", "g", "--all-topics", "--shift-by", "-10")
	if !strings.Contains(out, "g      orders  1          0") || !strings.Contains(stderr, "below the log start offset") || !strings.Contains(stderr, "dry run") {
		t.Fatalf("shift-by dry run:\n%s\n%s", out, stderr)
	}
	out, _ = sl(0, "group", "describe", "g")
	if !strings.Contains(out, "g      orders  1          1               2               1    -") {
		t.Fatalf("after reset of partition 1 to 1:\n%s", out)
	}
	if _, stderr := sl(1, "group", "describe", "nope"); !strings.Contains(stderr, `consumer group "nope" does not exist`) {
		t.Fatalf("describe of an unknown group: %s", stderr)
	}
	sl(0, "group", "reset-offsets", "fresh", "--topic", "orders", "--to-latest", "--execute")
	sl(0, "group", "delete", "g", "fresh")
	if out, _ := sl(0, "group", "list"); strings.Contains(out, "\ng ") || strings.Contains(out, "fresh") {
		t.Fatalf("list after delete:\n%s", out)
	}
}

// TestGroupConsumerProtocol: with a classic group and a consumer group
// (KIP-848) on one broker, `sluice group list` shows each group's type and
// protocol type and filters by type, and `sluice group describe` shows a
// consumer group's epochs and each member's epoch, client, host, current
// and target assignment, then its offsets and lag.
func TestGroupConsumerProtocol(t *testing.T) {
	b := brokertest.Start(t, "memory", func(c *config.Config) {
		c.GroupConsumerMinHeartbeatInterval = 100 * time.Millisecond
		c.GroupConsumerHeartbeatInterval = 200 * time.Millisecond
	})
	addr := b.Addr()
	sl := func(args ...string) string {
		t.Helper()
		var stdout, stderr strings.Builder
		if code := run(append(args, "--bootstrap-server", addr), &stdout, &stderr); code != 0 {
			t.Fatalf("sluice %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
		}
		return stdout.String()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	adm := kadm.NewClient(prod)
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	for p := range int32(2) {
		for range 3 {
			if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: p, Value: []byte("x")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 1, LeaderEpoch: -1})
	if _, err := adm.CommitOffsets(ctx, "old", offs); err != nil {
		t.Fatal(err)
	}

	cons, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup("new"), kgo.ConsumeTopics("orders"),
		kgo.ServerSideBalancer(), kgo.DisableAutoCommit(), kgo.ClientID("me848"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	for got := 0; got < 6; {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of 6: %v", got, ctx.Err())
		}
		got += fs.NumRecords()
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	// Wait (bounded) until the member holds its whole target assignment.
	var epoch int32
	for i := 0; ; i++ {
		d, err := adm.DescribeConsumerGroups(ctx, "new")
		if err != nil {
			t.Fatal(err)
		}
		g := d["new"]
		if g.Err == nil && g.State == "Stable" && len(g.Members) == 1 {
			epoch = g.Epoch
			break
		}
		if i == 200 || ctx.Err() != nil {
			t.Fatalf("group not Stable with one member: %+v", g)
		}
		time.Sleep(50 * time.Millisecond)
	}

	out := sl("group", "list")
	for _, want := range []string{
		"new    Stable  consumer       consumer",
		"old    Empty   -              classic",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("list lacks %q:\n%s", want, out)
		}
	}
	if out := sl("group", "list", "--type", "consumer"); !strings.Contains(out, "new ") || strings.Contains(out, "old ") {
		t.Fatalf("list --type consumer:\n%s", out)
	}
	if out := sl("group", "list", "--type", "classic", "--state", "Empty"); strings.Contains(out, "new ") || !strings.Contains(out, "old ") {
		t.Fatalf("list --type classic --state Empty:\n%s", out)
	}

	out = sl("group", "describe", "new")
	e := strconv.Itoa(int(epoch))
	for _, want := range []string{
		"GROUP-EPOCH  TARGET-ASSIGNMENT-EPOCH",
		"Stable  consumer       uniform              1         " + e + "            " + e,
		"CURRENT-EPOCH  CURRENT-ASSIGNMENT  TARGET-EPOCH  TARGET-ASSIGNMENT",
		"me848      2            " + e + "              orders:0,1          " + e + "             orders:0,1",
		"new    orders  0          3               3               0",
		"new    orders  1          3               3               0",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("describe of a consumer group lacks %q:\n%s", want, out)
		}
	}
	// Offsets of a consumer group with members are not reset, not even
	// in a dry run.
	var stdout, stderr strings.Builder
	if code := run([]string{"group", "reset-offsets", "new", "--all-topics", "--to-earliest", "--bootstrap-server", addr}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "Stable with 1 active member") {
		t.Fatalf("reset-offsets of an active consumer group: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	// A classic group is described as before.
	if out := sl("group", "describe", "old"); !strings.Contains(out, "has no active members") || !strings.Contains(out, "old    orders  0          1               3               2") {
		t.Fatalf("describe of a classic group:\n%s", out)
	}
}
