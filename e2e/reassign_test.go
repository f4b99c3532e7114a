package e2e

// Partition reassignment end to end: a fourth broker joins a loaded
// three-broker cluster and `sluice partitions reassign` moves a third of a
// topic's partitions onto it, as an operator does with
// kafka-reassign-partitions.sh.

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// reassignLoad is the load of a reassignment test: an idempotent franz-go
// producer, a kcat producer (librdkafka, acks=all, idempotent) and a
// franz-go consumer group, all on one topic, each bounded.
type reassignLoad struct {
	t     *testing.T
	topic string
	stop  chan struct{}
	wg    sync.WaitGroup

	mu     sync.Mutex
	goAck  map[string]bool   // franz-go values acknowledged
	kcatAt map[[2]int64]bool // kcat (partition, offset) acknowledged
	errs   []string

	consumed atomic.Int64
	kcat     *exec.Cmd
}

func startReassignLoad(t *testing.T, c *testCluster, kcat, topic string) *reassignLoad {
	l := &reassignLoad{t: t, topic: topic, stop: make(chan struct{}), goAck: map[string]bool{}, kcatAt: map[[2]int64]bool{}}
	seeds := c.seeds()

	// franz-go: idempotent, acks=all, ~100-byte values, about 1000/s, at
	// most 1M.
	prod, err := c.newClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(2*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer prod.Close()
		pad := strings.Repeat("x", 90)
		for i := 0; i < 1000000; i++ {
			select {
			case <-l.stop:
				prod.Flush(context.Background())
				return
			default:
			}
			v := fmt.Sprintf("g-%08d", i)
			prod.Produce(context.Background(), &kgo.Record{Key: []byte(v), Value: []byte(v + "|" + pad)}, func(r *kgo.Record, err error) {
				l.mu.Lock()
				defer l.mu.Unlock()
				if err != nil {
					l.errs = append(l.errs, fmt.Sprintf("%s: %v", v, err))
					return
				}
				l.goAck[v] = true
			})
			if i%20 == 19 {
				time.Sleep(20 * time.Millisecond)
			}
		}
		prod.Flush(context.Background())
	}()

	// kcat: -vv prints a delivery report per acknowledged message.
	l.kcat = exec.Command(kcat, "-P", "-vv", "-b", strings.Join(seeds, ","), "-t", topic, "-X", "acks=all",
		"-X", "enable.idempotence=true", "-X", "linger.ms=5", "-X", "message.timeout.ms=120000")
	stdin, err := l.kcat.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := l.kcat.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := l.kcat.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.kcat.Process.Kill() })
	l.wg.Add(2)
	go func() {
		defer l.wg.Done()
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := deliveredRE.FindStringSubmatch(sc.Text()); m != nil {
				p, _ := strconv.ParseInt(m[1], 10, 64)
				o, _ := strconv.ParseInt(m[2], 10, 64)
				l.mu.Lock()
				l.kcatAt[[2]int64{p, o}] = true
				l.mu.Unlock()
			}
		}
	}()
	go func() {
		defer l.wg.Done()
		defer stdin.Close()
		w := bufio.NewWriter(stdin)
		for i := 0; i < 1000000; i++ { // about 1000/s
			select {
			case <-l.stop:
				w.Flush()
				return
			default:
			}
			fmt.Fprintf(w, "k-%07d\n", i)
			if i%20 == 19 {
				if w.Flush() != nil {
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		w.Flush()
	}()

	// A consumer group reading all along.
	cons, err := c.newClient(kgo.SeedBrokers(seeds...), kgo.ConsumerGroup("reassign-readers"), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer cons.Close()
		for {
			select {
			case <-l.stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			fs := cons.PollFetches(ctx)
			cancel()
			l.consumed.Add(int64(fs.NumRecords()))
		}
	}()
	return l
}

// acked returns how many records both producers have had acknowledged.
func (l *reassignLoad) acked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.goAck) + len(l.kcatAt)
}

// waitProgress waits (bounded) until at least n more records are
// acknowledged and consumed than now.
func (l *reassignLoad) waitProgress(what string, n int) {
	l.t.Helper()
	a0, c0 := l.acked(), l.consumed.Load()
	deadline := time.Now().Add(90 * time.Second)
	for l.acked() < a0+n || l.consumed.Load() < c0+int64(n) {
		if time.Now().After(deadline) {
			l.t.Fatalf("%s: %d acknowledged and %d consumed since, want %d each", what, l.acked()-a0, l.consumed.Load()-c0, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// finish stops the load and waits for the producers' last answers.
func (l *reassignLoad) finish() {
	close(l.stop)
	done := make(chan struct{})
	go func() {
		// kcat delivers what it has, then exits at end of input.
		_ = l.kcat.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(150 * time.Second):
		_ = l.kcat.Process.Signal(syscall.SIGKILL)
		<-done
	}
	l.wg.Wait()
}

// checkNothingLost reads the whole topic and checks that every
// acknowledged franz-go record is there exactly once, every kcat
// acknowledgement names a kcat record, and no value appears twice.
func (l *reassignLoad) checkNothingLost(c *testCluster, partitions int32) {
	l.t.Helper()
	adm, cl := c.admin()
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, l.topic)
	if err != nil {
		l.t.Fatal(err)
	}
	want := int64(0)
	offsets := map[int32]kgo.Offset{}
	for p := range partitions {
		o, _ := ends.Lookup(l.topic, p)
		want += o.Offset
		offsets[p] = kgo.NewOffset().AtStart()
	}
	r, err := c.newClient(kgo.SeedBrokers(c.seeds()...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{l.topic: offsets}))
	if err != nil {
		l.t.Fatal(err)
	}
	defer r.Close()
	seen := map[string]int{}
	at := map[[2]int64]string{}
	got := int64(0)
	for got < want && ctx.Err() == nil {
		r.PollFetches(ctx).EachRecord(func(rec *kgo.Record) {
			got++
			v, _, _ := strings.Cut(string(rec.Value), "|")
			seen[v]++
			at[[2]int64{int64(rec.Partition), rec.Offset}] = v
		})
	}
	if got != want {
		l.t.Fatalf("read %d of %d records", got, want)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.errs) > 0 {
		l.t.Logf("%d franz-go produce errors (not acknowledged), first: %s", len(l.errs), l.errs[0])
	}
	for v := range l.goAck {
		if seen[v] != 1 {
			l.t.Fatalf("acknowledged record %s is there %d times", v, seen[v])
		}
	}
	for po := range l.kcatAt {
		if v := at[po]; !strings.HasPrefix(v, "k-") {
			l.t.Fatalf("kcat's acknowledged partition %d offset %d holds %q", po[0], po[1], v)
		}
	}
	for v, n := range seen {
		if n != 1 {
			l.t.Fatalf("record %s is there %d times", v, n)
		}
	}
	l.t.Logf("%d records: %d acknowledged to franz-go, %d to kcat; the group consumed %d", got, len(l.goAck), len(l.kcatAt), l.consumed.Load())
}

// sluiceCLI runs the sluice binary against the cluster.
func (c *testCluster) sluiceCLI(args ...string) string {
	c.t.Helper()
	out, errOut, err := run(c.t, 90*time.Second, "", sluiceBinary(c.t), append(args, "--bootstrap-server", strings.Join(c.seeds(), ","))...)
	if err != nil {
		c.t.Fatalf("sluice %s: %v\n%s\n%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// addBroker starts broker id in the cluster with sets.
func (c *testCluster) addBroker(id int32, sets ...string) {
	c.t.Helper()
	dir := filepath.Join(c.t.TempDir(), "broker-"+strconv.Itoa(int(id)))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		c.t.Fatal(err)
	}
	c.brokers[id] = startBroker(c.t, dir, append([]string{
		"broker.id=" + strconv.Itoa(int(id)),
		"zookeeper.connect=" + c.zk.Addr() + "/sluice",
		"zookeeper.session.timeout.ms=3000",
		"group.initial.rebalance.delay.ms=0",
	}, sets...)...)
	c.waitBrokers(len(c.brokers), 30*time.Second)
}

type reassignJSON struct {
	Version    int `json:"version"`
	Partitions []struct {
		Topic     string   `json:"topic"`
		Partition int32    `json:"partition"`
		Replicas  []int32  `json:"replicas"`
		LogDirs   []string `json:"log_dirs"`
	} `json:"partitions"`
}

// planOntoBroker4 runs --generate and keeps a third of the proposal: the
// first partitions that it places on broker 4 and that are not on it.
func (c *testCluster) planOntoBroker4(topic string, partitions int) (string, reassignJSON) {
	c.t.Helper()
	dir := c.t.TempDir()
	topicsFile := filepath.Join(dir, "topics.json")
	os.WriteFile(topicsFile, []byte(`{"version":1,"topics":[{"topic":"`+topic+`"}]}`), 0o644)
	var proposed reassignJSON
	for attempt := 0; ; attempt++ {
		out := c.sluiceCLI("partitions", "reassign", "--generate", "--topics-to-move-json-file", topicsFile, "--broker-list", "1,2,3,4")
		ls := lines(out)
		if len(ls) != 4 || ls[2] != "Proposed partition reassignment configuration" {
			c.t.Fatalf("generate:\n%s", out)
		}
		if err := json.Unmarshal([]byte(ls[3]), &proposed); err != nil {
			c.t.Fatal(err)
		}
		var plan reassignJSON
		plan.Version = 1
		for _, e := range proposed.Partitions {
			if slices.Contains(e.Replicas, 4) && len(plan.Partitions) < partitions/3 {
				plan.Partitions = append(plan.Partitions, e)
			}
		}
		if len(plan.Partitions) == partitions/3 {
			f := filepath.Join(dir, "plan.json")
			b, _ := json.Marshal(plan)
			os.WriteFile(f, b, 0o644)
			return f, plan
		}
		if attempt > 10 {
			c.t.Fatalf("--generate never put broker 4 on %d partitions: %s", partitions/3, ls[3])
		}
	}
}

// verifyUntilDone runs --verify until every move of plan is completed.
func (c *testCluster) verifyUntilDone(planFile string, n int) string {
	c.t.Helper()
	deadline := time.Now().Add(180 * time.Second)
	for {
		out := c.sluiceCLI("partitions", "reassign", "--verify", "--reassignment-json-file", planFile)
		if strings.Count(out, "is completed.") == n {
			return out
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("moves not done after 180 s:\n%s\n%s", out, c.logs())
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// checkMoved checks that each moved partition has the plan's replicas,
// all in sync, broker 4 among them.
func (c *testCluster) checkMoved(topic string, plan reassignJSON) {
	c.t.Helper()
	for _, e := range plan.Partitions {
		c.waitFor(60*time.Second, fmt.Sprintf("%s-%d on %v, all in sync", topic, e.Partition, e.Replicas), func(*kadm.Client) bool {
			pd, ok := c.partition(topic, e.Partition)
			isr := slices.Sorted(slices.Values(pd.ISR))
			return ok && slices.Equal(pd.Replicas, e.Replicas) && slices.Equal(isr, slices.Sorted(slices.Values(e.Replicas)))
		})
	}
}

func (c *testCluster) checkThrottlesGone(topic string) {
	c.t.Helper()
	for id := int32(1); id <= 4; id++ {
		if cfg := c.describeBrokerConfig(id, "leader.replication.throttled.rate"); cfg != "" {
			c.t.Errorf("broker %d still has leader.replication.throttled.rate=%s", id, cfg)
		}
	}
	for id := int32(1); id <= 4; id++ {
		if cfg := c.describeBrokerConfig(id, "follower.replication.throttled.rate"); cfg != "" {
			c.t.Errorf("broker %d still has follower.replication.throttled.rate=%s", id, cfg)
		}
	}
	cfgs := c.describeTopicConfigs(1, topic)
	for _, k := range []string{"leader.replication.throttled.replicas", "follower.replication.throttled.replicas"} {
		if v := cfgs[k]; v != "" {
			c.t.Errorf("topic still has %s=%s", k, v)
		}
	}
}

// describeBrokerConfig returns broker id's dynamic value of key ("" when
// not set on it).
func (c *testCluster) describeBrokerConfig(id int32, key string) string {
	c.t.Helper()
	adm, cl := c.admin()
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rcs, err := adm.DescribeBrokerConfigs(ctx, id)
	if err != nil || len(rcs) != 1 || rcs[0].Err != nil {
		c.t.Fatalf("describe broker %d: %v %v", id, err, rcs)
	}
	for _, cfg := range rcs[0].Configs {
		if cfg.Key == key && cfg.Source == 2 /* DYNAMIC_BROKER_CONFIG */ {
			return cfg.MaybeValue()
		}
	}
	return ""
}

// Sizes of a reassignment test's moves: each moving partition gets
// reassignBulkPerPart records of 64 KiB (incompressible) before the move,
// which the throttle of reassignThrottle B/s then bounds to ~12 s of
// copying onto broker 4 (it fetches the two partitions under one
// follower quota). Enough that the first fetches of broker 4 (up to
// replica.fetch.max.bytes, 1 MiB, per partition before the quota has
// measured anything) are a small part of the move.
const (
	reassignBulkPerPart = 192 // 12 MiB
	reassignThrottle    = 2 << 20
)

// TestReassignOntoNewBroker: three brokers under acks=all load from
// franz-go and kcat with a consumer group reading; a fourth broker starts
// and `sluice partitions reassign` moves a third of the partitions onto it
// with a throttle; the move runs at most 20% above the throttle, acks=all
// produce to the moving partitions keeps going meanwhile (in-sync
// replication is not throttled); --verify reports the moves done and
// removes the throttles; nothing acknowledged is lost or duplicated, the
// group keeps consuming, and broker 4's replicas are in sync.
func TestReassignOntoNewBroker(t *testing.T) {
	t.Parallel()
	testReassign(t, false)
}

// TestReassignControllerKilledMidMove: the same, with the controller
// SIGKILLed while the (throttled, so still running) moves copy: the next
// controller resumes the moves from ZooKeeper and completes them; the
// killed broker comes back and catches up.
func TestReassignControllerKilledMidMove(t *testing.T) {
	t.Parallel()
	testReassign(t, true)
}

func testReassign(t *testing.T, killController bool) {
	kcat := need(t, "kcat")
	c := startCluster(t, 3)
	const topic, parts = "moving", 6
	two := "2"
	c.createTopic(topic, parts, 3, map[string]*string{"min.insync.replicas": &two})
	load := startReassignLoad(t, c, kcat, topic)
	load.waitProgress("before broker 4", 5000)

	c.addBroker(4)
	planFile, plan := c.planOntoBroker4(topic, parts)
	var moving []int32
	for _, e := range plan.Partitions {
		moving = append(moving, e.Partition)
	}
	load.bulk(c, moving, reassignBulkPerPart)
	have := c.replicaSizes(topic, moving)
	t.Logf("moving partitions %v: %d bytes to copy onto broker 4", moving, have)

	meter := c.meterBroker4(topic, moving, have)
	probe := load.probe(c, moving, meter)
	out := c.sluiceCLI("partitions", "reassign", "--execute", "--reassignment-json-file", planFile, "--throttle", strconv.Itoa(reassignThrottle))
	if !strings.Contains(out, "Successfully started partition reassignments for ") || !strings.Contains(out, fmt.Sprintf("The inter-broker throttle limit was set to %d B/s", reassignThrottle)) {
		t.Fatalf("execute:\n%s", out)
	}
	probe.executed.Store(true)
	if v := c.describeBrokerConfig(4, "follower.replication.throttled.rate"); v != strconv.Itoa(reassignThrottle) {
		t.Fatalf("broker 4 follower.replication.throttled.rate = %q after --execute --throttle", v)
	}
	if killController {
		// The throttle keeps the moves running for seconds: long enough
		// to kill the controller in the middle of them.
		adm, cl := c.admin()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		set := kadm.TopicsSet{}
		set.Add(topic, moving...)
		inProgress, err := adm.ListPartitionReassignments(ctx, set)
		cancel()
		cl.Close()
		if err != nil || len(inProgress.Sorted()) == 0 {
			t.Fatalf("no move in progress right after --execute (%v): the throttle did not hold the moves back", err)
		}
		ctrl := c.controllerID()
		t.Logf("%d moves in progress; SIGKILL controller %d", len(inProgress.Sorted()), ctrl)
		c.brokers[ctrl].kill()
		c.waitFor(60*time.Second, "a new controller", func(*kadm.Client) bool {
			for _, v := range c.views() {
				if v.err != nil || v.controller < 0 || v.controller == ctrl {
					return false
				}
			}
			return true
		})
		// The new controller has the moves (from the topic znodes).
		listed := c.sluiceCLI("partitions", "reassign", "--list")
		if !strings.HasPrefix(listed, "Current partition reassignments:\n") {
			t.Fatalf("list:\n%s", listed)
		}
		for _, e := range plan.Partitions {
			if meter.done() {
				break // copied meanwhile: the new controller completes it
			}
			if !strings.Contains(listed, fmt.Sprintf("%s-%d: replicas: ", topic, e.Partition)) || !strings.Contains(listed, ". adding: 4. removing: ") {
				t.Fatalf("list lacks the move of %s-%d:\n%s", topic, e.Partition, listed)
			}
		}
		c.brokers[ctrl].restart()
		c.waitBrokers(4, 60*time.Second)
	}
	verified := c.verifyUntilDone(planFile, len(plan.Partitions))
	for _, want := range []string{"Status of partition reassignment:\n", "Clearing broker-level throttles on brokers 1,2,3,4\n",
		"Clearing topic-level throttles on topic " + topic + "\n"} {
		if !strings.Contains(verified, want) {
			t.Fatalf("verify lacks %q:\n%s", want, verified)
		}
	}
	c.checkThrottlesGone(topic)
	rate := meter.stop()
	probes := probe.stop()
	t.Logf("moves onto broker 4 under a %d B/s throttle: %s", reassignThrottle, meter)
	t.Logf("acks=all produce to the moving partitions during the moves: %s", probes)
	// The rate is checked strictly on one side only. Above 1.2 × the
	// throttle means the throttle was not enforced: the copy can only be
	// that fast if a quota let bytes through, whatever the machine does.
	// Below 0.8 × means the copy was slower than the throttle allows,
	// which on a shared 2-core machine under this load (brokers,
	// ZooKeeper, kcat, the CLI) can be the machine, not Sluice: that is
	// logged, not failed, as no assertion here may hang on timing.
	if rate > 1.2*reassignThrottle {
		t.Errorf("moves ran at %.0f B/s, more than 1.2 × the %d B/s throttle", rate, reassignThrottle)
	} else if rate < 0.8*reassignThrottle {
		t.Logf("warning: moves ran at %.0f B/s, below 0.8 × the %d B/s throttle (a busy machine?)", rate, reassignThrottle)
	}
	// In-sync replication is not throttled: acks=all produce to the
	// moving partitions, which needs their in-sync followers, completed
	// while the throttle held broker 4's copy back.
	if probes.during == 0 {
		t.Errorf("no acks=all produce to a moving partition completed while the moves ran: %s", probes)
	}
	load.waitProgress("after the moves", 5000)
	load.finish()
	c.checkMoved(topic, plan)
	load.checkNothingLost(c, parts)
}

// bulk writes n records of 64 KiB (random, so incompressible) to each of
// partitions at acks=all, and records them as acknowledged franz-go
// records, so that the moves have tens of MiB to copy.
func (l *reassignLoad) bulk(c *testCluster, partitions []int32, n int) {
	l.t.Helper()
	cl, err := c.newClient(kgo.SeedBrokers(c.seeds()...), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(1<<20), kgo.MaxBufferedRecords(64))
	if err != nil {
		l.t.Fatal(err)
	}
	defer cl.Close()
	pad := make([]byte, 64<<10)
	rand.Read(pad)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var failed atomic.Int64
	for i := range n {
		for _, p := range partitions {
			v := fmt.Sprintf("b-%d-%05d", p, i)
			cl.Produce(ctx, &kgo.Record{Topic: l.topic, Partition: p, Value: append([]byte(v+"|"), pad...)}, func(_ *kgo.Record, err error) {
				if err != nil {
					failed.Add(1)
					return
				}
				l.mu.Lock()
				l.goAck[v] = true
				l.mu.Unlock()
			})
		}
	}
	if err := cl.Flush(ctx); err != nil || failed.Load() > 0 {
		l.t.Fatalf("bulk produce to %v: %v, %d records failed", partitions, err, failed.Load())
	}
}

// replicaSizes returns the total size of the largest replica of each of
// topic's partitions (DescribeLogDirs on every broker).
func (c *testCluster) replicaSizes(topic string, partitions []int32) int64 {
	c.t.Helper()
	adm, cl := c.admin()
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	set := kadm.TopicsSet{}
	set.Add(topic, partitions...)
	dirs, err := adm.DescribeAllLogDirs(ctx, set)
	if err != nil {
		c.t.Fatal(err)
	}
	largest := map[int32]int64{}
	dirs.Each(func(d kadm.DescribedLogDir) {
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
			largest[p.Partition] = max(largest[p.Partition], p.Size)
		})
	})
	var total int64
	for _, s := range largest {
		total += s
	}
	return total
}

// moveMeter samples, every 200 ms, the size of broker 4's replicas of the
// moving partitions (DescribeLogDirs), from just before --execute until
// they hold the bytes the partitions had then.
type moveMeter struct {
	want  int64 // bytes the moving partitions held before the move
	start time.Time
	quit  chan struct{}
	wg    sync.WaitGroup

	mu      sync.Mutex
	copied  int64         // broker 4's bytes at the first sample >= want
	took    time.Duration // from start to that sample
	samples int
	last    int64
	err     error // the last sampling error
}

func (c *testCluster) meterBroker4(topic string, partitions []int32, want int64) *moveMeter {
	m := &moveMeter{want: want, start: time.Now(), quit: make(chan struct{})}
	cl, err := c.newClient(kgo.SeedBrokers(c.brokers[4].addr))
	if err != nil {
		c.t.Fatal(err)
	}
	req := kmsg.NewPtrDescribeLogDirsRequest()
	rt := kmsg.NewDescribeLogDirsRequestTopic()
	rt.Topic, rt.Partitions = topic, partitions
	req.Topics = append(req.Topics, rt)
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer cl.Close()
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for !m.done() {
			select {
			case <-m.quit:
				return
			case <-tick.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			// To broker 4 alone: the client would send DescribeLogDirs to
			// every broker and merge the answers.
			kr, err := cl.SeedBrokers()[0].Request(ctx, req)
			cancel()
			now := time.Now()
			var size int64
			if err == nil {
				for _, d := range kr.(*kmsg.DescribeLogDirsResponse).Dirs {
					for _, t := range d.Topics {
						for _, p := range t.Partitions {
							size += p.Size
						}
					}
				}
			}
			m.mu.Lock()
			m.samples++
			if err != nil {
				m.err = err
			} else {
				m.last = size
				if size >= m.want && m.took == 0 {
					m.copied, m.took = size, now.Sub(m.start)
				}
			}
			m.mu.Unlock()
		}
	}()
	return m
}

// done reports whether broker 4 holds the bytes the moves had to copy.
func (m *moveMeter) done() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.took > 0
}

// stop ends the sampling and returns the copy rate in bytes/s: broker
// 4's bytes of the moving partitions when they first held all the bytes
// there were before the move, over the time since just before --execute
// (0 if that was never sampled).
func (m *moveMeter) stop() float64 {
	close(m.quit)
	m.wg.Wait()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.took == 0 {
		return 0
	}
	return float64(m.copied) / m.took.Seconds()
}

func (m *moveMeter) String() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.took == 0 {
		return fmt.Sprintf("broker 4 never held the %d bytes within %d samples (last %d, err %v)", m.want, m.samples, m.last, m.err)
	}
	return fmt.Sprintf("%d bytes in %v: %.2f MiB/s (%d samples)", m.copied, m.took.Round(time.Millisecond), float64(m.copied)/m.took.Seconds()/(1<<20), m.samples)
}

// probeResult counts the probe's acks=all produces.
type probeResult struct {
	during, after int             // acknowledged while the copy ran (after --execute), after it
	lat           []time.Duration // of those during, sorted
	errs          int
}

func (r probeResult) String() string {
	s := fmt.Sprintf("%d acknowledged while broker 4 copied, %d after, %d errors", r.during, r.after, r.errs)
	if n := len(r.lat); n > 0 {
		s += fmt.Sprintf("; latency during p50 %v max %v", r.lat[n/2].Round(time.Millisecond), r.lat[n-1].Round(time.Millisecond))
	}
	return s
}

type prober struct {
	quit     chan struct{}
	res      chan probeResult
	executed atomic.Bool // --execute has returned: the moves run, throttled
}

// probe produces small records one at a time (ProduceSync, acks=all) to
// partitions in turn until stopped, at most 5000, each recorded as an
// acknowledged franz-go record, and counts those acknowledged after
// --execute while m says the copy runs. Their latencies include the
// leadership moves when a move completes and its leader leaves (a second
// or so), not only in-sync replication.
func (l *reassignLoad) probe(c *testCluster, partitions []int32, m *moveMeter) *prober {
	cl, err := c.newClient(kgo.SeedBrokers(c.seeds()...), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		l.t.Fatal(err)
	}
	pr := &prober{quit: make(chan struct{}), res: make(chan probeResult, 1)}
	go func() {
		defer cl.Close()
		var r probeResult
		defer func() { slices.Sort(r.lat); pr.res <- r }()
		for i := 0; i < 5000; i++ {
			select {
			case <-pr.quit:
				return
			default:
			}
			v := fmt.Sprintf("p-%05d", i)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			start := time.Now()
			err := cl.ProduceSync(ctx, &kgo.Record{Topic: l.topic, Partition: partitions[i%len(partitions)], Value: []byte(v)}).FirstErr()
			lat := time.Since(start)
			cancel()
			if err != nil {
				r.errs++
				continue
			}
			l.mu.Lock()
			l.goAck[v] = true
			l.mu.Unlock()
			switch {
			case m.done():
				r.after++
			case pr.executed.Load():
				r.during++
				r.lat = append(r.lat, lat)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	return pr
}

func (pr *prober) stop() probeResult {
	close(pr.quit)
	return <-pr.res
}
