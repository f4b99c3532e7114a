package server_test

// A single node runs the group coordinator on __consumer_offsets, as a
// cluster does: the first group request creates the topic locally with
// Kafka's internal-topic shape, commits land in it, and a restart rebuilds
// the groups from it.

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
)

func TestSingleNodeOffsetsTopic(t *testing.T) {
	const parts = 5
	small := func(c *config.Config) { c.OffsetsTopicPartitions = parts }
	dir := t.TempDir()
	b := brokertest.StartIn(t, dir, "segment", small)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	topics, err := adm.ListTopicsWithInternal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := topics["__consumer_offsets"]; ok {
		t.Fatal("__consumer_offsets exists before any group request")
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: "t", Partition: 0, At: 42, LeaderEpoch: -1, Metadata: "m"})
	if resp, err := adm.CommitOffsets(ctx, "g", os); err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v, %v", err, resp.Error())
	}

	topics, err = adm.ListTopicsWithInternal(ctx, "__consumer_offsets")
	if err != nil {
		t.Fatal(err)
	}
	d := topics["__consumer_offsets"]
	if d.Err != nil || !d.IsInternal || len(d.Partitions) != parts {
		t.Fatalf("__consumer_offsets: err %v internal %v partitions %d; want internal with %d", d.Err, d.IsInternal, len(d.Partitions), parts)
	}
	for _, p := range d.Partitions {
		if len(p.Replicas) != 1 || p.Leader != p.Replicas[0] {
			t.Fatalf("partition %d: replicas %v leader %d, want this broker alone", p.Partition, p.Replicas, p.Leader)
		}
	}
	rc, err := adm.DescribeTopicConfigs(ctx, "__consumer_offsets")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := rc.On("__consumer_offsets", nil)
	if err != nil {
		t.Fatal(err)
	}
	compact := false
	for _, c := range cfg.Configs {
		if c.Key == "cleanup.policy" {
			compact = c.Value != nil && *c.Value == "compact"
		}
	}
	if !compact {
		t.Fatalf("__consumer_offsets configs %+v: want cleanup.policy=compact", cfg.Configs)
	}
	ends, err := adm.ListEndOffsets(ctx, "__consumer_offsets")
	if err != nil {
		t.Fatal(err)
	}
	var records int64
	ends.Each(func(o kadm.ListedOffset) { records += o.Offset })
	if records == 0 {
		t.Fatal("the commit is not in __consumer_offsets")
	}
	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	b2 := brokertest.StartIn(t, dir, "segment", small)
	cl2, err := kgo.NewClient(kgo.SeedBrokers(b2.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl2.Close()
	fetched, err := kadm.NewClient(cl2).FetchOffsets(ctx, "g")
	if err != nil || fetched.Error() != nil {
		t.Fatalf("fetch after restart: %v, %v", err, fetched.Error())
	}
	if o, ok := fetched.Lookup("t", 0); !ok || o.At != 42 || o.Metadata != "m" {
		t.Fatalf("after restart: %+v (found %v), want offset 42 metadata m", o, ok)
	}
}
