package e2e

// Share groups (KIP-932) across SIGKILLs in a 3-broker cluster: three
// franz-go kgo.ShareGroup members consume a 3-partition RF3 topic that a
// producer keeps writing to, accepting every record and flushing their
// acknowledgements after each poll. The share coordinator of one share
// partition (the leader of its __share_group_state partition) is
// SIGKILLed and restarted, then the leader of a partition of the topic.
// The share-partition state lives in __share_group_state (persister APIs
// between brokers), so:
//
//   - a record whose acceptance the broker confirmed (the acknowledgement
//     flushed and its partition answered without error) is never
//     delivered again, to any member;
//   - nothing is lost: every record the producer had acknowledged is
//     delivered, and at the end no record is left unacknowledged (a
//     sentinel written last to each partition is delivered with nothing
//     before it that was not delivered already);
//   - only records not yet confirmed at a kill may be delivered again.

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareLedger is what the members of the test saw, shared by them.
type shareLedger struct {
	mu sync.Mutex
	// deliveries counts each value's deliveries; confirmed holds the
	// values whose acceptance the broker confirmed.
	deliveries map[string]int
	confirmed  map[string]bool
	// violations are deliveries of confirmed values.
	violations []string
	nConfirmed atomic.Int64
}

// shareMember is one kgo.ShareGroup member of the test.
type shareMember struct {
	cl   *kgo.Client
	stop context.CancelFunc
	done chan struct{}
	// results are the acknowledgement results of the current flush.
	mu      sync.Mutex
	results kgo.ShareAckResults
}

// startShareMember starts a member of group over topic that accepts every
// record it polls, flushes the acknowledgements, and records in l which
// were confirmed.
func (c *testCluster) startShareMember(group, topic string, l *shareLedger) *shareMember {
	c.t.Helper()
	m := &shareMember{done: make(chan struct{})}
	cl, err := c.newClient(
		kgo.SeedBrokers(c.seeds()...),
		kgo.ClientID("e2e-share"),
		kgo.ShareGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.ShareMaxRecords(50),
		kgo.FetchMaxWait(300*time.Millisecond),
		kgo.ShareAckCallback(func(_ *kgo.Client, rs kgo.ShareAckResults) {
			m.mu.Lock()
			m.results = append(m.results, rs...)
			m.mu.Unlock()
		}),
	)
	if err != nil {
		c.t.Fatal(err)
	}
	m.cl = cl
	ctx, cancel := context.WithCancel(context.Background())
	m.stop = cancel
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			fs := cl.PollRecords(ctx, 50)
			var recs []*kgo.Record
			fs.EachRecord(func(r *kgo.Record) { recs = append(recs, r) })
			if len(recs) == 0 {
				continue
			}
			l.mu.Lock()
			for _, r := range recs {
				v := string(r.Value)
				l.deliveries[v]++
				if l.confirmed[v] {
					l.violations = append(l.violations, fmt.Sprintf("%s (%s-%d@%d) delivered again, delivery count %d, after its acceptance was confirmed", v, r.Topic, r.Partition, r.Offset, r.DeliveryCount()))
				}
			}
			l.mu.Unlock()
			m.mu.Lock()
			m.results = nil
			m.mu.Unlock()
			cl.MarkAcks(kgo.AckAccept)
			fctx, fcancel := context.WithTimeout(ctx, 20*time.Second)
			ferr := cl.FlushAcks(fctx)
			fcancel()
			if ferr != nil {
				continue // not confirmed: these may come again
			}
			m.mu.Lock()
			failed := map[int32]bool{}
			answered := map[int32]bool{}
			for _, r := range m.results {
				if r.Topic != topic {
					continue
				}
				answered[r.Partition] = true
				if r.Err != nil {
					failed[r.Partition] = true
				}
			}
			m.mu.Unlock()
			l.mu.Lock()
			for _, r := range recs {
				if answered[r.Partition] && !failed[r.Partition] && !l.confirmed[string(r.Value)] {
					l.confirmed[string(r.Value)] = true
					l.nConfirmed.Add(1)
				}
			}
			l.mu.Unlock()
		}
	}()
	return m
}

// close stops the member (what it holds is released as it leaves).
func (m *shareMember) close() {
	m.stop()
	<-m.done
	m.cl.Close()
}

// shareCoordinator returns the broker FindCoordinator (key type 2) names
// for group's share partition of topic id, partition p.
func (c *testCluster) shareCoordinator(group string, topicID [16]byte, p int32) int32 {
	c.t.Helper()
	key := group + ":" + base64.RawURLEncoding.EncodeToString(topicID[:]) + ":" + fmt.Sprint(p)
	var node int32 = -1
	var why error
	c.retryFor(60*time.Second, "the share coordinator of "+key, func() bool {
		_, cl := c.admin()
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType = 2
		req.CoordinatorKeys = []string{key}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			why = err
			return false
		}
		if len(resp.Coordinators) != 1 {
			why = fmt.Errorf("%d coordinators answered", len(resp.Coordinators))
			return false
		}
		co := resp.Coordinators[0]
		node, why = co.NodeID, kerr.ErrorForCode(co.ErrorCode)
		return why == nil && c.brokers[node] != nil
	}, func() string { return fmt.Sprint(why) })
	return node
}

// readShareState sends ReadShareGroupState (leader epoch -1) for group's
// share partition of topic id, partition p to broker id.
func (c *testCluster) readShareState(id int32, group string, topicID [16]byte, p int32) kmsg.ReadShareGroupStateResponseTopicPartition {
	c.t.Helper()
	_, cl := c.admin()
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrReadShareGroupStateRequest()
	req.GroupID = group
	rt := kmsg.NewReadShareGroupStateRequestTopic()
	rt.TopicID = topicID
	rp := kmsg.NewReadShareGroupStateRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch = p, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := cl.Broker(int(id)).Request(ctx, req)
	if err != nil {
		c.t.Fatalf("ReadShareGroupState to broker %d: %v", id, err)
	}
	r := resp.(*kmsg.ReadShareGroupStateResponse)
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		c.t.Fatalf("ReadShareGroupState from broker %d: %d topics", id, len(r.Topics))
	}
	return r.Topics[0].Partitions[0]
}

// setGroupConfig sets a share group config (IncrementalAlterConfigs on a
// GROUP resource).
func (c *testCluster) setGroupConfig(group, name, value string) {
	c.t.Helper()
	var why error
	c.retryFor(30*time.Second, "group config "+name, func() bool {
		_, cl := c.admin()
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
		cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Value = name, kmsg.StringPtr(value)
		res.Configs = append(res.Configs, cfg)
		req.Resources = append(req.Resources, res)
		resp, err := req.RequestWith(ctx, cl)
		if err == nil && len(resp.Resources) == 1 {
			err = kerr.ErrorForCode(resp.Resources[0].ErrorCode)
		}
		why = err
		return err == nil
	}, func() string { return fmt.Sprint(why) })
}

// TestClusterShareGroupKills: SIGKILL the share coordinator, then a
// partition leader, while kgo.ShareGroup members consume and accept; no
// confirmed acceptance is delivered again and nothing is lost.
func TestClusterShareGroupKills(t *testing.T) {
	t.Parallel()
	const (
		topic, group = "sharekill", "gsharekill"
		parts        = 3
		maxRecords   = 20000 // bounds the producer
	)
	c := startCluster(t, 3,
		"group.share.enable=true",
		"offsets.topic.num.partitions=3", "offsets.topic.replication.factor=3",
		"share.coordinator.state.topic.num.partitions=3",
		"group.share.min.heartbeat.interval.ms=500", "group.share.heartbeat.interval.ms=500",
		"group.share.min.record.lock.duration.ms=1000", "group.share.record.lock.duration.ms=10000")
	two := "2"
	c.createTopic(topic, parts, 3, map[string]*string{"min.insync.replicas": &two})
	var topicID [16]byte
	{
		adm, cl := c.admin()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		m, err := adm.Metadata(ctx, topic)
		cancel()
		cl.Close()
		if err != nil {
			t.Fatal(err)
		}
		topicID = m.Topics[topic].ID
	}
	c.setGroupConfig(group, "share.auto.offset.reset", "earliest")

	// The producer writes acks=all, round robin, until stopped or
	// maxRecords; acked holds every value a broker acknowledged.
	prod, err := c.newClient(kgo.SeedBrokers(c.seeds()...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.RecordRetries(1<<20), kgo.RetryTimeout(60*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	var acked sync.Map
	var nAcked atomic.Int64
	prodCtx, stopProd := context.WithCancel(context.Background())
	defer stopProd()
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		for i := 0; i < maxRecords && prodCtx.Err() == nil; i++ {
			v := fmt.Sprintf("r-%06d", i)
			prod.Produce(prodCtx, &kgo.Record{Value: []byte(v)}, func(_ *kgo.Record, err error) {
				if err == nil {
					acked.Store(v, true)
					nAcked.Add(1)
				}
			})
			if i%parts == parts-1 {
				time.Sleep(15 * time.Millisecond)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		_ = prod.Flush(ctx)
	}()

	l := &shareLedger{deliveries: map[string]int{}, confirmed: map[string]bool{}}
	var members []*shareMember
	defer func() {
		for _, m := range members {
			m.close()
		}
	}()
	for range 3 {
		members = append(members, c.startShareMember(group, topic, l))
	}
	progress := func(what string, n int64) {
		t.Helper()
		target := l.nConfirmed.Load() + n
		c.retryFor(120*time.Second, what, func() bool { return l.nConfirmed.Load() >= target },
			func() string { return fmt.Sprintf("%d confirmed, want %d", l.nConfirmed.Load(), target) })
	}
	fullISR := func() {
		t.Helper()
		for p := int32(0); p < parts; p++ {
			c.waitFor(90*time.Second, fmt.Sprintf("%s-%d with a full ISR", topic, p), func(*kadm.Client) bool {
				pd, ok := c.partition(topic, p)
				return ok && pd.Leader >= 0 && len(pd.ISR) == 3
			})
		}
	}
	progress("acceptances before the first kill", 300)

	// 1. The share coordinator of partition 0's share partition.
	coord := c.shareCoordinator(group, topicID, 0)
	// The persister API as another broker sends it: the coordinator has
	// the share partition's state, the others are not its coordinator.
	for id := range c.brokers {
		r := c.readShareState(id, group, topicID, 0)
		switch {
		case id == coord && (r.ErrorCode != 0 || r.StartOffset < 0):
			t.Fatalf("ReadShareGroupState from the coordinator %d: %s, start offset %d", id, kerr.ErrorForCode(r.ErrorCode), r.StartOffset)
		case id != coord && r.ErrorCode != kerr.NotCoordinator.Code:
			t.Fatalf("ReadShareGroupState from broker %d, not the coordinator: %v", id, kerr.ErrorForCode(r.ErrorCode))
		}
	}
	c.brokers[coord].kill()
	t.Logf("SIGKILLed broker %d, the share coordinator of %s-0 (%d confirmed, %d produced)", coord, topic, l.nConfirmed.Load(), nAcked.Load())
	progress("acceptances after the coordinator kill", 300)
	c.brokers[coord].restart()
	c.waitBrokers(3, 60*time.Second)
	fullISR()

	// 2. The leader of a partition of the topic (one other than the
	// broker just restarted, when there is one).
	leader := int32(-1)
	for p := int32(0); p < parts; p++ {
		if pd, ok := c.partition(topic, p); ok && pd.Leader >= 0 && (leader < 0 || pd.Leader != coord) {
			leader = pd.Leader
		}
	}
	if leader < 0 {
		t.Fatal("no partition leader")
	}
	progress("acceptances before the leader kill", 100)
	c.brokers[leader].kill()
	t.Logf("SIGKILLed broker %d, a leader of %s (%d confirmed, %d produced)", leader, topic, l.nConfirmed.Load(), nAcked.Load())
	progress("acceptances after the leader kill", 300)
	c.brokers[leader].restart()
	c.waitBrokers(3, 60*time.Second)

	stopProd()
	<-produced

	// Nothing lost: every acknowledged record is delivered.
	missing := func() []string {
		var out []string
		l.mu.Lock()
		defer l.mu.Unlock()
		acked.Range(func(k, _ any) bool {
			if l.deliveries[k.(string)] == 0 {
				out = append(out, k.(string))
			}
			return true
		})
		slices.Sort(out)
		return out
	}
	c.retryFor(180*time.Second, "every acknowledged record delivered", func() bool { return len(missing()) == 0 }, func() string {
		m := missing()
		return fmt.Sprintf("%d of %d acknowledged records not delivered, first %v", len(m), nAcked.Load(), m[:min(len(m), 5)])
	})

	// Nothing left unacknowledged: a sentinel on each partition, written
	// last, is delivered; so is anything before it still available.
	sent, err := c.newClient(kgo.SeedBrokers(c.seeds()...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < parts; p++ {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := sent.ProduceSync(ctx, &kgo.Record{Partition: p, Value: []byte(fmt.Sprintf("sentinel-%d", p))}).FirstErr()
		cancel()
		if err != nil {
			t.Fatalf("sentinel %d: %v", p, err)
		}
	}
	sent.Close()
	l.mu.Lock()
	before := map[string]int{}
	for v, n := range l.deliveries {
		before[v] = n
	}
	l.mu.Unlock()
	c.retryFor(120*time.Second, "the sentinels delivered", func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		for p := 0; p < parts; p++ {
			if l.deliveries[fmt.Sprintf("sentinel-%d", p)] == 0 {
				return false
			}
		}
		return true
	}, func() string { return "not all sentinels delivered" })
	for _, m := range members {
		m.close()
	}
	members = nil

	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.violations) > 0 {
		t.Fatalf("%d confirmed acceptances delivered again, first: %v", len(l.violations), l.violations[:min(len(l.violations), 5)])
	}
	// What was delivered again after the sentinels went out had not been
	// acknowledged before: those are records whose acceptance did not
	// land (at a kill); none was confirmed (checked above).
	var again, redelivered []string
	for v, n := range l.deliveries {
		if strings.HasPrefix(v, "sentinel-") {
			continue
		}
		if n > 1 {
			redelivered = append(redelivered, v)
		}
		if n > before[v] {
			again = append(again, v)
		}
	}
	slices.Sort(again)
	t.Logf("%d records acknowledged by the producer, %d delivered, %d confirmed; %d delivered more than once (acceptance not confirmed at a kill), %d after the sentinels",
		nAcked.Load(), len(l.deliveries)-parts, len(l.confirmed), len(redelivered), len(again))
	for _, v := range again {
		if l.confirmed[v] {
			t.Errorf("%s delivered after the sentinels although its acceptance was confirmed", v)
		}
	}
}
