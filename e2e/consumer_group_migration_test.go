package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// migSets makes KIP-848 groups heartbeat every 500 ms and expire members
// after 6 s, and classic groups rebalance at once.
func migSets() []string {
	return append(groupSets("segment"),
		"group.consumer.min.heartbeat.interval.ms=100",
		"group.consumer.heartbeat.interval.ms=500",
		"group.consumer.min.session.timeout.ms=1000",
		"group.consumer.session.timeout.ms=6000",
		"group.min.session.timeout.ms=1000")
}

// migDescribe is group's ConsumerGroupDescribe answer.
func migDescribe(ctx context.Context, cl *kgo.Client, group string) (kmsg.ConsumerGroupDescribeResponseGroup, error) {
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

// migOwners checks that g has n members, each reconciled (at the assignment
// epoch, holding its target), covering topic's parts partitions once, and
// returns each partition's holder and each member's type.
func migOwners(g kmsg.ConsumerGroupDescribeResponseGroup, parts, n int) (map[int32]string, map[string]int8, error) {
	owner, types := map[int32]string{}, map[string]int8{}
	if g.ErrorCode != 0 {
		return nil, nil, fmt.Errorf("describe error %d", g.ErrorCode)
	}
	if len(g.Members) != n {
		return nil, nil, fmt.Errorf("%d members, want %d", len(g.Members), n)
	}
	for _, m := range g.Members {
		types[m.MemberID] = m.MemberType
		if m.MemberEpoch != g.AssignmentEpoch {
			return nil, nil, fmt.Errorf("member %s at epoch %d, assignment epoch %d", m.MemberID, m.MemberEpoch, g.AssignmentEpoch)
		}
		held, target := 0, 0
		for _, tp := range m.TargetAssignment.TopicPartitions {
			target += len(tp.Partitions)
		}
		for _, tp := range m.Assignment.TopicPartitions {
			for _, p := range tp.Partitions {
				held++
				if o, dup := owner[p]; dup {
					return nil, nil, fmt.Errorf("partition %d held by %s and %s", p, o, m.MemberID)
				}
				owner[p] = m.MemberID
			}
		}
		if held != target {
			return nil, nil, fmt.Errorf("member %s holds %d of its %d target partitions", m.MemberID, held, target)
		}
	}
	if len(owner) != parts {
		return nil, nil, fmt.Errorf("%d of %d partitions held", len(owner), parts)
	}
	return owner, types, nil
}

// TestConsumerGroupMigrationKcatJoins: kcat (librdkafka, the classic
// protocol, -G) joins a consumer group whose two franz-go members speak the
// consumer protocol (KIP-848). The broker serves it through
// JoinGroup/SyncGroup/Heartbeat from the group's target assignment: the
// three hold a complete, unique assignment (ConsumerGroupDescribe shows kcat
// as a classic member holding its share) and kcat consumes exactly its
// partitions while the franz-go members consume the rest.
func TestConsumerGroupMigrationKcatJoins(t *testing.T) {
	kcat := need(t, "kcat")
	b := startBroker(t, t.TempDir(), migSets()...)
	const topic, group, parts, n = "mig-kcat", "g-mig-kcat", 6, 6000
	prod := groupClient(t, b.addr)
	adm := kadm.NewClient(prod)
	createTopicE2E(t, adm, topic, parts)

	// Two franz-go members of the consumer protocol, recording what they
	// consume.
	var mu sync.Mutex
	franz := map[partOff]int{}
	for i := 0; i < 2; i++ {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.ClientID(fmt.Sprintf("franz-%d", i)),
			kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.ServerSideBalancer(),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			for ctx.Err() == nil {
				cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
					mu.Lock()
					franz[partOff{r.Partition, r.Offset}]++
					mu.Unlock()
				})
			}
		}()
		t.Cleanup(func() { cancel(); <-done; cl.Close() })
	}

	stable := func(members int) (map[int32]string, map[string]int8) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			g, err := migDescribe(ctx, prod, group)
			cancel()
			var owner map[int32]string
			var types map[string]int8
			if err == nil {
				owner, types, err = migOwners(g, parts, members)
			}
			if err == nil {
				return owner, types
			}
			if time.Now().After(deadline) {
				t.Fatalf("group not stable with %d members within 60s: %v\nbroker log:\n%s", members, err, b.logText())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	stable(2)

	k := startKcatMember(t, kcat, b.addr, group, topic)
	owner, types := stable(3)
	var kcatID string
	for id, typ := range types {
		if typ == 0 {
			if kcatID != "" {
				t.Fatalf("two classic members: %v", types)
			}
			kcatID = id
		}
	}
	kcatParts := map[int32]bool{}
	for p, id := range owner {
		if id == kcatID {
			kcatParts[p] = true
		}
	}
	if kcatID == "" || len(kcatParts) == 0 {
		t.Fatalf("kcat is not a classic member holding partitions: types %v, owners %v\nkcat: %s", types, owner, k.stderr.String())
	}
	t.Logf("kcat (member %s) holds partitions %v of %d", kcatID, kcatParts, parts)

	// Produce once the three hold their shares, so no rebalance happens
	// while records flow.
	produceSpread(t, prod, topic, parts, n)
	deadline := time.Now().Add(60 * time.Second)
	for {
		mu.Lock()
		got := len(franz)
		mu.Unlock()
		kgot := map[partOff]bool{}
		for _, po := range k.records() {
			kgot[po] = true
		}
		if got+len(kgot) >= n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("consumed %d (franz-go) + %d (kcat) of %d records within 60s\nkcat: %s", got, len(kgot), n, k.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	k.stop()

	seen := map[partOff]int{}
	for _, po := range k.records() {
		if !kcatParts[po.p] {
			t.Errorf("kcat consumed partition %d, which it does not hold", po.p)
		}
		seen[po]++
	}
	mu.Lock()
	for po, c := range franz {
		if kcatParts[po.p] {
			t.Errorf("franz-go consumed partition %d, which kcat holds", po.p)
		}
		seen[po] += c
	}
	mu.Unlock()
	for p := int32(0); p < parts; p++ {
		for o := int64(0); o < n/parts; o++ {
			if seen[partOff{p, o}] == 0 {
				t.Fatalf("record %d/%d not consumed", p, o)
			}
		}
	}
	if len(seen) != n {
		t.Fatalf("%d distinct records consumed, want %d", len(seen), n)
	}
}
