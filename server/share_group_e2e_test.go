package server_test

// Share groups (KIP-932) end to end through the real group coordinator:
// franz-go's kgo.ShareGroup members heartbeat (76) to the coordinator and
// fetch and acknowledge (78, 79) on the data path, which asks the
// coordinator who is a member of what and reads the group's share.*
// configs. The same scenario runs against franz-go's kfake as a reference.
//
// Differences with kfake, and how the scenario bridges them:
//
//   - kfake stores a group's share.record.lock.duration.ms and
//     share.delivery.count.limit (DescribeConfigs shows them) but runs with
//     the broker's group.share.* values; Sluice honours the group's. On
//     kfake the broker keys are set to the same values, so the kfake run
//     checks the semantics, and only the Sluice run checks that the group's
//     value is the one in force (the broker's lock is Kafka's 30 s and its
//     limit 5: a broker that ignored the group's values fails there).
//   - kfake expires locks on a sweep (share.record.lock.sweep.interval.ms),
//     set to 100 ms here; Sluice expires them when a fetch looks.

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
)

// e2eLock is the record lock duration set on the silent-member group.
const e2eLock = 2 * time.Second

func TestShareGroupE2E(t *testing.T) {
	t.Parallel() // waits on lock, session and heartbeat timers, not the CPU
	t.Run("broker=sluice", func(t *testing.T) {
		b := brokertest.Start(t, "memory", fastShareGroups, func(c *config.Config) {
			c.GroupShare.MinRecordLockDurationMs = 1000 // lets the group set 2 s; the broker's stays 30 s
		})
		runShareE2E(t, b.Addr())
	})
	t.Run("broker=kfake", func(t *testing.T) {
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.BrokerConfigs(map[string]string{
			"group.share.heartbeat.interval.ms":   "200",
			"group.share.session.timeout.ms":      "2000",
			"share.record.lock.sweep.interval.ms": "100",
			// kfake keeps the group's values but runs with these.
			"group.share.record.lock.duration.ms": strconv.Itoa(int(e2eLock.Milliseconds())),
			"group.share.delivery.count.limit":    "3",
		}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		runShareE2E(t, c.ListenAddrs()[0])
	})
}

func runShareE2E(t *testing.T, addr string) {
	t.Run("accept-release-reject", func(t *testing.T) { shareE2EAcks(t, addr) })
	t.Run("silent-member", func(t *testing.T) { shareE2ESilent(t, addr) })
	t.Run("delivery-limit", func(t *testing.T) { shareE2ELimit(t, addr) })
}

// shareE2ESetup creates topic with parts partitions, sets the group's
// configs (share.auto.offset.reset=earliest and sets), produces n records
// (values 0..n-1, round robin over the partitions) and returns an admin
// client.
func shareE2ESetup(t *testing.T, ctx context.Context, addr, group, topic string, parts int32, n int, sets ...groupOp) *kgo.Client {
	t.Helper()
	cl := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if ct, err := kadm.NewClient(cl).CreateTopic(ctx, parts, 1, nil, topic); err != nil || ct.Err != nil {
		t.Fatalf("create %s: %v %v", topic, err, ct.Err)
	}
	earliest := "earliest"
	ops := append([]groupOp{{kmsg.IncrementalAlterConfigOpSet, "share.auto.offset.reset", &earliest}}, sets...)
	if c, msg := alterGroup(t, ctx, cl, group, false, ops...); c != 0 {
		t.Fatalf("group configs: %s %s", errName(c), msg)
	}
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i) % parts, Value: []byte(strconv.Itoa(i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return cl
}

func shareMember(t *testing.T, addr, group, topic string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.ShareGroup(group), kgo.ConsumeTopics(topic),
		kgo.FetchMaxWait(200 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// poll is one bounded PollRecords.
func poll(ctx context.Context, cl *kgo.Client) kgo.Fetches {
	pctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	return cl.PollRecords(pctx, 100)
}

// shareE2EAcks: three members over a 3-partition topic accept, release
// once (v%5==0 at its first delivery) and reject (v%7==0) by rule.
func shareE2EAcks(t *testing.T, addr string) {
	ctx := testCtx(t, 2*time.Minute)
	const n = 90
	shareE2ESetup(t, ctx, addr, "e2e-acks", "e2e-q3", 3, n)
	var (
		mu         sync.Mutex
		acceptedAt = map[int]int32{} // value -> delivery count when accepted
		acceptedN  = map[int]int{}
		deliveries = map[int][]int32{}
		byMember   = map[int]int{} // member -> records delivered
	)
	want := 0
	for i := range n {
		if i%7 != 0 {
			want++
		}
	}
	done := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	for m := range 3 {
		cl := shareMember(t, addr, "e2e-acks", "e2e-q3", kgo.ShareMaxRecords(5))
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cl.Close()
			for range 600 { // bounded
				select {
				case <-done:
					return
				default:
				}
				poll(ctx, cl).EachRecord(func(r *kgo.Record) {
					v, _ := strconv.Atoi(string(r.Value))
					mu.Lock()
					defer mu.Unlock()
					byMember[m]++
					deliveries[v] = append(deliveries[v], r.DeliveryCount())
					switch {
					case v%7 == 0:
						r.Ack(kgo.AckReject)
					case v%5 == 0 && r.DeliveryCount() == 1:
						r.Ack(kgo.AckRelease)
					default:
						r.Ack(kgo.AckAccept)
						acceptedAt[v] = r.DeliveryCount()
						acceptedN[v]++
						if len(acceptedAt) == want {
							once.Do(func() { close(done) })
						}
					}
				})
			}
		}()
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(acceptedAt) != want {
		t.Fatalf("accepted %d records, want %d (deliveries %v)", len(acceptedAt), want, deliveries)
	}
	for v, c := range acceptedN {
		if c != 1 {
			t.Errorf("record %d accepted %d times", v, c)
		}
	}
	for v := range n {
		switch d := deliveries[v]; {
		case v%7 == 0:
			if len(d) != 1 {
				t.Errorf("rejected record %d delivered with counts %v, want once", v, d)
			}
		case v%5 == 0:
			if acceptedAt[v] != 2 || fmt.Sprint(d) != "[1 2]" {
				t.Errorf("released record %d delivered with counts %v, want [1 2]", v, d)
			}
		default:
			if fmt.Sprint(d) != "[1]" {
				t.Errorf("record %d delivered with counts %v, want [1]", v, d)
			}
		}
	}
	t.Logf("records delivered per member: %v", byMember)
}

// shareE2ESilent: a member takes records in one poll and never polls
// again (its client goes on heartbeating, its fetches paused); two others get those records
// with delivery count 2, never before the lock duration set on the group
// has passed since the silent member's fetch began.
func shareE2ESilent(t *testing.T, addr string) {
	ctx := testCtx(t, 2*time.Minute)
	const n = 5
	lock := strconv.Itoa(int(e2eLock.Milliseconds()))
	shareE2ESetup(t, ctx, addr, "e2e-silent", "e2e-q1", 1, n,
		groupOp{kmsg.IncrementalAlterConfigOpSet, "share.record.lock.duration.ms", &lock})
	silent := shareMember(t, addr, "e2e-silent", "e2e-q1")
	defer silent.Close()
	held := map[string]bool{}
	var t0 time.Time
	for range 100 { // bounded; the first poll with records is its last
		t0 = time.Now()
		if fs := poll(ctx, silent); fs.NumRecords() > 0 {
			fs.EachRecord(func(r *kgo.Record) { held[string(r.Value)] = true })
			// Silent from now on: kgo would otherwise go on fetching in
			// the background and take the records again once their locks
			// expire; paused, it fetches nothing more (the client still
			// heartbeats, so the member stays in the group).
			silent.PauseFetchTopics("e2e-q1")
			break
		}
	}
	if len(held) == 0 {
		t.Fatal("the silent member got no records")
	}
	var others []*kgo.Client
	for range 2 {
		cl := shareMember(t, addr, "e2e-silent", "e2e-q1")
		defer cl.Close()
		others = append(others, cl)
	}
	got := map[string]int32{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	// 30 s of polls at most: less than the broker's lock duration, so the
	// records come back only under the group's.
	deadline := time.Now().Add(30 * time.Second)
	for _, cl := range others {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 { // bounded
				mu.Lock()
				enough := len(got) == n
				mu.Unlock()
				if enough || time.Now().After(deadline) {
					return
				}
				fs := poll(ctx, cl)
				at := time.Now()
				fs.EachRecord(func(r *kgo.Record) {
					v := string(r.Value)
					r.Ack(kgo.AckAccept)
					mu.Lock()
					defer mu.Unlock()
					if _, dup := got[v]; dup {
						t.Errorf("record %s delivered to the others twice", v)
					}
					got[v] = r.DeliveryCount()
					if held[v] && at.Sub(t0) < e2eLock {
						t.Errorf("record %s held by the silent member redelivered %v after its fetch began, before the lock duration %v", v, at.Sub(t0), e2eLock)
					}
				})
			}
			poll(ctx, cl) // sends the last accepts
		}()
	}
	wg.Wait()
	if len(got) != n {
		t.Fatalf("the others got %d of %d records: %v (silent held %v)", len(got), n, got, held)
	}
	for v, c := range got {
		if want := map[bool]int32{true: 2, false: 1}[held[v]]; c != want {
			t.Errorf("record %s delivered to the others with count %d, want %d (held by the silent member: %v)", v, c, want, held[v])
		}
	}
}

// shareE2ELimit: a record always released is delivered exactly the
// group's share.delivery.count.limit times.
func shareE2ELimit(t *testing.T, addr string) {
	ctx := testCtx(t, 2*time.Minute)
	limit := "3"
	shareE2ESetup(t, ctx, addr, "e2e-limit", "e2e-l1", 1, 1,
		groupOp{kmsg.IncrementalAlterConfigOpSet, "share.delivery.count.limit", &limit})
	cl := shareMember(t, addr, "e2e-limit", "e2e-l1")
	defer cl.Close()
	var counts []int32
	for i := 0; i < 300 && len(counts) < 3; i++ { // bounded
		poll(ctx, cl).EachRecord(func(r *kgo.Record) {
			counts = append(counts, r.DeliveryCount())
			r.Ack(kgo.AckRelease)
		})
	}
	// More polls send the last release and would see a fourth delivery.
	for range 5 {
		poll(ctx, cl).EachRecord(func(r *kgo.Record) {
			counts = append(counts, r.DeliveryCount())
			r.Ack(kgo.AckRelease)
		})
	}
	if fmt.Sprint(counts) != "[1 2 3]" {
		t.Fatalf("delivery counts %v, want [1 2 3]", counts)
	}
}

// TestShareGroupRemovedMemberReleases: when the coordinator removes a
// member (it leaves with epoch -1, or its session times out) the records it
// holds are released at once, as Kafka does, though its connection stays
// open and the group's lock duration (1 min here, the broker's max) is far off: another
// member gets them with delivery count 2.
func TestShareGroupRemovedMemberReleases(t *testing.T) {
	t.Parallel() // waits on lock, session and heartbeat timers, not the CPU
	for _, how := range []string{"leave", "session-timeout"} {
		t.Run(how, func(t *testing.T) {
			b := brokertest.Start(t, "memory", fastShareGroups)
			ctx := testCtx(t, 2*time.Minute)
			const n = 4
			group, topic := "e2e-gone", "e2e-gone"
			lock := "60000" // group.share.max.record.lock.duration.ms
			cl := shareE2ESetup(t, ctx, b.Addr(), group, topic, 1, n,
				groupOp{kmsg.IncrementalAlterConfigOpSet, "share.record.lock.duration.ms", &lock})
			td, err := kadm.NewClient(cl).ListTopics(ctx, topic)
			if err != nil || td[topic].Err != nil {
				t.Fatalf("list topics: %v %v", err, td[topic].Err)
			}
			tid := td[topic].ID
			a, _ := handShareMember(t, ctx, cl, group, topic, tid, n)
			if how == "leave" {
				if r, err := shareHeartbeat(ctx, cl, group, a, -1, nil); err != nil || r.ErrorCode != 0 {
					t.Fatalf("leave: %v %+v", err, r)
				}
			} // else: a stops heartbeating; its 2 s session ends.
			other := shareMember(t, b.Addr(), group, topic)
			defer other.Close()
			got := map[string]int32{}
			for i := 0; i < 100 && len(got) < n; i++ { // bounded: about 30 s, under the 1 min lock
				poll(ctx, other).EachRecord(func(r *kgo.Record) {
					got[string(r.Value)] = r.DeliveryCount()
					r.Ack(kgo.AckAccept)
				})
			}
			if len(got) != n {
				t.Fatalf("the other member got %v, want all %d records released by a's removal", got, n)
			}
			for v, c := range got {
				if c != 2 {
					t.Errorf("record %s delivered with count %d, want 2", v, c)
				}
			}
		})
	}
}

// TestShareGroupRedeliveryBackoff: with the group's
// share.redelivery.backoff.* set (Sluice's own, beyond Kafka; kfake has no
// such keys), a released record is not delivered again before the backoff
// after its n-th delivery, min(backoff * multiplier^(n-1), max), has passed
// since the client released it (the broker releases it later still, so
// "not before" holds on any machine).
func TestShareGroupRedeliveryBackoff(t *testing.T) {
	t.Parallel() // waits on lock, session and heartbeat timers, not the CPU
	b := brokertest.Start(t, "memory", fastShareGroups)
	ctx := testCtx(t, 2*time.Minute)
	ms, maxMs, mult := "1000", "1500", "2"
	set := kmsg.IncrementalAlterConfigOpSet
	shareE2ESetup(t, ctx, b.Addr(), "e2e-backoff", "e2e-b1", 1, 1,
		groupOp{set, "share.redelivery.backoff.ms", &ms}, groupOp{set, "share.redelivery.backoff.max.ms", &maxMs},
		groupOp{set, "share.redelivery.backoff.multiplier", &mult})
	cl := shareMember(t, b.Addr(), "e2e-backoff", "e2e-b1")
	defer cl.Close()
	// After delivery 1: 1000 ms; after delivery 2: min(2000, 1500) ms.
	want := map[int32]time.Duration{2: time.Second, 3: 1500 * time.Millisecond}
	var released time.Time
	var counts []int32
	for i := 0; i < 200 && len(counts) < 3; i++ { // bounded
		poll(ctx, cl).EachRecord(func(r *kgo.Record) {
			now := time.Now()
			c := r.DeliveryCount()
			counts = append(counts, c)
			if d, ok := want[c]; ok && now.Sub(released) < d {
				t.Errorf("delivery %d came %v after the release, before the backoff %v", c, now.Sub(released), d)
			}
			if c < 3 {
				released = time.Now()
				r.Ack(kgo.AckRelease)
			} else {
				r.Ack(kgo.AckAccept)
			}
		})
	}
	poll(ctx, cl) // sends the accept
	if fmt.Sprint(counts) != "[1 2 3]" {
		t.Fatalf("delivery counts %v, want [1 2 3]", counts)
	}
}

// handShareMember joins group by hand (ShareGroupHeartbeat), heartbeats
// until it is assigned topic's partitions and acquires n records of
// partition 0 with ShareFetch; it returns the member id and the share
// session's next epoch.
func handShareMember(t *testing.T, ctx context.Context, cl *kgo.Client, group, topic string, tid [16]byte, n int) (string, int32) {
	t.Helper()
	a := shareMemberID()
	epoch := int32(0)
	topics := []string{topic}
	assigned := false
	for i := 0; i < 100 && !assigned; i++ { // bounded
		r, err := shareHeartbeat(ctx, cl, group, a, epoch, topics)
		if err != nil || r.ErrorCode != 0 {
			t.Fatalf("heartbeat: %v %+v", err, r)
		}
		epoch, topics = r.MemberEpoch, nil
		assigned = r.Assignment != nil && len(r.Assignment.TopicPartitions) > 0
		if !assigned {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if !assigned {
		t.Fatal("member a was never assigned the partition")
	}
	held, sess := 0, int32(0)
	for ; sess < 50 && held < n; sess++ { // bounded
		req := kmsg.NewPtrShareFetchRequest()
		req.GroupID, req.MemberID = &group, &a
		req.ShareSessionEpoch, req.MaxRecords, req.MaxWaitMillis = sess, int32(n), 200 // 0 opens the session
		req.MaxBytes, req.BatchSize = 1<<20, 500
		rt := kmsg.NewShareFetchRequestTopic()
		rt.TopicID = tid
		if sess == 0 {
			rt.Partitions = []kmsg.ShareFetchRequestTopicPartition{kmsg.NewShareFetchRequestTopicPartition()}
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("share fetch: %v %+v", err, resp)
		}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if rp.ErrorCode != 0 {
					t.Fatalf("share fetch partition: %s", errName(rp.ErrorCode))
				}
				for _, ar := range rp.AcquiredRecords {
					held += int(ar.LastOffset - ar.FirstOffset + 1)
				}
			}
		}
	}
	if held != n {
		t.Fatalf("member a holds %d of %d records", held, n)
	}
	return a, sess
}

// TestDescribeShareGroupOffsets: after a member accepts offsets 0-3 and 6
// of ten, the share-partition start offset is 4 and the lag 10-4-1 = 5
// (KIP-1226: the acknowledged record past the start is not lag), by topic
// and for all topics (Topics null); a partition without share state and a
// group without any answer -1. The same on kfake.
func TestDescribeShareGroupOffsets(t *testing.T) {
	t.Run("broker=sluice", func(t *testing.T) {
		b := brokertest.Start(t, "memory", fastShareGroups)
		runDescribeShareOffsets(t, b.Addr())
	})
	t.Run("broker=kfake", func(t *testing.T) {
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.BrokerConfigs(map[string]string{
			"group.share.heartbeat.interval.ms": "200",
			"group.share.session.timeout.ms":    "2000",
		}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		runDescribeShareOffsets(t, c.ListenAddrs()[0])
	})
}

func runDescribeShareOffsets(t *testing.T, addr string) {
	ctx := testCtx(t, time.Minute)
	const n = 10
	group, topic := "e2e-offsets", "e2e-offsets"
	cl := shareE2ESetup(t, ctx, addr, group, topic, 2, 0)
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: 0, Value: []byte(strconv.Itoa(i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	td, err := kadm.NewClient(cl).ListTopics(ctx, topic)
	if err != nil || td[topic].Err != nil {
		t.Fatalf("list topics: %v %v", err, td[topic].Err)
	}
	tid := td[topic].ID
	a, sess := handShareMember(t, ctx, cl, group, topic, tid, n)
	ack := kmsg.NewPtrShareAcknowledgeRequest()
	ack.GroupID, ack.MemberID, ack.ShareSessionEpoch = &group, &a, sess
	rt := kmsg.NewShareAcknowledgeRequestTopic()
	rt.TopicID = tid
	rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
	rp.AcknowledgementBatches = []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{
		{FirstOffset: 0, LastOffset: 3, AcknowledgeTypes: []int8{1}},
		{FirstOffset: 6, LastOffset: 6, AcknowledgeTypes: []int8{1}},
	}
	rt.Partitions = append(rt.Partitions, rp)
	ack.Topics = append(ack.Topics, rt)
	ar, err := ack.RequestWith(ctx, cl)
	if err != nil || ar.ErrorCode != 0 || ar.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("acknowledge: %v %+v", err, ar)
	}
	describe := func(g string, topics []kmsg.DescribeShareGroupOffsetsRequestGroupTopic) kmsg.DescribeShareGroupOffsetsResponseGroup {
		t.Helper()
		req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		req.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: g, Topics: topics}}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
			t.Fatalf("describe share group offsets %s: %v %+v", g, err, resp)
		}
		return resp.Groups[0]
	}
	type so struct{ start, lag int64 }
	flat := func(g kmsg.DescribeShareGroupOffsetsResponseGroup) map[string]so {
		out := map[string]so{}
		for _, rt := range g.Topics {
			for _, rp := range rt.Partitions {
				if rp.ErrorCode != 0 {
					t.Fatalf("%s/%d: %s", rt.Topic, rp.Partition, errName(rp.ErrorCode))
				}
				out[fmt.Sprintf("%s/%d", rt.Topic, rp.Partition)] = so{rp.StartOffset, rp.Lag}
			}
		}
		return out
	}
	named := describe(group, []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: topic, Partitions: []int32{0, 1}}})
	if got, want := flat(named), map[string]so{topic + "/0": {4, 5}, topic + "/1": {-1, -1}}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("by topic: %v, want %v", got, want)
	}
	all := describe(group, nil)
	if got, want := flat(all), map[string]so{topic + "/0": {4, 5}}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("all topics: %v, want %v", got, want)
	}
	none := describe("e2e-no-such-group", []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: topic, Partitions: []int32{0}}})
	if got, want := flat(none), map[string]so{topic + "/0": {-1, -1}}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("no such group: %v, want %v", got, want)
	}
}
