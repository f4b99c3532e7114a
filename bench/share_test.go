package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
)

// Share group (KIP-932) consumption beside a classic consumer group on the
// same kind of topic, through franz-go: kgo.ShareGroup members that accept
// every record and flush their acknowledgements after each poll
// (FlushAcks, the share consumer's commitSync), and kgo.ConsumerGroup
// members that commit after each poll (CommitUncommittedOffsets, auto
// commit off):
//
//	go test -run '^$' -bench 'ShareGroupConsume' -benchtime 30000x ./bench/
//
// One op is one record of shareValue bytes. Before the timer starts, the
// members join with the topic paused (PauseFetchTopics) and the benchmark
// waits until the group is stable with every member on the latest
// assignment; then b.N records are produced, round robin over shareParts
// partitions. The timer runs from ResumeFetchTopics until every record was
// consumed (each offset counted once), so MB/s is consumption alone, joins
// and rebalances excluded. first-ms is the time to the first record;
// ack-p50-ms and ack-p99-ms are the latencies of FlushAcks (share) or of
// the commit (classic) after each poll: from a member's acknowledgement to
// the broker's answer. With more members than partitions the classic group
// leaves the extra members idle; a share group spreads every partition's
// records over all of them. Memory backend, one broker in process, kgo's
// defaults otherwise.
const (
	shareParts = 3
	shareValue = 1024
)

func BenchmarkShareGroupConsume(b *testing.B) {
	for _, kind := range []string{"share", "classic"} {
		for _, members := range []int{1, 3, 10} {
			b.Run(fmt.Sprintf("group=%s/members=%d", kind, members), func(b *testing.B) {
				benchGroupConsume(b, kind, members)
			})
		}
	}
}

func benchGroupConsume(b *testing.B, kind string, members int) {
	br := brokertest.Start(b, "memory", func(c *config.Config) { c.GroupShare.Enable = true })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	adm, err := kgo.NewClient(kgo.SeedBrokers(br.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		b.Fatal(err)
	}
	defer adm.Close()
	const topic, group = "bench-share", "bench-group"
	if ct, err := kadm.NewClient(adm).CreateTopic(ctx, shareParts, 1, nil, topic); err != nil || ct.Err != nil {
		b.Fatalf("create topic: %v %v", err, ct.Err)
	}
	if kind == "share" {
		// The records are produced before the group's first fetch.
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
		earliest := "earliest"
		rr.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "share.auto.offset.reset", Op: kmsg.IncrementalAlterConfigOpSet, Value: &earliest}}
		req.Resources = append(req.Resources, rr)
		if resp, err := req.RequestWith(ctx, adm); err != nil || resp.Resources[0].ErrorCode != 0 {
			b.Fatalf("group config: %v %+v", err, resp)
		}
	}
	// seen counts each offset once; the members share it.
	var (
		mu      sync.Mutex
		seen    = make([][]bool, shareParts)
		left    = b.N
		first   time.Time
		last    time.Time
		acks    []time.Duration
		ackErrs int
	)
	for p := range seen {
		seen[p] = make([]bool, (b.N-p+shareParts-1)/shareParts) // records p, p+shareParts, ...
	}
	done := make(chan struct{})
	pollCtx, stop := context.WithCancel(ctx)
	defer stop()
	opts := []kgo.Opt{kgo.SeedBrokers(br.Addr()), kgo.ConsumeTopics(topic)}
	if kind == "share" {
		opts = append(opts, kgo.ShareGroup(group))
	} else {
		opts = append(opts, kgo.ConsumerGroup(group), kgo.DisableAutoCommit(),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	}
	var wg sync.WaitGroup
	clients := make([]*kgo.Client, members)
	for m := range members {
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			b.Fatal(err)
		}
		defer cl.Close()
		cl.PauseFetchTopics(topic) // the topic is empty until the group is stable
		clients[m] = cl
	}
	waitGroupStable(b, ctx, kadm.NewClient(adm), kind, group, members)
	value := make([]byte, shareValue)
	for i := range value {
		value[i] = 'a' + byte(i%26)
	}
	for i := 0; i < b.N; {
		recs := make([]*kgo.Record, 0, min(1000, b.N-i))
		for ; i < b.N && len(recs) < cap(recs); i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % shareParts), Value: value})
		}
		if err := adm.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			b.Fatalf("produce: %v", err)
		}
	}

	b.ReportAllocs()
	b.SetBytes(shareValue)
	b.ResetTimer()
	for _, cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for pollCtx.Err() == nil {
				fetches := cl.PollFetches(pollCtx)
				if pollCtx.Err() != nil {
					return
				}
				n := 0
				fetches.EachRecord(func(r *kgo.Record) {
					n++
					if kind == "share" {
						r.Ack(kgo.AckAccept)
					}
				})
				if n == 0 {
					continue
				}
				t0 := time.Now()
				var err error
				if kind == "share" {
					err = cl.FlushAcks(pollCtx)
				} else {
					err = cl.CommitUncommittedOffsets(pollCtx)
				}
				lat := time.Since(t0)
				mu.Lock()
				if err != nil && !errors.Is(err, context.Canceled) {
					ackErrs++
				}
				acks = append(acks, lat)
				if first.IsZero() {
					first = t0
				}
				fetches.EachRecord(func(r *kgo.Record) {
					if p, o := r.Partition, r.Offset; int(p) < len(seen) && o >= 0 && o < int64(len(seen[p])) && !seen[p][o] {
						seen[p][o] = true
						left--
					}
				})
				if left == 0 && last.IsZero() {
					last = t0 // the last records' arrival; their ack is in ack-*-ms
					close(done)
				}
				mu.Unlock()
			}
		}()
	}
	start := time.Now()
	for _, cl := range clients {
		cl.ResumeFetchTopics(topic)
	}
	select {
	case <-done:
	case <-ctx.Done():
		mu.Lock()
		n := b.N - left
		mu.Unlock()
		b.Fatalf("%d of %d records consumed before the deadline", n, b.N)
	}
	b.StopTimer()
	stop()
	wg.Wait()
	slices.Sort(acks)
	pct := func(q float64) float64 {
		return float64(acks[min(len(acks)-1, int(q*float64(len(acks))))]) / float64(time.Millisecond)
	}
	b.ReportMetric(pct(0.50), "ack-p50-ms")
	b.ReportMetric(pct(0.99), "ack-p99-ms")
	b.ReportMetric(float64(first.Sub(start))/float64(time.Millisecond), "first-ms")
	if ackErrs > 0 {
		b.Logf("%d acknowledgements or commits failed (rebalances)", ackErrs)
	}
}

// waitGroupStable waits, bounded, until group is stable with members
// members, each (share) on the group's latest assignment epoch.
func waitGroupStable(b *testing.B, ctx context.Context, adm *kadm.Client, kind, group string, members int) {
	b.Helper()
	state := ""
	for range 600 { // 60 s: a share member learns a new assignment at its next heartbeat (5 s)
		if kind == "share" {
			d, err := adm.DescribeShareGroups(ctx, group)
			if g, ok := d[group]; err == nil && ok && g.Err == nil {
				state = fmt.Sprintf("%s, %d members", g.GroupState, len(g.Members))
				current := 0
				for _, m := range g.Members {
					if m.MemberEpoch == g.GroupEpoch && len(m.Assignment) > 0 {
						current++
					}
				}
				if g.GroupState == "Stable" && current == members {
					return
				}
			}
		} else {
			d, err := adm.DescribeGroups(ctx, group)
			if g, ok := d[group]; err == nil && ok && g.Err == nil {
				state = fmt.Sprintf("%s, %d members", g.State, len(g.Members))
				if g.State == "Stable" && len(g.Members) == members {
					return
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.Fatalf("group %s not stable with %d members: %s", group, members, state)
}
