package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/record"
)

// produceN writes n records "prefix-i" with acks=all and fails the test on
// any error.
func (c *testCluster) produceN(topic, prefix string, n int) {
	c.t.Helper()
	cl, err := c.newClient(kgo.SeedBrokers(c.seeds()...), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		c.t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Value: []byte(fmt.Sprintf("%s-%06d", prefix, i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		c.t.Fatalf("produce %s: %v\n%s", prefix, err, c.logs())
	}
}

// consumeAll reads topic's partition 0 from the start to its high
// watermark.
func (c *testCluster) consumeAll(topic string) []string {
	c.t.Helper()
	cl, err := c.newClient(kgo.SeedBrokers(c.seeds()...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		c.t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out []string
	hw := c.highWatermark(topic)
	for int64(len(out)) < hw && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
	}
	if int64(len(out)) != hw {
		c.t.Fatalf("consumed %d of %d records of %s", len(out), hw, topic)
	}
	return out
}

func (c *testCluster) highWatermark(topic string) int64 {
	c.t.Helper()
	adm, cl := c.admin()
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err == nil {
			if o, ok := ends.Lookup(topic, 0); ok && o.Err == nil {
				return o.Offset
			}
		}
		if ctx.Err() != nil {
			c.t.Fatalf("list end offsets of %s: %v", topic, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitISR waits until topic-0's ISR, as the running brokers report it, has
// exactly the brokers of want (any order), and returns how long it took.
func (c *testCluster) waitISR(topic string, want []int32, within time.Duration) time.Duration {
	c.t.Helper()
	start := time.Now()
	w := slices.Clone(want)
	slices.Sort(w)
	var last []int32
	deadline := time.Now().Add(within)
	for {
		if pd, ok := c.partition(topic, 0); ok {
			last = slices.Clone(pd.ISR)
			slices.Sort(last)
			if slices.Equal(last, w) {
				return time.Since(start)
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("ISR of %s-0 is %v after %v, want %v\n%s", topic, last, within, w, c.logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkPrefixes checks that got holds, in order and once each, the n
// records of every prefix, and nothing else.
func checkPrefixes(t *testing.T, got []string, counts map[string]int) {
	t.Helper()
	next := map[string]int{}
	for _, v := range got {
		p, num, _ := strings.Cut(v, "-")
		i, _ := strconv.Atoi(num)
		if _, ok := counts[p]; !ok {
			t.Fatalf("unexpected record %q", v)
		}
		if i != next[p] {
			t.Fatalf("record %q out of order or duplicated: expected %s-%06d", v, p, next[p])
		}
		next[p]++
	}
	for p, n := range counts {
		if next[p] != n {
			t.Fatalf("%d records of %s, want %d", next[p], p, n)
		}
	}
}

// TestClusterFollowerFailures: a SIGKILLed follower leaves the ISR and
// rejoins it after a restart, having caught up; with two of three brokers
// down an acks=all produce gets NOT_ENOUGH_REPLICAS; nothing acknowledged
// is lost when they return.
func TestClusterFollowerFailures(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3)
	two := "2"
	c.createTopic("ff", 1, 3, map[string]*string{"min.insync.replicas": &two})
	leader, followers := c.followersOf("ff")
	c.produceN("ff", "a", 2000)

	f := followers[0]
	c.brokers[f].kill()
	took := c.waitISR("ff", []int32{leader, followers[1]}, 30*time.Second)
	t.Logf("follower %d SIGKILLed; out of the ISR after %v", f, took)
	c.produceN("ff", "b", 2000) // ISR 2 = min.insync.replicas: still writable
	c.brokers[f].restart()
	took = c.waitISR("ff", []int32{1, 2, 3}, 30*time.Second)
	t.Logf("follower %d restarted; back in the ISR after %v", f, took)

	c.brokers[followers[0]].kill()
	c.brokers[followers[1]].kill()
	c.waitISR("ff", []int32{leader}, 30*time.Second)
	code := c.rawProduce(leader, "ff", -1)
	if err := kerr.ErrorForCode(code); !errors.Is(err, kerr.NotEnoughReplicas) {
		t.Fatalf("acks=all produce with one in-sync replica: %v, want NOT_ENOUGH_REPLICAS", err)
	}
	err := kerr.ErrorForCode(code)
	t.Logf("two of three down: %v", err)

	c.brokers[followers[0]].restart()
	c.brokers[followers[1]].restart()
	c.waitISR("ff", []int32{1, 2, 3}, 30*time.Second)
	// Read through each follower too: they must hold the same records.
	checkPrefixes(t, c.consumeAll("ff"), map[string]int{"a": 2000, "b": 2000})
}

// TestClusterControllerAndShutdown: the controller SIGKILLed, another broker
// takes over and handles later failures; a SIGTERMed leader moves its
// leadership away before it stops (controlled shutdown).
func TestClusterControllerAndShutdown(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3)
	c.createTopic("cs", 1, 3, nil)
	ctrl := c.controllerID()
	c.produceN("cs", "a", 1000)

	killedAt := time.Now()
	c.brokers[ctrl].kill()
	var newCtrl int32 = -1
	c.waitFor(30*time.Second, "a new controller", func(*kadm.Client) bool {
		for _, v := range c.views() {
			if v.err != nil || v.controller < 0 || v.controller == ctrl || v.brokers != 2 {
				return false
			}
			newCtrl = v.controller
		}
		return true
	})
	t.Logf("controller %d SIGKILLed; broker %d controller after %v", ctrl, newCtrl, time.Since(killedAt))
	c.brokers[ctrl].restart()
	c.waitBrokers(3, 30*time.Second)
	c.waitISR("cs", []int32{1, 2, 3}, 30*time.Second)

	// A later failure is handled by the new controller: SIGTERM the
	// leader; leadership must have moved before it exits.
	leader := c.mustPartition("cs", 0).Leader
	start := time.Now()
	if err := c.brokers[leader].stop(); err != nil {
		t.Fatalf("SIGTERM broker %d: %v", leader, err)
	}
	t.Logf("broker %d (leader) stopped by SIGTERM in %v", leader, time.Since(start))
	if !strings.Contains(c.brokers[leader].logText(), "controlled shutdown done") {
		t.Fatalf("broker %d did not complete a controlled shutdown:\n%s", leader, c.brokers[leader].logText())
	}
	// The leader moved before the broker exited, but the other brokers
	// learn it from the controller's UpdateMetadata, asynchronously.
	var pd kadm.PartitionDetail
	c.waitFor(30*time.Second, fmt.Sprintf("cs-0 led by another broker than %d, which is out of the ISR", leader), func(*kadm.Client) bool {
		var ok bool
		pd, ok = c.partition("cs", 0)
		return ok && pd.Leader != leader && pd.Leader >= 0 && !slices.Contains(pd.ISR, leader)
	})
	t.Logf("new leader %d, ISR %v", pd.Leader, pd.ISR)
	c.produceN("cs", "b", 1000)
	c.brokers[leader].restart()
	c.waitISR("cs", []int32{1, 2, 3}, 30*time.Second)
	checkPrefixes(t, c.consumeAll("cs"), map[string]int{"a": 1000, "b": 1000})
}

// rawProduce sends one Produce (one record) with acks to broker id for
// topic-0 and returns the partition's error code.
func (c *testCluster) rawProduce(id int32, topic string, acks int16) int16 {
	c.t.Helper()
	cl, err := c.newClient(kgo.SeedBrokers(c.brokers[id].addr))
	if err != nil {
		c.t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = acks, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = record.AppendBatch(nil, record.BatchOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
		[]record.BuildRecord{{Value: []byte("x-000000"), Timestamp: time.Now().UnixMilli()}})
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := cl.Broker(int(id)).RetriableRequest(ctx, req)
	if err != nil {
		c.t.Fatalf("produce to broker %d: %v", id, err)
	}
	return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
}
