package e2e

// KIP-848 consumer groups across a coordinator failure: three `sluice
// serve` processes and ZooKeeper, a consumer group of three franz-go
// members opted into the new protocol (kgo.ServerSideBalancer: the broker
// computes the assignment) over a 12-partition topic that an acks=all
// producer keeps writing to. The broker coordinating the group is
// SIGKILLed; the broker that takes over its __consumer_offsets partition
// replays the group's records, so the members heartbeat on with the ids and
// epochs they had, the committed offsets are there, and every record that
// was acknowledged is consumed.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// member848 is one group member of the test and the values it consumed.
type member848 struct {
	cl   *kgo.Client
	stop context.CancelFunc
	done chan struct{}
}

// startMember848 starts a consumer of topic in group (KIP-848, server-side
// assignor) that adds every record's value to seen and commits what it
// polled every 250 ms.
func (c *testCluster) startMember848(group, topic string, seen *sync.Map) *member848 {
	c.t.Helper()
	cl, err := c.newClient(
		kgo.SeedBrokers(c.seeds()...),
		kgo.ClientID("e2e-848"),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.ServerSideBalancer(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200*time.Millisecond),
		kgo.AutoCommitInterval(250*time.Millisecond),
	)
	if err != nil {
		c.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &member848{cl: cl, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
				v, _ := seen.LoadOrStore(string(r.Value), new(atomic.Int32))
				v.(*atomic.Int32).Add(1)
			})
		}
	}()
	return m
}

// close stops polling, commits what was polled and leaves the group.
func (m *member848) close() {
	m.stop()
	<-m.done
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_ = m.cl.CommitUncommittedOffsets(ctx)
	m.cl.Close()
}

// describe848 returns group as ConsumerGroupDescribe answers it, through
// a fresh client (one that knew the killed coordinator can keep asking
// it), with every member's id -> epoch.
func (c *testCluster) describe848(group string) (kadm.DescribedConsumerGroup, map[string]int32, error) {
	adm, cl := c.admin()
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	gs, err := adm.DescribeConsumerGroups(ctx, group)
	if err != nil {
		return kadm.DescribedConsumerGroup{}, nil, err
	}
	g, ok := gs[group]
	if !ok {
		return g, nil, fmt.Errorf("%s not in the answer", group)
	}
	if g.Err != nil {
		return g, nil, g.Err
	}
	epochs := map[string]int32{}
	for _, m := range g.Members {
		epochs[m.MemberID] = m.MemberEpoch
	}
	return g, epochs, nil
}

// reconciled says why g is not n members that each hold exactly their
// target at the assignment epoch, with topic's parts partitions assigned
// once each; nil when it is.
func reconciled(g kadm.DescribedConsumerGroup, topic string, parts, n int) error {
	if len(g.Members) != n {
		return fmt.Errorf("%d members, want %d", len(g.Members), n)
	}
	owner := map[int32]string{}
	for _, m := range g.Members {
		if m.MemberEpoch != g.AssignmentEpoch {
			return fmt.Errorf("member %s at epoch %d, assignment epoch %d", m.MemberID, m.MemberEpoch, g.AssignmentEpoch)
		}
		cur, tgt := slices.Sorted(maps.Keys(m.Assignment[topic])), slices.Sorted(maps.Keys(m.TargetAssignment[topic]))
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

// TestClusterConsumerGroup848CoordinatorKill: SIGKILL the coordinator of a
// KIP-848 group while its members consume and a producer writes; the new
// coordinator has the same members at the same epochs (none was fenced and
// rejoined: a rejoin takes a new epoch), their committed offsets, and the
// members consume every acknowledged record.
func TestClusterConsumerGroup848CoordinatorKill(t *testing.T) {
	t.Parallel()
	const (
		topic, group = "orders848", "group848"
		parts        = 12
		maxRecords   = 12000 // bounds the producer
	)
	c := startCluster(t, 3,
		"offsets.topic.num.partitions=3", "offsets.topic.replication.factor=3",
		// Heartbeats every 500 ms (Kafka: 5 s) so the test sees the
		// members reconcile quickly; the session stays Kafka's 45 s,
		// far longer than a failover.
		"group.consumer.min.heartbeat.interval.ms=100", "group.consumer.heartbeat.interval.ms=500")
	two := "2"
	c.createTopic(topic, parts, 3, map[string]*string{"min.insync.replicas": &two})

	// The producer writes acks=all, round robin over the partitions, until
	// stopped or maxRecords; acked holds every value a broker acknowledged.
	prod, err := c.newClient(kgo.SeedBrokers(c.seeds()...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.RecordRetries(1<<20), kgo.RetryTimeout(60*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	var acked sync.Map
	var nAcked, nFailed, nCanceled atomic.Int64
	var firstFailure atomic.Value
	prodCtx, stopProd := context.WithCancel(context.Background())
	defer stopProd()
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		for i := 0; i < maxRecords && prodCtx.Err() == nil; i++ {
			v := fmt.Sprintf("r-%06d", i)
			prod.Produce(prodCtx, &kgo.Record{Value: []byte(v)}, func(_ *kgo.Record, err error) {
				switch {
				case errors.Is(err, context.Canceled):
					nCanceled.Add(1) // still buffered when the test stopped the producer
					return
				case err != nil:
					firstFailure.CompareAndSwap(nil, err.Error())
					nFailed.Add(1)
					return
				}
				acked.Store(v, true)
				nAcked.Add(1)
			})
			if i%parts == parts-1 {
				time.Sleep(10 * time.Millisecond)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		_ = prod.Flush(ctx)
	}()

	var seen sync.Map
	members := []*member848{}
	defer func() {
		for _, m := range members {
			m.close()
		}
	}()
	for range 3 {
		members = append(members, c.startMember848(group, topic, &seen))
	}

	var before kadm.DescribedConsumerGroup
	var epochsBefore map[string]int32
	var why error
	c.retryFor(90*time.Second, "3 members holding their targets", func() bool {
		before, epochsBefore, why = c.describe848(group)
		if why == nil {
			why = reconciled(before, topic, parts, 3)
		}
		return why == nil
	}, func() string { return fmt.Sprint(why) })
	// The members' own view of their ids and epochs is the coordinator's.
	for _, m := range members {
		id, epoch := m.cl.GroupMetadata()
		if e, ok := epochsBefore[id]; !ok || e != epoch {
			t.Fatalf("client's member %s at epoch %d; the group has %v", id, epoch, epochsBefore)
		}
	}
	t.Logf("stable: group epoch %d, members %v", before.Epoch, epochsBefore)

	// Every partition has a commit before the kill.
	var committedBefore kadm.OffsetResponses
	c.retryFor(60*time.Second, "a commit on every partition", func() bool {
		adm, cl := c.admin()
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		o, err := adm.FetchOffsets(ctx, group)
		if err != nil || o.Error() != nil {
			why = fmt.Errorf("%v %v", err, o.Error())
			return false
		}
		n := 0
		o.Each(func(r kadm.OffsetResponse) {
			if r.Topic == topic && r.At > 0 {
				n++
			}
		})
		why = fmt.Errorf("%d of %d partitions committed", n, parts)
		committedBefore = o
		return n == parts
	}, func() string { return fmt.Sprint(why) })

	// One more look at the group right before the kill: it must not have
	// moved since it was stable.
	if _, e, err := c.describe848(group); err != nil || !maps.Equal(e, epochsBefore) {
		t.Fatalf("group moved while stable: %v %v, was %v", e, err, epochsBefore)
	}
	coord := c.groupCoordinator(group)
	killedAt := time.Now()
	c.brokers[coord].kill()
	t.Logf("SIGKILLed broker %d, the coordinator of %s (%d records acknowledged so far)", coord, group, nAcked.Load())

	// The new coordinator serves the group: the same members at the same
	// epochs, holding their targets.
	var after kadm.DescribedConsumerGroup
	var epochsAfter map[string]int32
	c.retryFor(90*time.Second, "the group on a new coordinator", func() bool {
		after, epochsAfter, why = c.describe848(group)
		if why == nil && after.Coordinator.NodeID == coord {
			why = fmt.Errorf("described by the killed broker %d", coord)
		}
		if why == nil {
			why = reconciled(after, topic, parts, 3)
		}
		return why == nil
	}, func() string { return fmt.Sprint(why) })
	t.Logf("broker %d coordinates %s %v after the kill: group epoch %d, members %v",
		after.Coordinator.NodeID, group, time.Since(killedAt).Round(time.Millisecond), after.Epoch, epochsAfter)
	if !maps.Equal(epochsAfter, epochsBefore) || after.Epoch != before.Epoch {
		t.Fatalf("after the failover: group epoch %d, members %v; before: group epoch %d, members %v",
			after.Epoch, epochsAfter, before.Epoch, epochsBefore)
	}

	// The commits made before the kill are there (later ones only add).
	adm, acl := c.admin()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	committedAfter, err := adm.FetchOffsets(ctx, group)
	cancel()
	acl.Close()
	if err != nil || committedAfter.Error() != nil {
		t.Fatalf("fetch offsets from the new coordinator: %v %v", err, committedAfter.Error())
	}
	committedBefore.Each(func(b kadm.OffsetResponse) {
		if a, ok := committedAfter.Lookup(b.Topic, b.Partition); !ok || a.At < b.At {
			t.Errorf("%s-%d committed at %d before the kill, %d after", b.Topic, b.Partition, b.At, a.At)
		}
	})

	// Let the producer write through the new leaders too, then stop it.
	c.retryFor(60*time.Second, "records acknowledged after the kill", func() bool {
		n := nAcked.Load()
		time.Sleep(time.Second)
		return nAcked.Load() > n
	}, func() string { return "no produce acknowledged after the kill" })
	stopProd()
	<-produced

	// Every acknowledged record is consumed.
	missing := func() []string {
		var out []string
		acked.Range(func(k, _ any) bool {
			if _, ok := seen.Load(k); !ok {
				out = append(out, k.(string))
			}
			return true
		})
		slices.Sort(out)
		return out
	}
	c.retryFor(90*time.Second, "every acknowledged record consumed", func() bool {
		return len(missing()) == 0
	}, func() string {
		m := missing()
		return fmt.Sprintf("%d of %d acknowledged records not consumed, first %v", len(m), nAcked.Load(), m[:min(len(m), 5)])
	})

	// All through, the members were never fenced: same ids, same epochs.
	if _, e, err := c.describe848(group); err != nil || !maps.Equal(e, epochsBefore) {
		t.Fatalf("at the end: members %v (%v), before the kill %v", e, err, epochsBefore)
	}
	for _, m := range members {
		if id, epoch := m.cl.GroupMetadata(); epochsBefore[id] != epoch {
			t.Fatalf("client's member %s at epoch %d at the end; before the kill %v", id, epoch, epochsBefore)
		}
	}

	// Leaving commits the rest: the commits reach the end offsets.
	for _, m := range members {
		m.close()
	}
	members = nil
	adm, acl = c.admin()
	defer acl.Close()
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil || ends.Error() != nil {
		t.Fatalf("end offsets: %v %v", err, ends.Error())
	}
	final, err := adm.FetchOffsets(ctx, group)
	if err != nil || final.Error() != nil {
		t.Fatalf("fetch offsets: %v %v", err, final.Error())
	}
	var total int64
	ends.Each(func(e kadm.ListedOffset) {
		total += e.Offset
		if o, ok := final.Lookup(topic, e.Partition); !ok || o.At != e.Offset {
			t.Errorf("%s-%d committed at %d, log end %d", topic, e.Partition, o.At, e.Offset)
		}
	})
	dups := 0
	seen.Range(func(_, v any) bool {
		if v.(*atomic.Int32).Load() > 1 {
			dups++
		}
		return true
	})
	t.Logf("%d records acknowledged, %d canceled unsent at the stop, %d failed (first: %v); %d in the log, %d consumed more than once",
		nAcked.Load(), nCanceled.Load(), nFailed.Load(), firstFailure.Load(), total, dups)
}

// groupCoordinator asks a running broker which broker coordinates group
// (FindCoordinator), retrying until one answers.
func (c *testCluster) groupCoordinator(group string) int32 {
	c.t.Helper()
	var node int32 = -1
	var why error
	c.retryFor(30*time.Second, "the coordinator of "+group, func() bool {
		adm, cl := c.admin()
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r := adm.FindGroupCoordinators(ctx, group)[group]
		node, why = r.NodeID, r.Err
		return why == nil && c.brokers[node] != nil
	}, func() string { return fmt.Sprint(why) })
	return node
}

// retryFor calls try every 200 ms until it returns true, failing the test
// after within with what, why() and the brokers' logs.
func (c *testCluster) retryFor(within time.Duration, what string, try func() bool, why func() string) {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for !try() {
		if time.Now().After(deadline) {
			c.t.Fatalf("not after %v: %s: %s\n%s", within, what, why(), c.logs())
		}
		time.Sleep(200 * time.Millisecond)
	}
}
