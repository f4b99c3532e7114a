package main

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
)

// TestShareGroupResetDeleteOffsetsCLI: `sluice share-group reset-offsets`
// prints the plan without changing anything unless --execute, sets the
// start offset (to an offset, clamped, earliest, latest), is refused while
// the group has a member, and `delete-offsets` forgets the topic's state.
func TestShareGroupResetDeleteOffsetsCLI(t *testing.T) {
	b := brokertest.Start(t, "memory", func(c *config.Config) { c.GroupShare.Enable = true })
	addr := b.Addr()
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
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("queue"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "queue"); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	start := func() int64 {
		t.Helper()
		offs, err := adm.DescribeShareGroupOffsets(ctx, "q")
		if err != nil {
			t.Fatal(err)
		}
		if o, ok := offs["q"].Offsets["queue"][0]; ok {
			return o.StartOffset
		}
		return -1
	}

	out, errOut := sl(0, "share-group", "reset-offsets", "--group", "q", "--topic", "queue", "--to-offset", "4")
	if !strings.Contains(out, "NEW-OFFSET") || !strings.Contains(out, "q      queue  0          4") || !strings.Contains(errOut, "dry run") {
		t.Fatalf("dry run:\n%s\n%s", out, errOut)
	}
	if s := start(); s != -1 {
		t.Fatalf("a dry run changed the start offset to %d", s)
	}
	sl(0, "share-group", "reset-offsets", "--group", "q", "--topic", "queue:0", "--to-offset", "4", "--execute")
	if s := start(); s != 4 {
		t.Fatalf("--to-offset 4: start %d", s)
	}
	if _, errOut := sl(0, "share-group", "reset-offsets", "q", "--all-topics", "--to-offset", "99", "--execute"); !strings.Contains(errOut, "past the log end") {
		t.Fatalf("clamp warning missing:\n%s", errOut)
	}
	if s := start(); s != 10 {
		t.Fatalf("--to-offset 99: start %d, want 10 (log end)", s)
	}
	sl(0, "share-group", "reset-offsets", "--group", "q", "--topic", "queue", "--to-earliest", "--execute")
	if s := start(); s != 0 {
		t.Fatalf("--to-earliest: start %d", s)
	}

	// A member: refused, dry run included.
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.SubscribedTopicNames = "q", "member-a-000000000000000000000000", []string{"queue"}
	if r, err := hb.RequestWith(ctx, cl); err != nil || r.ErrorCode != 0 {
		t.Fatalf("join: %v %+v", err, r)
	}
	if _, errOut := sl(1, "share-group", "reset-offsets", "--group", "q", "--topic", "queue", "--to-latest", "--execute"); !strings.Contains(errOut, "active members") {
		t.Fatalf("reset with a member:\n%s", errOut)
	}
	if _, errOut := sl(1, "share-group", "delete-offsets", "--group", "q", "--topic", "queue"); !strings.Contains(errOut, "active members") {
		t.Fatalf("delete with a member:\n%s", errOut)
	}
	hb.MemberEpoch, hb.SubscribedTopicNames = -1, nil
	if r, err := hb.RequestWith(ctx, cl); err != nil || r.ErrorCode != 0 {
		t.Fatalf("leave: %v %+v", err, r)
	}
	sl(0, "share-group", "reset-offsets", "--group", "q", "--topic", "queue", "--to-latest", "--execute")
	if s := start(); s != 10 {
		t.Fatalf("--to-latest: start %d", s)
	}

	out, _ = sl(0, "share-group", "delete-offsets", "--group", "q", "--topic", "queue")
	if !strings.Contains(out, "queue  Successful") {
		t.Fatalf("delete-offsets:\n%s", out)
	}
	if s := start(); s != -1 {
		t.Fatalf("after delete-offsets: start %d", s)
	}
	if _, errOut := sl(1, "share-group", "delete-offsets", "--group", "nope", "--topic", "queue"); !strings.Contains(errOut, "does not exist") {
		t.Fatalf("delete-offsets of no group:\n%s", errOut)
	}

	// Usage errors.
	sl(2, "share-group", "reset-offsets", "--group", "q", "--topic", "queue")
	sl(2, "share-group", "reset-offsets", "--group", "q", "--to-earliest")
	sl(2, "share-group", "reset-offsets", "q", "--group", "q", "--topic", "queue", "--to-earliest")
	sl(2, "share-group", "reset-offsets", "--group", "q", "--topic", "queue", "--to-earliest", "--dry-run", "--execute")
	sl(2, "share-group", "delete-offsets", "--group", "q")
}
