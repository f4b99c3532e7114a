package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
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
