package server_test

// Consumer groups driven by real franz-go group consumers against an
// in-process broker: the partitions are split, every record is consumed
// exactly once, a member that stops heartbeating is expired and its
// partitions move, cooperative-sticky rebalances are incremental, a static
// member restarts without a rebalance, and committed offsets and
// auto.offset.reset decide where a consumer starts.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
)

// groupBackends are the backends the group tests run over.
var groupBackends = []string{"segment", "pebble"}

// forGroupBackends runs fn once per backend in groupBackends.
func forGroupBackends(t *testing.T, fn func(t *testing.T, backend string)) {
	for _, be := range groupBackends {
		t.Run("backend="+be, func(t *testing.T) { fn(t, be) })
	}
}

// startGroupBroker starts a broker whose new groups rebalance at once and
// that accepts short session timeouts.
func startGroupBroker(t *testing.T, backend string) string {
	t.Helper()
	b := brokertest.Start(t, backend, func(c *config.Config) {
		c.GroupInitialRebalanceDelay = 0
		c.GroupMinSessionTimeout = time.Second
	})
	return b.Addr()
}

// waitUntil polls cond every 20 ms until it holds, failing the test with
// what() after d.
func waitUntil(t *testing.T, d time.Duration, cond func() bool, what func() string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not reached within %v: %s", d, what())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// produceN produces n records to topic, record i to partition i%partitions,
// with acks=all, and returns the end offset of each partition afterwards.
func produceN(t *testing.T, cl *kgo.Client, topic string, partitions, n int) {
	t.Helper()
	ctx := testCtx(t, 60*time.Second)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for i := 0; i < n; i++ {
		wg.Add(1)
		r := &kgo.Record{Topic: topic, Partition: int32(i % partitions), Value: fmt.Appendf(nil, "v%d", i)}
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				mu.Lock()
				firstErr = cmpErr(firstErr, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("produce: %v", firstErr)
	}
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// newProducer returns a client that produces to the partition each record
// names.
func newProducer(t *testing.T, addr string) *kgo.Client {
	return newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(time.Millisecond))
}

// tp is a partition and an offset of the test's one topic.
type tp struct {
	p int32
	o int64
}

// ledger records who consumed which record, shared by a test's consumers.
type ledger struct {
	mu   sync.Mutex
	seen map[tp][]string // consumers that got the record, in order
}

func newLedger() *ledger { return &ledger{seen: make(map[tp][]string)} }

func (l *ledger) add(who string, r *kgo.Record) {
	l.mu.Lock()
	l.seen[tp{r.Partition, r.Offset}] = append(l.seen[tp{r.Partition, r.Offset}], who)
	l.mu.Unlock()
}

// count returns how many distinct records with offset >= from[p] were seen.
func (l *ledger) count(from map[int32]int64) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for k := range l.seen {
		if k.o >= from[k.p] {
			n++
		}
	}
	return n
}

// checkExactlyOnce fails unless every offset in [from[p], to[p]) of every
// partition was consumed exactly once, by one of allowed (any consumer if
// allowed is empty), and nothing past to[p] was consumed.
func (l *ledger) checkExactlyOnce(t *testing.T, from, to map[int32]int64, allowed ...string) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	bad := 0
	for p, end := range to {
		for o := from[p]; o < end; o++ {
			who := l.seen[tp{p, o}]
			switch {
			case len(who) == 0:
				t.Errorf("partition %d offset %d: never consumed", p, o)
			case len(who) > 1:
				t.Errorf("partition %d offset %d: consumed %d times, by %v", p, o, len(who), who)
			case len(allowed) > 0 && !slices.Contains(allowed, who[0]):
				t.Errorf("partition %d offset %d: consumed by %s, want one of %v", p, o, who[0], allowed)
			default:
				continue
			}
			if bad++; bad > 10 {
				t.Fatalf("more problems left out")
			}
		}
	}
	for k := range l.seen {
		if k.o >= to[k.p] {
			t.Fatalf("partition %d offset %d consumed, past the end %d", k.p, k.o, to[k.p])
		}
	}
}

// consumer is one franz-go group member of a test, with the partitions it
// owns according to its assign/revoke/lost callbacks and a log of them.
type consumer struct {
	name string
	cl   *kgo.Client
	// cut and blocked, when the consumer was built with a cuttable
	// dialer: cut closes its connections and fails every later dial.
	dial *cutDialer

	mu     sync.Mutex
	owned  map[int32]bool
	events []string // "assigned [..]", "revoked [..]", "lost [..]"

	cancel context.CancelFunc
	done   chan struct{}
}

// startConsumer starts a group member of group on topic that records what
// it consumes in l. Rebalances are blocked while a poll is being recorded
// (BlockRebalanceOnPoll), and revoked partitions are committed, so that a
// cooperative rebalance hands partitions over without duplicates.
func startConsumer(t *testing.T, addr, name, group, topic string, l *ledger, opts ...kgo.Opt) *consumer {
	t.Helper()
	return startConsumerCommit(t, addr, name, group, topic, l, true, opts...)
}

// startConsumerCommit is startConsumer; commitOnRevoke false leaves every
// commit to the test.
func startConsumerCommit(t *testing.T, addr, name, group, topic string, l *ledger, commitOnRevoke bool, opts ...kgo.Opt) *consumer {
	t.Helper()
	c := &consumer{name: name, owned: make(map[int32]bool), done: make(chan struct{})}
	base := []kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.ClientID(name),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.SessionTimeout(6 * time.Second),
		kgo.HeartbeatInterval(300 * time.Millisecond),
		kgo.RebalanceTimeout(20 * time.Second),
		kgo.FetchMaxWait(500 * time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			c.note("assigned", m[topic], true)
		}),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, m map[string][]int32) {
			// Replaces the default revoke, which commits: keep that.
			if !commitOnRevoke {
				// The test commits.
			} else if err := cl.CommitUncommittedOffsets(ctx); err != nil {
				t.Logf("%s: commit on revoke: %v", name, err)
			}
			c.note("revoked", m[topic], false)
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			c.note("lost", m[topic], false)
		}),
	}
	if os.Getenv("SLUICE_TEST_DEBUG") != "" {
		base = append(base, kgo.WithLogger(kgo.BasicLogger(tlogger{t, name}, kgo.LogLevelInfo, nil)))
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	c.cl = cl
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	go func() {
		defer close(c.done)
		// A poll blocks rebalances until AllowRebalance, which Close
		// (leaving the group) waits for.
		defer cl.AllowRebalance()
		for {
			fs := cl.PollFetches(ctx)
			if fs.IsClientClosed() || ctx.Err() != nil {
				return
			}
			fs.EachRecord(func(r *kgo.Record) { l.add(name, r) })
			cl.AllowRebalance()
		}
	}()
	t.Cleanup(c.stop)
	return c
}

// tlogger writes a client's log lines to the test log.
type tlogger struct {
	t    *testing.T
	name string
}

func (w tlogger) Write(p []byte) (int, error) {
	w.t.Logf("%s: %s", w.name, p)
	return len(p), nil
}

// stop ends the poll loop and closes the client (a dynamic member leaves
// the group; a static one does not). Safe to call twice.
func (c *consumer) stop() {
	if c.cancel == nil {
		return
	}
	c.cancel()
	<-c.done
	if c.dial != nil {
		c.dial.restore() // let the leave through, if it still matters
	}
	c.cl.Close()
	c.cancel = nil
}

func (c *consumer) note(what string, ps []int32, add bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range ps {
		if add {
			c.owned[p] = true
		} else {
			delete(c.owned, p)
		}
	}
	ps = slices.Clone(ps)
	slices.Sort(ps)
	c.events = append(c.events, fmt.Sprintf("%s %v", what, ps))
}

// ownedParts returns the partitions c owns, sorted.
func (c *consumer) ownedParts() []int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Sorted(maps.Keys(c.owned))
}

// eventLog returns the callbacks seen so far.
func (c *consumer) eventLog() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.events)
}

// split reports whether the consumers own disjoint partition sets of the
// given sizes that together are 0..partitions-1.
func split(cs []*consumer, partitions int, sizes ...int) bool {
	all := map[int32]bool{}
	for i, c := range cs {
		ps := c.ownedParts()
		if len(ps) != sizes[i] {
			return false
		}
		for _, p := range ps {
			if all[p] {
				return false
			}
			all[p] = true
		}
	}
	return len(all) == partitions
}

func describeOwned(cs []*consumer) string {
	var s string
	for _, c := range cs {
		s += fmt.Sprintf(" %s=%v", c.name, c.ownedParts())
	}
	return s
}

// waitGroupSplit waits until the group is Stable and kadm's DescribeGroups
// shows one member per consumer, assigned the partitions the consumer's
// callbacks say it owns, with sizes as given.
func waitGroupSplit(t *testing.T, adm *kadm.Client, group string, cs []*consumer, partitions int, sizes ...int) {
	t.Helper()
	var last string
	waitUntil(t, 30*time.Second, func() bool {
		if !split(cs, partitions, sizes...) {
			last = "callbacks:" + describeOwned(cs)
			return false
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		gs, err := adm.DescribeGroups(ctx, group)
		if err != nil {
			last = err.Error()
			return false
		}
		g := gs[group]
		described := map[string][]int32{}
		for _, m := range g.Members {
			if a, ok := m.Assigned.AsConsumer(); ok {
				for _, at := range a.Topics {
					described[m.ClientID] = append(described[m.ClientID], at.Partitions...)
				}
			}
		}
		last = fmt.Sprintf("state %s, described %v, callbacks:%s", g.State, described, describeOwned(cs))
		if g.State != "Stable" || len(g.Members) != len(cs) {
			return false
		}
		for _, c := range cs {
			ps := described[c.name]
			slices.Sort(ps)
			if !slices.Equal(ps, c.ownedParts()) {
				return false
			}
		}
		return true
	}, func() string { return last })
}

// endOffsets returns the end offset of every partition of topic.
func endOffsets(t *testing.T, adm *kadm.Client, topic string) map[int32]int64 {
	t.Helper()
	l, err := adm.ListEndOffsets(testCtx(t, 10*time.Second), topic)
	if err != nil {
		t.Fatalf("list end offsets: %v", err)
	}
	out := map[int32]int64{}
	l.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("end offset %s/%d: %v", o.Topic, o.Partition, o.Err)
		}
		out[o.Partition] = o.Offset
	})
	return out
}

// committed returns the group's committed offsets for topic.
func committed(t *testing.T, adm *kadm.Client, group, topic string) map[int32]int64 {
	t.Helper()
	resp, err := adm.FetchOffsets(testCtx(t, 10*time.Second), group)
	if err != nil {
		t.Fatalf("fetch offsets: %v", err)
	}
	out := map[int32]int64{}
	for p, r := range resp[topic] {
		if r.Err != nil {
			t.Fatalf("fetch offset %d: %v", p, r.Err)
		}
		out[p] = r.At
	}
	return out
}

func sum(m map[int32]int64) int {
	n := 0
	for _, v := range m {
		n += int(v)
	}
	return n
}

// TestGroupSplitAndConsumeOnce: three members of one group split six
// partitions two each and consume 60k records exactly once between them,
// and their commits reach the end of every partition.
func TestGroupSplitAndConsumeOnce(t *testing.T) {
	t.Parallel()
	forGroupBackends(t, func(t *testing.T, be string) {
		addr := startGroupBroker(t, be)
		prod := newProducer(t, addr)
		adm := kadm.NewClient(prod)
		const topic, group, parts, n = "split", "g-split", 6, 60000
		createTopic(t, adm, topic, parts, nil)

		l := newLedger()
		var cs []*consumer
		for _, name := range []string{"c1", "c2", "c3"} {
			cs = append(cs, startConsumer(t, addr, name, group, topic, l))
		}
		waitGroupSplit(t, adm, group, cs, parts, 2, 2, 2)

		produceN(t, prod, topic, parts, n)
		end := endOffsets(t, adm, topic)
		if sum(end) != n {
			t.Fatalf("end offsets %v sum to %d, want %d", end, sum(end), n)
		}
		waitUntil(t, 60*time.Second, func() bool { return l.count(nil) >= n },
			func() string { return fmt.Sprintf("consumed %d of %d", l.count(nil), n) })
		l.checkExactlyOnce(t, nil, end)
		// Each record went to the member owning its partition.
		for _, c := range cs {
			owned := c.ownedParts()
			l.mu.Lock()
			for k, who := range l.seen {
				if who[0] == c.name && !slices.Contains(owned, k.p) {
					t.Errorf("%s consumed partition %d, owns %v", c.name, k.p, owned)
				}
			}
			l.mu.Unlock()
		}
		for _, c := range cs {
			if err := c.cl.CommitUncommittedOffsets(testCtx(t, 10*time.Second)); err != nil {
				t.Fatalf("%s commit: %v", c.name, err)
			}
		}
		if got := committed(t, adm, group, topic); !maps.Equal(got, end) {
			t.Fatalf("committed %v, want the end offsets %v", got, end)
		}
	})
}

// cutDialer dials 127.0.0.1 and can cut every connection it made and fail
// every later dial: the client then can neither heartbeat nor leave.
type cutDialer struct {
	mu    sync.Mutex
	cut   bool
	conns []net.Conn
}

var errCut = errors.New("test: connections cut")

func (d *cutDialer) dial(ctx context.Context, network, host string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cut {
		return nil, errCut
	}
	var nd net.Dialer
	c, err := nd.DialContext(ctx, network, host)
	if err == nil {
		d.conns = append(d.conns, c)
	}
	return c, err
}

// sever closes every connection and fails later dials.
func (d *cutDialer) sever() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cut = true
	for _, c := range d.conns {
		c.Close()
	}
	d.conns = nil
}

// restore allows dials again.
func (d *cutDialer) restore() {
	d.mu.Lock()
	d.cut = false
	d.mu.Unlock()
}

// TestGroupMemberExpires: a member whose connections are cut (so it sends
// no LeaveGroup) is expired after its session timeout; the two others then
// own all six partitions and consume everything produced next, exactly
// once.
func TestGroupMemberExpires(t *testing.T) {
	t.Parallel() // waits on session and request timers, not the CPU
	forGroupBackends(t, func(t *testing.T, be string) {
		addr := startGroupBroker(t, be)
		prod := newProducer(t, addr)
		adm := kadm.NewClient(prod)
		const topic, group, parts = "expire", "g-expire", 6
		createTopic(t, adm, topic, parts, nil)

		l := newLedger()
		d := &cutDialer{}
		c1 := startConsumer(t, addr, "c1", group, topic, l)
		c2 := startConsumer(t, addr, "c2", group, topic, l)
		c3 := startConsumer(t, addr, "c3", group, topic, l, kgo.Dialer(d.dial))
		c3.dial = d
		waitGroupSplit(t, adm, group, []*consumer{c1, c2, c3}, parts, 2, 2, 2)
		produceN(t, prod, topic, parts, 6000)
		waitUntil(t, 30*time.Second, func() bool { return l.count(nil) >= 6000 },
			func() string { return fmt.Sprintf("consumed %d of 6000", l.count(nil)) })

		d.sever()
		// Within the session timeout (6 s) and a rebalance, c1 and c2
		// own everything, and the coordinator lists only them.
		waitGroupSplit(t, adm, group, []*consumer{c1, c2}, parts, 3, 3)

		from := endOffsets(t, adm, topic)
		produceN(t, prod, topic, parts, 6000)
		to := endOffsets(t, adm, topic)
		waitUntil(t, 30*time.Second, func() bool { return l.count(from) >= 6000 },
			func() string { return fmt.Sprintf("consumed %d of the 6000 produced after the expiry", l.count(from)) })
		l.checkExactlyOnce(t, from, to, "c1", "c2")
	})
}

// TestGroupCooperativeIncremental: with the cooperative-sticky balancer, a
// third member joining takes one partition from each of the two members,
// who keep the other two and are never made to revoke everything.
func TestGroupCooperativeIncremental(t *testing.T) {
	t.Parallel()
	forGroupBackends(t, func(t *testing.T, be string) {
		addr := startGroupBroker(t, be)
		prod := newProducer(t, addr)
		adm := kadm.NewClient(prod)
		const topic, group, parts = "coop", "g-coop", 6
		createTopic(t, adm, topic, parts, nil)
		coop := kgo.Balancers(kgo.CooperativeStickyBalancer())

		l := newLedger()
		c1 := startConsumer(t, addr, "c1", group, topic, l, coop)
		c2 := startConsumer(t, addr, "c2", group, topic, l, coop)
		waitGroupSplit(t, adm, group, []*consumer{c1, c2}, parts, 3, 3)
		produceN(t, prod, topic, parts, 3000)
		waitUntil(t, 30*time.Second, func() bool { return l.count(nil) >= 3000 },
			func() string { return fmt.Sprintf("consumed %d of 3000", l.count(nil)) })

		before := map[*consumer][]int32{c1: c1.ownedParts(), c2: c2.ownedParts()}
		seen := map[*consumer]int{c1: len(c1.eventLog()), c2: len(c2.eventLog())}
		c3 := startConsumer(t, addr, "c3", group, topic, l, coop)
		waitGroupSplit(t, adm, group, []*consumer{c1, c2, c3}, parts, 2, 2, 2)

		for _, c := range []*consumer{c1, c2} {
			after := c.ownedParts()
			for _, p := range after {
				if !slices.Contains(before[c], p) {
					t.Errorf("%s: owned %v, now %v: gained partition %d", c.name, before[c], after, p)
				}
			}
			// Each keeps two of its three: the only callback
			// besides assignments revokes the one it gives up.
			gone := fmt.Sprintf("revoked %v", diff(before[c], after))
			events := c.eventLog()[seen[c]:]
			revokes := 0
			for _, e := range events {
				switch {
				case e == gone:
					revokes++
				case e != "assigned []" && e != "revoked []":
					// kgo calls both callbacks with nothing
					// in every cooperative rebalance.
					t.Errorf("%s: callback %q; only %q was expected (owned %v, kept %v)", c.name, e, gone, before[c], after)
				}
			}
			if revokes != 1 {
				t.Errorf("%s: callbacks %v, want %q once", c.name, events, gone)
			}
			t.Logf("%s: %v -> %v via %v", c.name, before[c], after, events)
		}

		// Everything produced now is consumed exactly once.
		from := endOffsets(t, adm, topic)
		produceN(t, prod, topic, parts, 3000)
		to := endOffsets(t, adm, topic)
		waitUntil(t, 30*time.Second, func() bool { return l.count(from) >= 3000 },
			func() string { return fmt.Sprintf("consumed %d of 3000", l.count(from)) })
		l.checkExactlyOnce(t, from, to)
	})
}

// diff returns the elements of a not in b.
func diff(a, b []int32) []int32 {
	out := []int32{}
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// TestGroupStaticRestart: a static member (group.instance.id) that closes
// and restarts within its session timeout gets its partitions back in the
// same generation: no rebalance, the other member sees no callback. "a"
// joins first and leads; with range the restarted member is the leader
// (KIP-814: it leads without assigning), with cooperative-sticky the
// follower. (A restarted cooperative-sticky leader rebalances by franz-go's
// own choice: it balances anyway, and since the follower's metadata lists
// no owned partitions, its plan differs from the kept one and it rejoins;
// it would do so against Kafka too.)
func TestGroupStaticRestart(t *testing.T) {
	t.Parallel()
	tests := []struct {
		balancer string
		opt      kgo.Opt
		restart  string
	}{
		{"cooperative-sticky", kgo.Balancers(kgo.CooperativeStickyBalancer()), "b"},
		{"range", kgo.Balancers(kgo.RangeBalancer()), "a"},
		{"range", kgo.Balancers(kgo.RangeBalancer()), "b"},
	}
	forGroupBackends(t, func(t *testing.T, be string) {
		addr := startGroupBroker(t, be)
		prod := newProducer(t, addr)
		adm := kadm.NewClient(prod)
		const parts = 6
		for i, tt := range tests {
			t.Run(fmt.Sprintf("balancer=%s/restart=%s", tt.balancer, tt.restart), func(t *testing.T) {
				topic, group := fmt.Sprintf("static-%d", i), fmt.Sprintf("g-static-%d", i)
				createTopic(t, adm, topic, parts, nil)
				l := newLedger()
				static := func(name string) *consumer {
					return startConsumer(t, addr, name, group, topic, l, tt.opt,
						kgo.InstanceID("instance-"+name), kgo.SessionTimeout(20*time.Second))
				}
				a := static("a")
				waitGroupSplit(t, adm, group, []*consumer{a}, parts, 6)
				b := static("b")
				waitGroupSplit(t, adm, group, []*consumer{a, b}, parts, 3, 3)
				stays, goes := a, b
				if tt.restart == "a" {
					stays, goes = b, a
				}
				// One more rebalance would show as a new generation.
				_, gen := stays.cl.GroupMetadata()
				goneParts, staysEvents := goes.ownedParts(), len(stays.eventLog())

				goes.stop()
				back := static(tt.restart)
				members := []*consumer{stays, back}
				if tt.restart == "a" {
					members = []*consumer{back, stays}
				}
				waitGroupSplit(t, adm, group, members, parts, 3, 3)
				if got := back.ownedParts(); !slices.Equal(got, goneParts) {
					t.Errorf("restarted %s owns %v, had %v", tt.restart, got, goneParts)
				}
				if _, g := back.cl.GroupMetadata(); g != gen {
					t.Errorf("restarted %s is in generation %d, want %d (no rebalance)", tt.restart, g, gen)
				}
				// Traffic flows to both, and the other has
				// heartbeated meanwhile.
				from := endOffsets(t, adm, topic)
				produceN(t, prod, topic, parts, 600)
				to := endOffsets(t, adm, topic)
				waitUntil(t, 30*time.Second, func() bool { return l.count(from) >= 600 },
					func() string { return fmt.Sprintf("consumed %d of 600", l.count(from)) })
				l.checkExactlyOnce(t, from, to, "a", "b")
				if _, g := stays.cl.GroupMetadata(); g != gen {
					t.Errorf("%s is in generation %d, want %d (no rebalance)", stays.name, g, gen)
				}
				if ev := stays.eventLog()[staysEvents:]; len(ev) != 0 {
					t.Errorf("%s saw callbacks %v during the restart, want none", stays.name, ev)
				}
			})
		}
	})
}

// TestGroupResumeAndReset: a consumer that committed, stopped and
// restarted resumes right after the committed offsets; with nothing
// committed, auto.offset.reset earliest starts at the log start and latest
// at the end.
func TestGroupResumeAndReset(t *testing.T) {
	t.Parallel()
	forGroupBackends(t, func(t *testing.T, be string) {
		addr := startGroupBroker(t, be)
		prod := newProducer(t, addr)
		adm := kadm.NewClient(prod)
		const topic, parts = "resume", 3
		createTopic(t, adm, topic, parts, nil)
		produceN(t, prod, topic, parts, 300)
		end := endOffsets(t, adm, topic)
		earliest := kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())

		t.Run("resume", func(t *testing.T) {
			const group = "g-resume"
			l := newLedger()
			c := startConsumerCommit(t, addr, "c", group, topic, l, false, earliest, kgo.DisableAutoCommit())
			waitUntil(t, 30*time.Second, func() bool { return l.count(nil) >= 300 },
				func() string { return fmt.Sprintf("consumed %d of 300", l.count(nil)) })
			l.checkExactlyOnce(t, nil, end)
			// Commit partway: offset 40 of every partition (the next
			// record to read), then stop.
			commit := map[string]map[int32]kgo.EpochOffset{topic: {}}
			for p := range int32(parts) {
				commit[topic][p] = kgo.EpochOffset{Epoch: -1, Offset: 40}
			}
			var commitErr error
			c.cl.CommitOffsetsSync(testCtx(t, 10*time.Second), commit, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
				commitErr = err
				if err == nil {
					for _, rt := range resp.Topics {
						for _, rp := range rt.Partitions {
							if rp.ErrorCode != 0 {
								commitErr = fmt.Errorf("partition %d: error %d", rp.Partition, rp.ErrorCode)
							}
						}
					}
				}
			})
			if commitErr != nil {
				t.Fatalf("commit: %v", commitErr)
			}
			c.stop()

			produceN(t, prod, topic, parts, 30)
			end2 := endOffsets(t, adm, topic)
			l2 := newLedger()
			// Earliest is configured but must not apply: offsets
			// are committed.
			startConsumer(t, addr, "c-again", group, topic, l2, earliest)
			from := map[int32]int64{0: 40, 1: 40, 2: 40}
			want := sum(end2) - sum(from)
			waitUntil(t, 30*time.Second, func() bool { return l2.count(nil) >= want },
				func() string { return fmt.Sprintf("consumed %d of %d", l2.count(nil), want) })
			l2.checkExactlyOnce(t, from, end2)
		})

		t.Run("reset=earliest", func(t *testing.T) {
			l := newLedger()
			startConsumer(t, addr, "c", "g-earliest", topic, l, earliest)
			end := endOffsets(t, adm, topic)
			waitUntil(t, 30*time.Second, func() bool { return l.count(nil) >= sum(end) },
				func() string { return fmt.Sprintf("consumed %d of %d", l.count(nil), sum(end)) })
			l.checkExactlyOnce(t, nil, end)
		})

		t.Run("reset=latest", func(t *testing.T) {
			l := newLedger()
			// kgo's default is AtStart (Kafka's is latest): ask.
			c := startConsumer(t, addr, "c", "g-latest", topic, l, kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()))
			old := endOffsets(t, adm, topic)
			waitUntil(t, 30*time.Second, func() bool { return len(c.ownedParts()) == parts },
				func() string { return fmt.Sprintf("owns %v", c.ownedParts()) })
			// The consumer looks up the end after its assignment;
			// produce until it reports records, then check it never
			// got one that existed before it started.
			deadline := time.Now().Add(30 * time.Second)
			for l.count(nil) == 0 {
				if time.Now().After(deadline) {
					t.Fatal("no record produced after the start was consumed within 30s")
				}
				produceN(t, prod, topic, parts, parts)
				time.Sleep(100 * time.Millisecond)
			}
			l.mu.Lock()
			defer l.mu.Unlock()
			var got []tp
			for k := range l.seen {
				if k.o < old[k.p] {
					got = append(got, k)
				}
			}
			sort.Slice(got, func(i, j int) bool { return got[i].o < got[j].o })
			if len(got) > 0 {
				t.Fatalf("latest: consumed %d records from before the start, e.g. %v (ends were %v)", len(got), got[0], old)
			}
		})
	})
}
