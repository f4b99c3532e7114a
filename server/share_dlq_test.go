package server_test

// Dead-letter topics of share groups (KIP-1191) end to end with franz-go's
// kgo.ShareGroup: rejected records and records released up to the
// delivery-count limit land in the group's dead-letter topic exactly once,
// with the headers naming them and (copy.record.enable) their key and
// value; accepted ones never do.

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
)

func TestShareGroupDeadLetterTopic(t *testing.T) {
	b := brokertest.Start(t, "memory", fastShareGroups, func(c *config.Config) {
		c.GroupShare.DLQAutoCreateTopics = true
	})
	ctx := testCtx(t, 2*time.Minute)
	const (
		group, topic, dlq = "dlq-g", "dlq-src", "dlq.dlq-g"
		n                 = 40
		parts             = 2
	)
	limit, name, yes := "2", dlq, "true"
	cl := shareE2ESetup(t, ctx, b.Addr(), group, topic, parts, n,
		groupOp{kmsg.IncrementalAlterConfigOpSet, "share.delivery.count.limit", &limit},
		groupOp{kmsg.IncrementalAlterConfigOpSet, "errors.deadletterqueue.topic.name", &name},
		groupOp{kmsg.IncrementalAlterConfigOpSet, "errors.deadletterqueue.copy.record.enable", &yes})
	// The broker's prefix (dlq.) binds a group's topic name.
	bad := "other-dlq"
	if c, _ := alterGroup(t, ctx, cl, group, true, groupOp{kmsg.IncrementalAlterConfigOpSet, "errors.deadletterqueue.topic.name", &bad}); c == 0 {
		t.Errorf("a dead-letter topic without the prefix dlq. was accepted")
	}

	// v%5==0 rejected, v%7==0 (else) always released: exhausted at the
	// second delivery; the rest accepted.
	type src struct {
		partition int32
		offset    int64
	}
	rejected, exhausted := map[int]bool{}, map[int]bool{}
	for v := range n {
		switch {
		case v%5 == 0:
			rejected[v] = true
		case v%7 == 0:
			exhausted[v] = true
		}
	}
	wantAccepted := n - len(rejected) - len(exhausted)
	where := map[int]src{}
	accepted := map[int]bool{}
	releases := map[int]int{}
	m := shareMember(t, b.Addr(), group, topic)
	defer m.Close()
	finished := func() bool {
		if len(accepted) != wantAccepted {
			return false
		}
		for v := range exhausted {
			if releases[v] < 2 {
				return false
			}
		}
		return len(where) == n
	}
	for i := 0; i < 400 && !finished(); i++ { // bounded
		poll(ctx, m).EachRecord(func(r *kgo.Record) {
			v, _ := strconv.Atoi(string(r.Value))
			where[v] = src{r.Partition, r.Offset}
			switch {
			case rejected[v]:
				r.Ack(kgo.AckReject)
			case exhausted[v]:
				releases[v]++
				r.Ack(kgo.AckRelease)
			default:
				accepted[v] = true
				r.Ack(kgo.AckAccept)
			}
		})
	}
	if !finished() {
		t.Fatalf("accepted %d of %d, releases %v", len(accepted), wantAccepted, releases)
	}
	// Send the last acknowledgements; nothing is delivered any more.
	for range 5 {
		poll(ctx, m).EachRecord(func(r *kgo.Record) { t.Errorf("record %s delivered again (count %d)", r.Value, r.DeliveryCount()) })
	}

	// Exactly the rejected and exhausted records, once each.
	want := len(rejected) + len(exhausted)
	adm := kadm.NewClient(cl)
	var total int64
	for range 100 { // bounded: the last acknowledgements' writes
		ends, err := adm.ListEndOffsets(ctx, dlq)
		if err != nil {
			t.Fatal(err)
		}
		total = 0
		ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
		if total >= int64(want) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if total != int64(want) {
		t.Fatalf("dead-letter topic holds %d records, want %d", total, want)
	}
	td, err := adm.ListTopics(ctx, dlq)
	if err != nil || td[dlq].Err != nil {
		t.Fatalf("list %s: %v %v", dlq, err, td[dlq].Err)
	}
	dlqParts := int32(len(td[dlq].Partitions)) // auto-created: num.partitions
	rd := newClient(t, b.Addr(), kgo.ConsumeTopics(dlq), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[int]bool{}
	for i := 0; i < 100 && len(seen) < want; i++ { // bounded
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := rd.PollFetches(pctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			h := map[string]string{}
			for _, x := range r.Headers {
				h[x.Key] = string(x.Value)
			}
			v, err := strconv.Atoi(string(r.Value))
			if err != nil {
				t.Errorf("dead letter with value %q, want the record's copied", r.Value)
				return
			}
			if seen[v] {
				t.Errorf("record %d dead-lettered twice", v)
			}
			seen[v] = true
			reason, count := "rejected", "1"
			if exhausted[v] {
				reason, count = "delivery-count-exhausted", "2"
			} else if !rejected[v] {
				t.Errorf("accepted record %d dead-lettered", v)
			}
			w := where[v]
			wantH := map[string]string{
				"__dlq.source.topic":     topic,
				"__dlq.source.partition": strconv.Itoa(int(w.partition)),
				"__dlq.source.offset":    strconv.FormatInt(w.offset, 10),
				"__dlq.delivery.count":   count,
				"__dlq.reason":           reason,
				"__dlq.group":            group,
			}
			for k, wv := range wantH {
				if h[k] != wv {
					t.Errorf("record %d: header %s = %q, want %q (headers %v)", v, k, h[k], wv, h)
				}
			}
			if r.Partition != w.partition%dlqParts {
				t.Errorf("record %d of partition %d dead-lettered to partition %d", v, w.partition, r.Partition)
			}
		})
	}
	if len(seen) != want {
		t.Fatalf("dead letters for %d records, want %d: %v", len(seen), want, fmt.Sprint(seen))
	}
}

// TestShareGroupDeadLetterTopicMissing: without
// errors.deadletterqueue.auto.create.topics.enable a missing dead-letter
// topic is not created; the dead letters are skipped and counted in
// sluice_share_dlq_skipped_total, and the rejected record is still archived
// (never delivered again).
func TestShareGroupDeadLetterTopicMissing(t *testing.T) {
	ms := startMetricsServer(t, "memory", fastShareGroups)
	ctx := testCtx(t, time.Minute)
	const group, topic, dlq = "dlq-miss", "dlq-miss-src", "dlq.missing"
	name := dlq
	cl := shareE2ESetup(t, ctx, ms.addr, group, topic, 1, 3,
		groupOp{kmsg.IncrementalAlterConfigOpSet, "errors.deadletterqueue.topic.name", &name})
	m := shareMember(t, ms.addr, group, topic)
	defer m.Close()
	got := map[string]int{}
	for i := 0; i < 200 && len(got) < 3; i++ { // bounded
		poll(ctx, m).EachRecord(func(r *kgo.Record) {
			got[string(r.Value)]++
			if string(r.Value) == "1" {
				r.Ack(kgo.AckReject)
			} else {
				r.Ack(kgo.AckAccept)
			}
		})
	}
	for range 5 { // sends the last acknowledgements
		poll(ctx, m).EachRecord(func(r *kgo.Record) { got[string(r.Value)]++ })
	}
	if fmt.Sprint(got) != "map[0:1 1:1 2:1]" {
		t.Fatalf("deliveries %v, want each record once", got)
	}
	td, err := kadm.NewClient(cl).ListTopics(ctx, dlq)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := td[dlq]; ok && td[dlq].Err == nil {
		t.Errorf("dead-letter topic %s created without auto-create", dlq)
	}
	fams := scrape(t, ms.metrics)
	if v := mustValue(t, fams, "sluice_share_dlq_skipped_total", nil); v != 1 {
		t.Errorf("sluice_share_dlq_skipped_total = %v, want 1", v)
	}
	if v := mustValue(t, fams, "sluice_share_dlq_written_total", nil); v != 0 {
		t.Errorf("sluice_share_dlq_written_total = %v, want 0", v)
	}
}
