package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTopicBackendRestartProcess: `sluice topic create --config
// storage.backend=...` makes a pebble and a memory topic on a segment
// broker; after the broker process stops and a new one starts on the same
// dir, the segment and pebble topics have every record, read back by a
// real client, and the memory topic is there again, empty (nothing of a
// memory log survives its process) and taking records.
func TestTopicBackendRestartProcess(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	b := startBroker(t, dir)
	for _, be := range []string{"segment", "pebble", "memory"} {
		if out, errOut, err := run(t, time.Minute, "", sluiceBinary(t), "topic", "create", "t-"+be,
			"--partitions", "2", "--config", "storage.backend="+be, "--bootstrap-server", b.addr); err != nil {
			t.Fatalf("topic create t-%s: %v\n%s%s", be, err, out, errOut)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "storage-pebble")); err != nil {
		t.Fatalf("no pebble store in the log dir: %v", err)
	}
	const n = 500
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, be := range []string{"segment", "pebble", "memory"} {
		var recs []*kgo.Record
		for i := 0; i < n; i++ {
			recs = append(recs, &kgo.Record{Topic: "t-" + be, Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprint("v", i))})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cl.Close()
	if err := b.stop(); err != nil {
		t.Fatal(err)
	}
	b.restart()

	cl, err = kgo.NewClient(kgo.SeedBrokers(b.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	want := map[string]int64{"t-segment": n, "t-pebble": n, "t-memory": 0}
	for topic, w := range want {
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		var total int64
		ends.Each(func(o kadm.ListedOffset) {
			if o.Err != nil {
				t.Fatalf("%s-%d: %v", o.Topic, o.Partition, o.Err)
			}
			total += o.Offset
		})
		if total != w {
			t.Fatalf("%s after a new process: %d records, want %d", topic, total, w)
		}
	}
	for _, topic := range []string{"t-segment", "t-pebble"} {
		cons, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for len(seen) < n && ctx.Err() == nil {
			cons.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
				if string(r.Value) != "v"+string(r.Key) {
					t.Fatalf("%s: record %q=%q", topic, r.Key, r.Value)
				}
				seen[string(r.Key)] = true
			})
		}
		cons.Close()
		if len(seen) != n {
			t.Fatalf("%s after a new process: read %d of %d", topic, len(seen), n)
		}
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "t-memory", Value: []byte("again")}).FirstErr(); err != nil {
		t.Fatalf("produce to the memory topic after a new process: %v", err)
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, "t-memory")
	if err != nil {
		t.Fatal(err)
	}
	rc, _ := rcs.On("t-memory", nil)
	for _, c := range rc.Configs {
		if c.Key == "storage.backend" && c.MaybeValue() != "memory" {
			t.Fatalf("t-memory: storage.backend %q after a new process", c.MaybeValue())
		}
	}
}
