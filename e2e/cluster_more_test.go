package e2e

// More cluster failures: a follower paused with SIGSTOP (ISR shrink by
// replica.lag.time.max.ms and expand after SIGCONT) and a broker whose
// ZooKeeper session expires while it is paused (it rejoins without a
// restart). Times are logged, never asserted beyond generous deadlines.

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// pausedCmds holds the processes of paused brokers. While paused, a
// broker's cmd is nil, so seeds() and views() leave it out: a request to a
// stopped process would hang until its timeout.
var (
	pausedMu   sync.Mutex
	pausedCmds = map[*brokerProc]*exec.Cmd{}
)

// pause sends SIGSTOP to the broker (only the process this test started).
// If the test ends while it is paused, its cleanup SIGKILLs it.
func (b *brokerProc) pause() {
	b.t.Helper()
	if err := b.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		b.t.Fatalf("SIGSTOP pid %d: %v", b.cmd.Process.Pid, err)
	}
	pausedMu.Lock()
	pausedCmds[b] = b.cmd
	pausedMu.Unlock()
	b.cmd = nil
	b.t.Cleanup(func() {
		pausedMu.Lock()
		cmd, ok := pausedCmds[b]
		delete(pausedCmds, b)
		pausedMu.Unlock()
		if ok {
			b.cmd = cmd
			b.kill()
		}
	})
}

// resume sends SIGCONT to a paused broker.
func (b *brokerProc) resume() {
	b.t.Helper()
	pausedMu.Lock()
	cmd := pausedCmds[b]
	delete(pausedCmds, b)
	pausedMu.Unlock()
	b.cmd = cmd
	if err := b.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		b.t.Fatalf("SIGCONT pid %d: %v", b.cmd.Process.Pid, err)
	}
}

// running fails the test if the broker process has exited.
func (b *brokerProc) running(what string) {
	b.t.Helper()
	select {
	case err := <-b.done:
		b.done <- err
		b.t.Fatalf("broker pid %d exited %s: %v\n%s", b.cmd.Process.Pid, what, err, b.logText())
	default:
	}
}

// produceNoPause is produceN for a cluster with a paused broker: the
// producer is not idempotent, because franz-go sends InitProducerID to any
// broker in the metadata, the paused one included, and waits out its
// request timeout there.
func (c *testCluster) produceNoPause(topic, prefix string, n int) {
	c.t.Helper()
	cl, err := c.newClient(kgo.SeedBrokers(c.seeds()...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(1))
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

// followersOf returns topic-0's leader and its other replicas.
func (c *testCluster) followersOf(topic string) (int32, []int32) {
	c.t.Helper()
	pd := c.mustPartition(topic, 0)
	var fs []int32
	for _, r := range pd.Replicas {
		if r != pd.Leader {
			fs = append(fs, r)
		}
	}
	if len(fs) < 2 {
		c.t.Fatalf("%s-0: leader %d, replicas %v; want two followers", topic, pd.Leader, pd.Replicas)
	}
	return pd.Leader, fs
}

// TestClusterFollowerPaused: a follower paused with SIGSTOP stops fetching
// and the leader drops it from the ISR after replica.lag.time.max.ms; after
// SIGCONT it catches up and returns to the ISR. The ZooKeeper session
// timeout is well above the pause, so this is the lag rule, not a broker
// failure.
func TestClusterFollowerPaused(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3, "replica.lag.time.max.ms=3000", "zookeeper.session.timeout.ms=40000")
	two := "2"
	c.createTopic("fp", 1, 3, map[string]*string{"min.insync.replicas": &two})
	leader, followers := c.followersOf("fp")
	c.produceN("fp", "a", 1000)

	// Pause a follower that is not the controller: brokers learn ISR
	// changes from the controller's UpdateMetadata (as in Kafka), so with
	// the controller paused Metadata would keep the old ISR.
	ctrl := c.controllerID()
	f := followers[0]
	if f == ctrl {
		f = followers[1]
	}
	other := followers[0] + followers[1] - f
	pid := c.brokers[f].cmd.Process.Pid
	c.brokers[f].pause()
	pausedAt := time.Now()
	took := c.waitISR("fp", []int32{leader, other}, 25*time.Second)
	t.Logf("follower %d (pid %d) SIGSTOPped; out of the ISR after %v (replica.lag.time.max.ms 3000; leader %d, controller %d)", f, pid, took, leader, ctrl)
	// Still writable with two in sync; the paused follower misses these.
	start := time.Now()
	c.produceNoPause("fp", "b", 1000)
	t.Logf("1000 records produced with acks=all in %v while %d is paused", time.Since(start), f)
	// okViews: a broker that failed to answer in time is asked again,
	// not read as listing 0 brokers.
	for _, v := range c.okViews() {
		if v.id != f && v.brokers != 3 {
			t.Fatalf("broker %d lists %d brokers while %d is only paused: its session should not have expired", v.id, v.brokers, f)
		}
	}

	c.brokers[f].resume()
	t.Logf("follower %d SIGCONTed after a %v pause", f, time.Since(pausedAt))
	took = c.waitISR("fp", []int32{1, 2, 3}, 30*time.Second)
	t.Logf("follower %d back in the ISR %v after SIGCONT", f, took)
	c.brokers[f].running("after SIGCONT")
	if got := c.brokers[f].cmd.Process.Pid; got != pid {
		t.Fatalf("pid changed: %d -> %d", pid, got)
	}
	c.produceN("fp", "c", 1000)
	checkPrefixes(t, c.consumeAll("fp"), map[string]int{"a": 1000, "b": 1000, "c": 1000})
}

// TestClusterSessionExpiry: a broker paused (SIGSTOP) longer than
// zookeeper.session.timeout.ms loses its ZooKeeper session: ZooKeeper
// deletes its registration and the controller takes it out of the cluster
// and the ISRs. After SIGCONT the same process gets a new session,
// registers again and rejoins: every broker lists it again and it
// re-enters the ISR, without a restart.
func TestClusterSessionExpiry(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3, "replica.lag.time.max.ms=3000")
	two := "2"
	c.createTopic("se", 1, 3, map[string]*string{"min.insync.replicas": &two})
	leader, followers := c.followersOf("se")
	ctrl := c.controllerID()
	// Pause a broker that is neither the controller nor the leader, when
	// there is one, so the test watches the session path alone; the
	// failover paths have their own tests.
	victim := followers[0]
	for _, f := range followers {
		if f != ctrl {
			victim = f
		}
	}
	t.Logf("leader %d, controller %d; pausing broker %d", leader, ctrl, victim)
	c.produceN("se", "a", 1000)

	b := c.brokers[victim]
	pid := b.cmd.Process.Pid
	b.pause()
	pausedAt := time.Now()
	// Wait until the other brokers' metadata drops it: ZooKeeper expired
	// the session and the controller saw the broker leave.
	c.waitBrokers(2, 30*time.Second)
	t.Logf("broker %d (pid %d) SIGSTOPped; gone from the others' metadata after %v (session timeout 3000 ms)", victim, pid, time.Since(pausedAt))
	var rest []int32
	for _, id := range []int32{1, 2, 3} {
		if id != victim {
			rest = append(rest, id)
		}
	}
	c.waitISR("se", rest, 30*time.Second)
	c.produceN("se", "b", 1000)

	b.resume()
	resumedAt := time.Now()
	c.waitBrokers(3, 60*time.Second)
	t.Logf("broker %d SIGCONTed after a %v pause; listed by every broker again after %v", victim, resumedAt.Sub(pausedAt), time.Since(resumedAt))
	took := c.waitISR("se", []int32{1, 2, 3}, 60*time.Second)
	t.Logf("broker %d back in the ISR %v later", victim, took)
	b.running("after SIGCONT")
	if got := b.cmd.Process.Pid; got != pid {
		t.Fatalf("pid changed: %d -> %d", pid, got)
	}
	logs := b.logText()
	for _, want := range []string{"zookeeper session expired", "new zookeeper session; re-registered"} {
		if !strings.Contains(logs, want) {
			t.Fatalf("broker %d log lacks %q:\n%s", victim, want, logs)
		}
	}

	// It serves again: a produce and a consume through it alone.
	c.produceN("se", "c", 1000)
	got := c.consumeVia(victim, "se")
	checkPrefixes(t, got, map[string]int{"a": 1000, "b": 1000, "c": 1000})
	t.Logf("consumed %d records through broker %d alone", len(got), victim)
}

// consumeVia reads topic-0 from the start to its high watermark with only
// broker id as the seed.
func (c *testCluster) consumeVia(id int32, topic string) []string {
	c.t.Helper()
	hw := c.highWatermark(topic)
	cl, err := c.newClient(kgo.SeedBrokers(c.brokers[id].addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		c.t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out []string
	for int64(len(out)) < hw && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
	}
	if int64(len(out)) != hw {
		c.t.Fatalf("consumed %d of %d records of %s via broker %d\n%s", len(out), hw, topic, id, c.logs())
	}
	return out
}

// TestClusterTopicConfigs: topic configs live in ZooKeeper. retention.ms
// altered (IncrementalAlterConfigs) through broker 1 is described by broker
// 2 and applied by every broker holding a replica; a legacy AlterConfigs
// through broker 3 replaces the overrides, as every broker then describes.
func TestClusterTopicConfigs(t *testing.T) {
	c := startCluster(t, 3)
	c.createTopic("cfg", 1, 3, nil)

	inc := kmsg.NewPtrIncrementalAlterConfigsRequest()
	ir := kmsg.NewIncrementalAlterConfigsRequestResource()
	ir.ResourceType, ir.ResourceName = kmsg.ConfigResourceTypeTopic, "cfg"
	for name, v := range map[string]string{"retention.ms": "123456", "min.insync.replicas": "2"} {
		rc := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		rc.Name, rc.Value, rc.Op = name, kmsg.StringPtr(v), kmsg.IncrementalAlterConfigOpSet
		ir.Configs = append(ir.Configs, rc)
	}
	inc.Resources = append(inc.Resources, ir)
	resp := c.requestTo(1, inc).(*kmsg.IncrementalAlterConfigsResponse)
	if err := kerr.ErrorForCode(resp.Resources[0].ErrorCode); err != nil {
		t.Fatalf("incremental alter configs via broker 1: %v %v", err, resp.Resources[0].ErrorMessage)
	}
	for _, via := range []int32{2, 3, 1} {
		got := c.describeTopicConfigs(via, "cfg")
		if got["retention.ms"] != "123456" || got["min.insync.replicas"] != "2" {
			t.Fatalf("broker %d describes retention.ms=%q min.insync.replicas=%q, want 123456 and 2", via, got["retention.ms"], got["min.insync.replicas"])
		}
	}
	// Every broker applies the change to its replica (logged on apply).
	deadline := time.Now().Add(20 * time.Second)
	for id := int32(1); id <= 3; id++ {
		for !strings.Contains(c.brokers[id].logText(), `msg="replica: applied topic configs" topic=cfg`) {
			if time.Now().After(deadline) {
				t.Fatalf("broker %d did not apply the config change\n%s", id, c.logs())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	alt := kmsg.NewPtrAlterConfigsRequest()
	ar := kmsg.NewAlterConfigsRequestResource()
	ar.ResourceType, ar.ResourceName = kmsg.ConfigResourceTypeTopic, "cfg"
	ac := kmsg.NewAlterConfigsRequestResourceConfig()
	ac.Name, ac.Value = "segment.bytes", kmsg.StringPtr("1048576")
	ar.Configs = append(ar.Configs, ac)
	alt.Resources = append(alt.Resources, ar)
	aresp := c.requestTo(3, alt).(*kmsg.AlterConfigsResponse)
	if err := kerr.ErrorForCode(aresp.Resources[0].ErrorCode); err != nil {
		t.Fatalf("alter configs via broker 3: %v %v", err, aresp.Resources[0].ErrorMessage)
	}
	for _, via := range []int32{1, 2, 3} {
		got := c.describeTopicConfigs(via, "cfg")
		if got["segment.bytes"] != "1048576" || got["retention.ms"] == "123456" {
			t.Fatalf("broker %d after AlterConfigs: segment.bytes=%q retention.ms=%q, want 1048576 and the default", via, got["segment.bytes"], got["retention.ms"])
		}
	}

	// An unknown topic is UNKNOWN_TOPIC_OR_PARTITION on any broker.
	req := kmsg.NewPtrDescribeConfigsRequest()
	dr := kmsg.NewDescribeConfigsRequestResource()
	dr.ResourceType, dr.ResourceName = kmsg.ConfigResourceTypeTopic, "nope"
	req.Resources = append(req.Resources, dr)
	dresp := c.requestTo(2, req).(*kmsg.DescribeConfigsResponse)
	if err := kerr.ErrorForCode(dresp.Resources[0].ErrorCode); !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("describe an unknown topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
	}
}

// requestTo sends req to broker id and returns its response.
func (c *testCluster) requestTo(id int32, req kmsg.Request) kmsg.Response {
	c.t.Helper()
	cl, err := c.newClient(kgo.SeedBrokers(c.brokers[id].addr))
	if err != nil {
		c.t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := cl.Broker(int(id)).RetriableRequest(ctx, req)
	if err != nil {
		c.t.Fatalf("%T to broker %d: %v", req, id, err)
	}
	return resp
}

// describeTopicConfigs asks broker id for topic's configs.
func (c *testCluster) describeTopicConfigs(id int32, topic string) map[string]string {
	c.t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	dr := kmsg.NewDescribeConfigsRequestResource()
	dr.ResourceType, dr.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	req.Resources = append(req.Resources, dr)
	resp := c.requestTo(id, req).(*kmsg.DescribeConfigsResponse)
	if err := kerr.ErrorForCode(resp.Resources[0].ErrorCode); err != nil {
		c.t.Fatalf("describe configs of %s via broker %d: %v", topic, id, err)
	}
	out := map[string]string{}
	for _, cf := range resp.Resources[0].Configs {
		if cf.Value != nil {
			out[cf.Name] = *cf.Value
		}
	}
	return out
}

// TestClusterPreferredLeaderReturns: a SIGKILLed leader restarts, catches
// up, re-enters the ISR, and the controller's periodic check (1 s here)
// gives it back the leadership of the partition it prefers; every record
// written while it was away is still there.
func TestClusterPreferredLeaderReturns(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3, "leader.imbalance.check.interval.seconds=1")
	c.createTopic("pl", 1, 3, nil)
	pd := c.mustPartition("pl", 0)
	preferred := pd.Replicas[0]
	if pd.Leader != preferred {
		t.Fatalf("new partition led by %d, replicas %v: the first replica should lead", pd.Leader, pd.Replicas)
	}
	c.produceN("pl", "a", 1000)
	c.brokers[preferred].kill()
	c.waitFor(30*time.Second, "a new leader", func(adm *kadm.Client) bool {
		pd, ok := c.partition("pl", 0)
		return ok && pd.Leader != preferred && c.brokers[pd.Leader] != nil
	})
	c.produceN("pl", "b", 1000) // written while the preferred leader is down
	c.brokers[preferred].restart()
	start := time.Now()
	c.waitFor(60*time.Second, "the preferred leader back, with all three in sync", func(adm *kadm.Client) bool {
		pd, ok := c.partition("pl", 0)
		return ok && pd.Leader == preferred && len(pd.ISR) == 3
	})
	t.Logf("broker %d restarted; leader of pl-0 again after %v", preferred, time.Since(start))
	c.produceN("pl", "c", 1000)
	checkPrefixes(t, c.consumeAll("pl"), map[string]int{"a": 1000, "b": 1000, "c": 1000})
}

// TestClusterElectLeaders: with automatic rebalancing off, a restarted
// preferred leader stays a follower until kadm's ElectLeaders (what
// kafka-leader-election.sh sends) moves leadership back; a second election
// is not needed.
func TestClusterElectLeaders(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3, "auto.leader.rebalance.enable=false")
	c.createTopic("el", 1, 3, nil)
	preferred := c.mustPartition("el", 0).Replicas[0]
	c.produceN("el", "a", 500)
	c.brokers[preferred].kill()
	c.waitFor(30*time.Second, "a new leader", func(adm *kadm.Client) bool {
		pd, ok := c.partition("el", 0)
		return ok && pd.Leader != preferred && c.brokers[pd.Leader] != nil
	})
	c.brokers[preferred].restart()
	c.waitFor(60*time.Second, "all three in sync", func(adm *kadm.Client) bool {
		pd, ok := c.partition("el", 0)
		return ok && len(pd.ISR) == 3
	})
	if pd := c.mustPartition("el", 0); pd.Leader == preferred {
		t.Fatalf("broker %d leads again without an election (auto rebalance is off)", preferred)
	}
	elect := func() error {
		adm, cl := c.admin()
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		rs, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"el": {0: {}}})
		if err != nil {
			t.Fatalf("ElectLeaders: %v", err)
		}
		r := rs["el"][0]
		t.Logf("ElectLeaders el-0: %v %s", r.Err, r.ErrMessage)
		return r.Err
	}
	if err := elect(); err != nil {
		t.Fatalf("preferred election: %v", err)
	}
	c.waitFor(30*time.Second, "the preferred replica leading", func(adm *kadm.Client) bool {
		pd, ok := c.partition("el", 0)
		return ok && pd.Leader == preferred
	})
	if err := elect(); !errors.Is(err, kerr.ElectionNotNeeded) {
		t.Fatalf("second election: %v, want ELECTION_NOT_NEEDED", err)
	}
	c.produceN("el", "b", 500)
	checkPrefixes(t, c.consumeAll("el"), map[string]int{"a": 500, "b": 500})
}

// TestClusterManualAssignment: CreateTopics and CreatePartitions with a
// replica assignment (kafka-topics.sh --replica-assignment) place the
// replicas as asked, the first of each leads, and the partitions take
// acks=all writes; an assignment naming an unknown broker is refused with
// INVALID_REPLICA_ASSIGNMENT.
func TestClusterManualAssignment(t *testing.T) {
	c := startCluster(t, 3)
	_, cl := c.admin()
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	create := func(topic string, asg [][]int32) error {
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
		for p, reps := range asg {
			a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			a.Partition, a.Replicas = int32(p), reps
			rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("CreateTopics: %v", err)
		}
		return kerr.ErrorForCode(resp.Topics[0].ErrorCode)
	}
	if err := create("bad", [][]int32{{1, 7}}); !errors.Is(err, kerr.InvalidReplicaAssignment) {
		t.Fatalf("unknown broker 7: %v, want INVALID_REPLICA_ASSIGNMENT", err)
	}
	want := [][]int32{{3, 2}, {3, 1}, {2, 1}}
	if err := create("ma", want); err != nil {
		t.Fatal(err)
	}
	check := func(want [][]int32) {
		c.waitFor(30*time.Second, fmt.Sprintf("assignment %v with the first replicas leading", want), func(adm *kadm.Client) bool {
			m, err := adm.Metadata(ctx, "ma")
			if err != nil || len(m.Topics["ma"].Partitions) != len(want) {
				return false
			}
			for p, reps := range want {
				pd := m.Topics["ma"].Partitions[int32(p)]
				if !slices.Equal(pd.Replicas, reps) || pd.Leader != reps[0] {
					return false
				}
			}
			return true
		})
	}
	check(want)
	req := kmsg.NewPtrCreatePartitionsRequest()
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = "ma", 4
	a := kmsg.NewCreatePartitionsRequestTopicAssignment()
	a.Replicas = []int32{1, 3}
	rt.Assignment = append(rt.Assignment, a)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("CreatePartitions: %v %v", err, kerr.ErrorForCode(resp.Topics[0].ErrorCode))
	}
	check(append(want, []int32{1, 3}))
	for p := int32(0); p < 4; p++ {
		r := &kgo.Record{Topic: "ma", Partition: p, Value: []byte("v")}
		pcl, err := c.newClient(kgo.SeedBrokers(c.seeds()...), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()))
		if err != nil {
			t.Fatal(err)
		}
		err = pcl.ProduceSync(ctx, r).FirstErr()
		pcl.Close()
		if err != nil {
			t.Fatalf("acks=all produce to ma-%d: %v", p, err)
		}
	}
}
