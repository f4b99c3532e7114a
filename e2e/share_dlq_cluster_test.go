package e2e

// Dead letters (KIP-1191) in a 3-broker cluster, when the dead-letter
// partition's leader is not the source partition's: the source leader
// sends them there (a Produce with acks=all and the share partition's
// idempotent producer id and sequence), and the dead-letter topic holds
// every rejected record exactly once, with its headers.

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestClusterShareDeadLettersToAnotherLeader(t *testing.T) {
	t.Parallel()
	const (
		src, dlq, group = "dlqsrc", "dlq.dst", "gdlq"
		n               = 30
	)
	c := startCluster(t, 3,
		"group.share.enable=true",
		"offsets.topic.num.partitions=3", "offsets.topic.replication.factor=3",
		"share.coordinator.state.topic.num.partitions=3",
		"group.share.min.heartbeat.interval.ms=500", "group.share.heartbeat.interval.ms=500")
	c.createTopic(src, 1, 3, nil)
	srcLeader := c.mustPartition(src, 0).Leader

	// The dead-letter topic: one partition on the two other brokers only,
	// so the source leader has no replica of it.
	var others []int32
	for id := range c.brokers {
		if id != srcLeader {
			others = append(others, id)
		}
	}
	slices.Sort(others)
	{
		_, cl := c.admin()
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis = 30000
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = dlq, -1, -1
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition, ra.Replicas = 0, others
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
		req.Topics = append(req.Topics, rt)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		resp, err := req.RequestWith(ctx, cl)
		cancel()
		cl.Close()
		if err != nil || len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
			t.Fatalf("create %s on %v: %v %+v", dlq, others, err, resp)
		}
	}
	c.waitFor(60*time.Second, dlq+"-0 led by another broker than "+src+"-0", func(*kadm.Client) bool {
		pd, ok := c.partition(dlq, 0)
		return ok && pd.Leader >= 0 && pd.Leader != srcLeader
	})
	t.Logf("%s-0 led by %d, %s-0 by %d", src, srcLeader, dlq, c.mustPartition(dlq, 0).Leader)
	c.setGroupConfig(group, "share.auto.offset.reset", "earliest")
	c.setGroupConfig(group, "errors.deadletterqueue.topic.name", dlq)

	prod, err := c.newClient(kgo.SeedBrokers(c.seeds()...), kgo.DefaultProduceTopic(src), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	for i := 0; i < n; i++ {
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("v-%02d", i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	prod.Close()
	rejected := func(v string) bool {
		i, _ := strconv.Atoi(v[2:])
		return i%3 == 0
	}

	// A member rejects every third record and accepts the others, until the
	// broker confirmed an acknowledgement of each.
	cl, err := c.newClient(kgo.SeedBrokers(c.seeds()...), kgo.ShareGroup(group), kgo.ConsumeTopics(src),
		kgo.FetchMaxWait(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	done := map[string]bool{}
	var wantDead []string
	c.retryFor(120*time.Second, "every record acknowledged", func() bool {
		pctx, pcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer pcancel()
		fs := cl.PollRecords(pctx, 50)
		var recs []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) {
			if rejected(string(r.Value)) {
				r.Ack(kgo.AckReject)
			} else {
				r.Ack(kgo.AckAccept)
			}
			recs = append(recs, r)
		})
		if len(recs) > 0 && cl.FlushAcks(pctx) == nil {
			for _, r := range recs {
				v := string(r.Value)
				if !done[v] && rejected(v) {
					wantDead = append(wantDead, v)
				}
				done[v] = true
			}
		}
		return len(done) == n
	}, func() string { return fmt.Sprintf("%d of %d acknowledged", len(done), n) })
	cl.Close()
	slices.Sort(wantDead)

	// The dead-letter partition: exactly the rejected records, once each
	// (its end offset is their number), with their headers.
	adm, acl := c.admin()
	defer acl.Close()
	c.retryFor(60*time.Second, "the dead letters written", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ends, err := adm.ListEndOffsets(ctx, dlq)
		o, ok := ends.Lookup(dlq, 0)
		return err == nil && ok && o.Err == nil && o.Offset >= int64(len(wantDead))
	}, func() string { return "end offset below " + strconv.Itoa(len(wantDead)) })
	cons, err := c.newClient(kgo.SeedBrokers(c.seeds()...), kgo.ConsumeTopics(dlq), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var got []string
	c.retryFor(60*time.Second, "the dead letters read", func() bool {
		pctx, pcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer pcancel()
		cons.PollFetches(pctx).EachRecord(func(r *kgo.Record) {
			h := map[string]string{}
			for _, x := range r.Headers {
				h[x.Key] = string(x.Value)
			}
			if h["__dlq.source.topic"] != src || h["__dlq.group"] != group || h["__dlq.reason"] != "rejected" {
				t.Errorf("dead letter at %d: headers %v", r.Offset, h)
			}
			off, err := strconv.Atoi(h["__dlq.source.offset"])
			if err != nil {
				t.Errorf("dead letter at %d: source offset %q", r.Offset, h["__dlq.source.offset"])
			}
			got = append(got, fmt.Sprintf("v-%02d", off)) // one partition: value i is at offset i
		})
		return len(got) >= len(wantDead)
	}, func() string { return fmt.Sprintf("%d of %d read", len(got), len(wantDead)) })
	slices.Sort(got)
	if !slices.Equal(got, wantDead) {
		t.Fatalf("dead letters %v, want %v", got, wantDead)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, dlq)
	if o, ok := ends.Lookup(dlq, 0); err != nil || !ok || o.Err != nil || o.Offset != int64(len(wantDead)) {
		t.Fatalf("%s-0 ends at %+v (%v), want %d: a dead letter written twice or one too many", dlq, o, err, len(wantDead))
	}
}
