package e2e

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"sync"
	"syscall"
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

// franz848 are franz-go members of the consumer protocol and what they
// consumed.
type franz848 struct {
	mu   sync.Mutex
	seen map[partOff]int
}

// startFranz848 starts n franz-go group consumers of the consumer protocol
// (kgo.ServerSideBalancer) on topic; they stop at Cleanup.
func startFranz848(t *testing.T, addr, group, topic string, n int) *franz848 {
	t.Helper()
	f := &franz848{seen: map[partOff]int{}}
	for i := 0; i < n; i++ {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID(fmt.Sprintf("franz-%d", i)),
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
					f.mu.Lock()
					f.seen[partOff{r.Partition, r.Offset}]++
					f.mu.Unlock()
				})
			}
		}()
		t.Cleanup(func() { cancel(); <-done; cl.Close() })
	}
	return f
}

func (f *franz848) records() map[partOff]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.seen)
}

// migStable waits until group has members members holding a complete,
// unique assignment of its parts partitions, and returns the partitions
// of its one classic member (failing if there is not exactly one, holding
// some).
func migStable(t *testing.T, b *brokerProc, cl *kgo.Client, group string, parts, members int, why func() string) map[int32]bool {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var owner map[int32]string
	var types map[string]int8
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		g, err := migDescribe(ctx, cl, group)
		cancel()
		if err == nil {
			owner, types, err = migOwners(g, parts, members)
		}
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("group not stable with %d members within 60s: %v\n%s\nbroker log:\n%s", members, err, why(), b.logText())
		}
		time.Sleep(100 * time.Millisecond)
	}
	classic := ""
	for id, typ := range types {
		if typ == 0 {
			if classic != "" {
				t.Fatalf("two classic members: %v", types)
			}
			classic = id
		}
	}
	held := map[int32]bool{}
	for p, id := range owner {
		if id == classic && classic != "" {
			held[p] = true
		}
	}
	if members > 2 && len(held) == 0 {
		t.Fatalf("no classic member holding partitions: types %v, owners %v\n%s", types, owner, why())
	}
	return held
}

// checkShares checks that the classic client consumed only its partitions
// (classicParts), the franz-go members only the others, and together every
// record of the parts partitions, n/parts each.
func checkShares(t *testing.T, classic []partOff, franz map[partOff]int, classicParts map[int32]bool, parts, n int) {
	t.Helper()
	seen := map[partOff]int{}
	for _, po := range classic {
		if !classicParts[po.p] {
			t.Errorf("the classic client consumed partition %d, which it does not hold", po.p)
		}
		seen[po]++
	}
	for po, c := range franz {
		if classicParts[po.p] {
			t.Errorf("franz-go consumed partition %d, which the classic client holds", po.p)
		}
		seen[po] += c
	}
	for p := int32(0); p < int32(parts); p++ {
		for o := int64(0); o < int64(n/parts); o++ {
			if seen[partOff{p, o}] == 0 {
				t.Fatalf("record %d/%d not consumed", p, o)
			}
		}
	}
	if len(seen) != n {
		t.Fatalf("%d distinct records consumed, want %d", len(seen), n)
	}
}

// waitShares waits until the classic client and the franz-go members
// consumed n distinct records between them.
func waitShares(t *testing.T, classic func() []partOff, franz *franz848, n int, why func() string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		got := franz.records()
		for _, po := range classic() {
			got[po]++
		}
		if len(got) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("consumed %d of %d records within 60s\n%s", len(got), n, why())
		}
		time.Sleep(50 * time.Millisecond)
	}
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
	createTopicE2E(t, kadm.NewClient(prod), topic, parts)

	franz := startFranz848(t, b.addr, group, topic, 2)
	migStable(t, b, prod, group, parts, 2, func() string { return "" })
	k := startKcatMember(t, kcat, b.addr, group, topic)
	why := func() string { return "kcat: " + k.stderr.String() }
	held := migStable(t, b, prod, group, parts, 3, why)
	t.Logf("kcat holds partitions %v of %d", held, parts)

	// Produce once the three hold their shares, so no rebalance happens
	// while records flow.
	produceSpread(t, prod, topic, parts, n)
	waitShares(t, k.records, franz, n, why)
	k.stop()
	checkShares(t, k.records(), franz.records(), held, parts, n)
}

// TestConsumerGroupMigrationKafkaJSJoins: kafkajs 2.2 (the classic protocol,
// no flexible versions) joins a consumer group of two franz-go members of
// the consumer protocol and consumes exactly its share, as kcat does.
func TestConsumerGroupMigrationKafkaJSJoins(t *testing.T) {
	t.Parallel()
	node, _ := needKafkaJS(t)
	b := startBroker(t, t.TempDir(), migSets()...)
	const topic, group, parts, n = "mig-kafkajs", "g-mig-kafkajs", 6, 3000
	// kafkajs reads no snappy (franz-go's default): gzip.
	prod := groupClient(t, b.addr, kgo.ProducerBatchCompression(kgo.GzipCompression()))
	createTopicE2E(t, kadm.NewClient(prod), topic, parts)

	franz := startFranz848(t, b.addr, group, topic, 2)
	migStable(t, b, prod, group, parts, 2, func() string { return "" })

	// A kafkajs consumer printing "partition offset" per message; SIGTERM
	// disconnects it (leaving the group).
	const script = `
const { Kafka, logLevel } = require('kafkajs');
const [brokers, group, topic] = process.argv.slice(1);
const kafka = new Kafka({ clientId: 'kafkajs-mig', brokers: [brokers], logLevel: logLevel.ERROR });
const consumer = kafka.consumer({ groupId: group, sessionTimeout: 10000, heartbeatInterval: 500, rebalanceTimeout: 20000 });
(async () => {
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({ eachMessage: async ({ partition, message }) => {
    process.stdout.write(partition + ' ' + message.offset + '\n');
  } });
})().catch((e) => { console.error(e); process.exit(1); });
process.on('SIGTERM', async () => { await consumer.disconnect(); process.exit(0); });
`
	cmd := exec.Command(node, "-e", script, b.addr, group, topic)
	cmd.Dir = kafkajsDir // where require finds kafkajs
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []partOff
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var po partOff
			if _, err := fmt.Sscanf(sc.Text(), "%d %d", &po.p, &po.o); err == nil {
				mu.Lock()
				got = append(got, po)
				mu.Unlock()
			}
		}
		_ = cmd.Wait()
	}()
	stop := func() {
		select {
		case <-done:
			return
		default:
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	t.Cleanup(stop)
	records := func() []partOff {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
	why := func() string { return "kafkajs: " + stderr.String() }

	held := migStable(t, b, prod, group, parts, 3, why)
	t.Logf("kafkajs holds partitions %v of %d", held, parts)
	produceSpread(t, prod, topic, parts, n)
	waitShares(t, records, franz, n, why)
	stop()
	checkShares(t, records(), franz.records(), held, parts, n)
}
