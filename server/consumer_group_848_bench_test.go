package server_test

// How long a large group takes to settle after one more member joins, with
// the classic protocol (JoinGroup/SyncGroup: every member rejoins; franz-go's
// default cooperative-sticky balancer takes a second rebalance for the
// partitions it revoked) and with KIP-848 (ConsumerGroupHeartbeat: the
// coordinator computes a new target and only the members whose partitions
// move reconcile, at their next heartbeats). BENCHMARKS.md, "Consumer group
// stabilization: classic vs KIP-848", has a run and its command.

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
)

const (
	stabMembers    = 100 // members before the one that joins
	stabPartitions = 200
	stabTopic      = "stabilize"
	// stabPoll is how often the benchmark asks the coordinator whether
	// the group settled: the resolution of the figure.
	stabPoll = 20 * time.Millisecond
)

// BenchmarkConsumerGroupStabilization: stabMembers franz-go members share
// a stabPartitions-partition topic; one op is the time from starting one
// more member until the coordinator describes a settled group: every
// member (the new one too) holds a part of a complete, unique assignment,
//   - classic: the group Stable with all members in its generation, which
//     means they all rejoined and the leader's assignment was synced;
//   - consumer (KIP-848): every member at the assignment epoch, which is
//     the group epoch, with its current assignment equal to its target.
//
// broker=kfake runs the same against franz-go's kfake, as a reference.
// heartbeat= is the members' heartbeat interval: "default" is each
// protocol's (franz-go's classic 3 s, Kafka's group.consumer 5 s), the
// other value is the same for both. Setting up the stabMembers members is
// not timed; nor is a random quiet period of 2 to 3 heartbeat intervals
// after they settled, so that the join lands anywhere in the members'
// heartbeat cycle (the seed is logged). Run with -benchtime 1x (each op builds a group of 101
// clients); skipped under -short.
func BenchmarkConsumerGroupStabilization(b *testing.B) {
	if testing.Short() {
		b.Skip("starts 101 group members per op")
	}
	for _, hb := range []struct {
		name              string
		classic, consumer time.Duration
	}{
		{"default", 3 * time.Second, 5 * time.Second},
		{"500ms", 500 * time.Millisecond, 500 * time.Millisecond},
	} {
		for _, protocol := range []string{"classic", "consumer"} {
			interval := hb.classic
			if protocol == "consumer" {
				interval = hb.consumer
			}
			for _, brokerName := range []string{"sluice", "kfake"} {
				b.Run(fmt.Sprintf("protocol=%s/heartbeat=%s/broker=%s", protocol, hb.name, brokerName), func(b *testing.B) {
					benchStabilization(b, stabBroker(b, brokerName, interval), protocol, interval)
				})
			}
		}
	}
}

// stabBroker starts a broker for the benchmark, Sluice or, as the
// reference, franz-go's kfake, with consumer group heartbeats every
// heartbeat, and returns its address.
func stabBroker(b *testing.B, name string, heartbeat time.Duration) string {
	if name == "kfake" {
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.BrokerConfigs(map[string]string{
			"group.consumer.heartbeat.interval.ms": strconv.Itoa(int(heartbeat.Milliseconds())),
		}))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(c.Close)
		return c.ListenAddrs()[0]
	}
	return brokertest.Start(b, "segment", func(c *config.Config) {
		c.GroupConsumerMinHeartbeatInterval = min(heartbeat, 5*time.Second)
		c.GroupConsumerHeartbeatInterval = heartbeat
	}).Addr()
}

func benchStabilization(b *testing.B, addr, protocol string, heartbeat time.Duration) {
	admCl := newClient(b, addr)
	adm := kadm.NewClient(admCl)
	createTopic(b, adm, stabTopic, stabPartitions, nil)
	b.ReportAllocs()
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	var total time.Duration
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		group := fmt.Sprintf("stab-%s-%d", protocol, i)
		ms := newStabGroup(b, addr, group, protocol, heartbeat)
		ms.start(stabMembers)
		before, err := waitSettled(b, adm, group, protocol, stabMembers, 5*time.Minute)
		if err != nil {
			b.Fatalf("%d members never settled: %v", stabMembers, err)
		}
		// The members joined together, so their heartbeats are in step,
		// and franz-go's classic members send one extra heartbeat 500 ms
		// after each sync: a join right away would be seen at once. Let
		// the group run a random while (the figure depends on where in
		// the heartbeat cycle the join lands) before the join.
		quiet := 2*heartbeat + time.Duration(rng.Int64N(int64(heartbeat)))
		time.Sleep(quiet)
		b.StartTimer()
		start := time.Now()
		ms.start(1)
		after, err := waitSettled(b, adm, group, protocol, stabMembers+1, 5*time.Minute)
		if err != nil {
			b.Fatalf("not settled after a join: %v", err)
		}
		took := time.Since(start)
		b.StopTimer()
		total += took
		// What moved: partitions whose owner changed, and how many of
		// the members they came from.
		moved, from := 0, map[string]bool{}
		for p, o := range before {
			if after[p] != o {
				moved++
				from[o] = true
			}
		}
		b.Logf("%s, heartbeat %v: %d members settled %v after one more joined (joined %v after the %d settled; seed %d); %d partitions moved, from %d members",
			protocol, heartbeat, stabMembers+1, took.Round(time.Millisecond), quiet.Round(time.Millisecond), stabMembers, seed, moved, len(from))
		ms.close()
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/stabilize")
}

// stabGroup is the members of one benchmark group.
type stabGroup struct {
	tb          testing.TB
	addr, group string
	protocol    string
	heartbeat   time.Duration
	ctx         context.Context
	cancel      context.CancelFunc
	wg          sync.WaitGroup
	mu          sync.Mutex
	clients     []*kgo.Client
}

func newStabGroup(tb testing.TB, addr, group, protocol string, heartbeat time.Duration) *stabGroup {
	ctx, cancel := context.WithCancel(context.Background())
	return &stabGroup{tb: tb, addr: addr, group: group, protocol: protocol, heartbeat: heartbeat, ctx: ctx, cancel: cancel}
}

// start starts n more members, each polling in a goroutine of its own.
func (s *stabGroup) start(n int) {
	for range n {
		opts := []kgo.Opt{
			kgo.SeedBrokers(s.addr),
			kgo.ConsumerGroup(s.group),
			kgo.ConsumeTopics(stabTopic),
			kgo.HeartbeatInterval(s.heartbeat), // classic only; KIP-848 takes the broker's
		}
		if s.protocol == "consumer" {
			opts = append(opts, kgo.ServerSideBalancer())
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			s.tb.Fatal(err)
		}
		s.mu.Lock()
		s.clients = append(s.clients, cl)
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			for s.ctx.Err() == nil {
				cl.PollFetches(s.ctx)
			}
		}()
	}
}

// close stops every member at once.
func (s *stabGroup) close() {
	s.cancel()
	s.wg.Wait()
	var wg sync.WaitGroup
	for _, cl := range s.clients {
		wg.Add(1)
		go func() { defer wg.Done(); cl.Close() }()
	}
	wg.Wait()
}

// waitSettled polls the coordinator every stabPoll until group has n
// members that each hold part of a complete, unique assignment of
// stabTopic in a settled group (see BenchmarkConsumerGroupStabilization),
// or within passes, and returns who holds each partition then.
func waitSettled(tb testing.TB, adm *kadm.Client, group, protocol string, n int, within time.Duration) (map[int32]string, error) {
	deadline := time.Now().Add(within)
	var why error
	var owner map[int32]string
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if protocol == "consumer" {
			owner, why = settled848(ctx, adm, group, n)
		} else {
			owner, why = settledClassic(ctx, adm, group, n)
		}
		cancel()
		if why == nil {
			return owner, nil
		}
		time.Sleep(stabPoll)
	}
	return nil, why
}

func settledClassic(ctx context.Context, adm *kadm.Client, group string, n int) (map[int32]string, error) {
	ds, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return nil, err
	}
	d := ds[group]
	if d.Err != nil {
		return nil, d.Err
	}
	if d.State != "Stable" || len(d.Members) != n {
		return nil, fmt.Errorf("%s with %d members", d.State, len(d.Members))
	}
	owner := map[int32]string{}
	for _, m := range d.Members {
		c, ok := m.Assigned.AsConsumer()
		if !ok {
			return nil, fmt.Errorf("member %s has no consumer assignment", m.MemberID)
		}
		for _, t := range c.Topics {
			for _, p := range t.Partitions {
				if o, dup := owner[p]; dup {
					return nil, fmt.Errorf("partition %d held by %s and %s", p, o, m.MemberID)
				}
				owner[p] = m.MemberID
			}
		}
	}
	if len(owner) != stabPartitions {
		return nil, fmt.Errorf("%d of %d partitions assigned", len(owner), stabPartitions)
	}
	return owner, nil
}

func settled848(ctx context.Context, adm *kadm.Client, group string, n int) (map[int32]string, error) {
	ds, err := adm.DescribeConsumerGroups(ctx, group)
	if err != nil {
		return nil, err
	}
	d := ds[group]
	if d.Err != nil {
		return nil, d.Err
	}
	if len(d.Members) != n || d.Epoch != d.AssignmentEpoch {
		return nil, fmt.Errorf("%d members, group epoch %d, assignment epoch %d", len(d.Members), d.Epoch, d.AssignmentEpoch)
	}
	owner := map[int32]string{}
	for _, m := range d.Members {
		if m.MemberEpoch != d.AssignmentEpoch {
			return nil, fmt.Errorf("member %s at epoch %d, assignment epoch %d", m.MemberID, m.MemberEpoch, d.AssignmentEpoch)
		}
		cur, tgt := stabParts(m.Assignment), stabParts(m.TargetAssignment)
		if !maps.Equal(cur, tgt) {
			return nil, fmt.Errorf("member %s holds %d partitions, its target %d", m.MemberID, len(cur), len(tgt))
		}
		for p := range cur {
			if o, dup := owner[p]; dup {
				return nil, fmt.Errorf("partition %d held by %s and %s", p, o, m.MemberID)
			}
			owner[p] = m.MemberID
		}
	}
	if len(owner) != stabPartitions {
		return nil, fmt.Errorf("%d of %d partitions assigned", len(owner), stabPartitions)
	}
	return owner, nil
}

// stabParts is s's partitions of stabTopic. kfake describes assignments by
// topic id without the name (kadm files them under ""), Sluice with both.
func stabParts(s kadm.TopicsSet) map[int32]struct{} {
	out := maps.Clone(s[stabTopic])
	if out == nil {
		out = map[int32]struct{}{}
	}
	maps.Copy(out, s[""])
	return out
}
