package e2e

// Transaction tests: franz-go's consume-transform-produce loop
// (GroupTransactSession) against a broker SIGKILLed while it runs, on a
// single node and on a 3-broker cluster, checked for exactly-once output;
// a zombie producer fenced; kcat (librdkafka) reading committed and
// aborted transactions with both isolation levels.

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
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

// txnSeed returns the seed of a randomized transaction test, printed so
// that SLUICE_SEED replays it.
func txnSeed(t *testing.T) *rand.Rand {
	t.Helper()
	seed := time.Now().UnixNano()
	if s := os.Getenv("SLUICE_SEED"); s != "" {
		fmt.Sscan(s, &seed)
	}
	t.Logf("seed %d (SLUICE_SEED=%d replays it)", seed, seed)
	return rand.New(rand.NewSource(seed))
}

// eosInput and eosOutput name input record i and its transform.
func eosInput(i int) string { return fmt.Sprintf("in-%06d", i) }

func eosOutput(in string) string { return "eos:" + in }

// fillInput writes n records eosInput(0..n-1), round robin over topic's
// partitions, with acks=all.
func fillInput(t *testing.T, seeds []string, topic string, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = kgo.StringRecord(eosInput(i))
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("fill %s: %v", topic, err)
	}
}

// eosPipeline is the consume-transform-produce loop of franz-go's EOS
// example, run by `instances` goroutines, each with its own
// GroupTransactSession (transactional id "<txnPrefix>-<i>", one group).
// A session whose End fails is closed and recreated (InitProducerId with
// the same transactional id fences the old epoch and aborts what it left
// open), as an application restarting the instance would.
type eosPipeline struct {
	t              *testing.T
	seeds          func() []string
	in, out, group string
	txnPrefix      string
	instances      int
	maxPoll        int // records per transaction at most
	// pace is how long a transaction stays open between its produces and
	// End: it slows the pipeline so that kills land while it runs, often
	// inside a transaction.
	pace              time.Duration
	committedRecords  atomic.Int64
	commits, aborts   atomic.Int64
	recreated, errors atomic.Int64
	firstErrs         sync.Map // instance -> first End error, for the log
}

// run runs the instances until ctx is done and waits for them.
func (p *eosPipeline) run(ctx context.Context) {
	var wg sync.WaitGroup
	for i := range p.instances {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.instance(ctx, i)
		}()
	}
	wg.Wait()
}

func (p *eosPipeline) newSession(i int) (*kgo.GroupTransactSession, error) {
	return kgo.NewGroupTransactSession(
		kgo.SeedBrokers(p.seeds()...),
		kgo.DefaultProduceTopic(p.out),
		kgo.TransactionalID(fmt.Sprintf("%s-%d", p.txnPrefix, i)),
		kgo.TransactionTimeout(10*time.Second),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumerGroup(p.group),
		kgo.ConsumeTopics(p.in),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(6*time.Second),
		kgo.HeartbeatInterval(500*time.Millisecond),
		kgo.RetryTimeout(20*time.Second),
		kgo.RequestRetries(100),
	)
}

// instance is one pipeline instance: the EOS loop, recreated after a
// failed End, until ctx is done.
func (p *eosPipeline) instance(ctx context.Context, i int) {
	for ctx.Err() == nil {
		sess, err := p.newSession(i)
		if err != nil {
			p.t.Errorf("instance %d: new session: %v", i, err)
			return
		}
		p.loop(ctx, i, sess)
		closed := make(chan struct{})
		go func() { sess.Close(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(15 * time.Second):
			p.t.Logf("instance %d: Close did not return within 15s", i)
		}
		if ctx.Err() == nil {
			p.recreated.Add(1)
		}
	}
}

// loop runs transactions with sess until End fails or ctx is done.
func (p *eosPipeline) loop(ctx context.Context, i int, sess *kgo.GroupTransactSession) {
	for ctx.Err() == nil {
		pollCtx, cancel := context.WithTimeout(ctx, time.Second)
		fetches := sess.PollRecords(pollCtx, p.maxPoll)
		cancel()
		if fetches.IsClientClosed() {
			return
		}
		// As the example: fetch errors are logged, the records that came
		// are still processed.
		fetches.EachError(func(topic string, part int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				p.t.Logf("instance %d: fetch %s-%d: %v", i, topic, part, err)
			}
		})
		if fetches.NumRecords() == 0 {
			continue
		}
		if err := sess.Begin(); err != nil {
			// The example treats this as impossible; it happens when the
			// producer id failed to load and franz-go deems that fatal
			// (a coordinator that a broker named a moment ago and that
			// the next metadata no longer lists is "unknown broker").
			// An application restarts the instance: so do we.
			p.errors.Add(1)
			p.t.Logf("instance %d: begin: %v (recreating the session)", i, err)
			return
		}
		e := kgo.AbortingFirstErrPromise(sess.Client())
		n := int64(0)
		fetches.EachRecord(func(r *kgo.Record) {
			n++
			sess.Produce(ctx, &kgo.Record{Key: r.Value, Value: []byte(eosOutput(string(r.Value)))}, e.Promise())
		})
		time.Sleep(p.pace)
		committed, err := sess.End(ctx, e.Err() == nil)
		if committed {
			p.commits.Add(1)
			p.committedRecords.Add(n)
		} else {
			p.aborts.Add(1)
		}
		if err != nil {
			if ctx.Err() == nil {
				p.errors.Add(1)
				if _, loaded := p.firstErrs.LoadOrStore(i, err); !loaded {
					p.t.Logf("instance %d: end: %v (recreating the session)", i, err)
				}
			}
			return
		}
	}
}

// groupDone reports whether the group's committed offsets reached the
// input's end offsets on every partition.
func groupDone(ctx context.Context, adm *kadm.Client, group, in string) (done bool, committed int64) {
	ends, err := adm.ListEndOffsets(ctx, in)
	if err != nil {
		return false, 0
	}
	offs, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return false, 0
	}
	done = true
	ends.Each(func(o kadm.ListedOffset) {
		c, ok := offs.Lookup(in, o.Partition)
		if !ok || c.Err != nil {
			done = false
			return
		}
		committed += c.At
		if c.At < o.Offset {
			done = false
		}
	})
	return done, committed
}

// checkExactlyOnce reads out from the start with read_committed and checks
// that it holds eosOutput of every input record once and nothing else.
// It reads until it has n records and then 3 s more with nothing new (a
// duplicate would come in that time), at most within.
func checkExactlyOnce(t *testing.T, seeds []string, out string, n int, within time.Duration) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(out),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	seen := make(map[string]int, n)
	total := 0
	var dups []string
	last := time.Now()
	for ctx.Err() == nil {
		if total >= n && time.Since(last) > 3*time.Second {
			break
		}
		pctx, pcancel := context.WithTimeout(ctx, 500*time.Millisecond)
		fs := cl.PollFetches(pctx)
		pcancel()
		fs.EachRecord(func(r *kgo.Record) {
			total++
			last = time.Now()
			v := string(r.Value)
			seen[v]++
			if seen[v] == 2 && len(dups) < 10 {
				dups = append(dups, fmt.Sprintf("%s (%s-%d@%d)", v, r.Topic, r.Partition, r.Offset))
			}
		})
	}
	var missing []string
	nMissing := 0
	for i := range n {
		if seen[eosOutput(eosInput(i))] == 0 {
			nMissing++
			if len(missing) < 10 {
				missing = append(missing, eosInput(i))
			}
		}
	}
	extra := 0
	for v := range seen {
		if !strings.HasPrefix(v, "eos:in-") {
			extra++
		}
	}
	t.Logf("read_committed: %d records, %d distinct, %d missing, %d duplicated (first %v)", total, len(seen), nMissing, total-len(seen), dups)
	if nMissing > 0 || total != n || extra > 0 {
		t.Fatalf("not exactly once: %d records read for %d inputs; %d missing (first %v); duplicates (first) %v; %d unknown values",
			total, n, nMissing, missing, dups, extra)
	}
}

// TestExactlyOnceSingleNode: three instances of franz-go's EOS loop
// transform a 6-partition topic of 30,000 records into another while the
// broker is SIGKILLed three times at random points and restarted; the
// output read with read_committed holds every input's transform exactly
// once. The seed is printed; SLUICE_SEED replays one.
func TestExactlyOnceSingleNode(t *testing.T) {
	t.Parallel()
	const (
		n      = 30000
		kills  = 3
		budget = 45 * time.Second // for the pipeline, kills included
	)
	rng := txnSeed(t)
	began := time.Now()
	dir := filepath.Join(t.TempDir(), "data")
	b := startBroker(t, dir, "storage.backend=segment", "group.initial.rebalance.delay.ms=0",
		"transaction.state.log.num.partitions=5", "offsets.topic.num.partitions=5")
	adm, done := adminFor(t, b.addr)
	defer done()
	createTopicE2E(t, adm, "eos-in", 6)
	createTopicE2E(t, adm, "eos-out", 6)
	fillInput(t, []string{b.addr}, "eos-in", n)
	t.Logf("input filled in %v", time.Since(began).Round(time.Millisecond))

	p := &eosPipeline{t: t, seeds: func() []string { return []string{b.addr} },
		in: "eos-in", out: "eos-out", group: "eos-g", txnPrefix: "eos", instances: 3, maxPoll: 50, pace: 20 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	pipeStart := time.Now()
	ran := make(chan struct{})
	go func() { p.run(ctx); close(ran) }()

	// Kill k lands once the instances have committed about k/(kills+1) of
	// the input, a random bit later (so in a random phase of some
	// transaction), or after 12 s at the latest.
	type killStat struct {
		at        time.Duration
		committed int64
		restart   time.Duration
	}
	var stats []killStat
	for k := 1; k <= kills && ctx.Err() == nil; k++ {
		target := int64(n) * int64(k) / int64(kills+1)
		target += int64(rng.Intn(n / (2 * (kills + 1))))
		wait := time.Now().Add(12 * time.Second)
		for p.committedRecords.Load() < target && time.Now().Before(wait) && ctx.Err() == nil {
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(time.Duration(rng.Intn(300)) * time.Millisecond)
		at, committed := time.Since(pipeStart), p.committedRecords.Load()
		b.kill()
		checkBrokerLogs(t, fmt.Sprintf("broker before kill %d", k), b.logText())
		time.Sleep(time.Duration(rng.Intn(500)) * time.Millisecond)
		r := time.Now()
		b.restart()
		stats = append(stats, killStat{at, committed, time.Since(r)})
		t.Logf("kill %d at %v with %d records committed; restarted in %v", k, at.Round(time.Millisecond), committed, time.Since(r).Round(time.Millisecond))
	}

	// Wait until the group's committed offsets reach the input's end.
	var committed int64
	for {
		actx, acancel := context.WithTimeout(ctx, 5*time.Second)
		var ok bool
		ok, committed = groupDone(actx, adm, "eos-g", "eos-in")
		acancel()
		if ok {
			break
		}
		if ctx.Err() != nil {
			cancel()
			<-ran
			t.Fatalf("pipeline did not finish within %v: group committed %d of %d; %d commits, %d aborts, %d sessions recreated\n%s",
				budget, committed, n, p.commits.Load(), p.aborts.Load(), p.recreated.Load(), tail(b.logText(), 6000))
		}
		time.Sleep(200 * time.Millisecond)
	}
	pipeTime := time.Since(pipeStart)
	cancel()
	<-ran
	t.Logf("pipeline done in %v: %d transactions committed, %d aborted, %d Begin/End errors, %d sessions recreated, %d kills",
		pipeTime.Round(time.Millisecond), p.commits.Load(), p.aborts.Load(), p.errors.Load(), p.recreated.Load(), len(stats))

	checkExactlyOnce(t, []string{b.addr}, "eos-out", n, 30*time.Second)
	checkBrokerLogs(t, "broker after the last restart", b.logText())
	t.Logf("total %v", time.Since(began).Round(time.Millisecond))
}

// checkBrokerLogs fails the test on a panic in a broker's log and logs
// its first ERROR lines.
func checkBrokerLogs(t *testing.T, name, logs string) {
	t.Helper()
	if i := strings.Index(logs, "panic:"); i >= 0 {
		t.Fatalf("%s panicked:\n%s", name, tail(logs[i:], 4000))
	}
	n := 0
	for _, l := range lines(logs) {
		if strings.Contains(l, "level=ERROR") {
			if n < 5 {
				t.Logf("%s: %.300s", name, l)
			}
			n++
		}
	}
	if n > 0 {
		t.Logf("%s: %d ERROR lines", name, n)
	}
}

// tail returns the last n bytes of s.
func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// txnCoordinator asks a running broker of c which broker coordinates
// transactional id (FindCoordinator key type 1), retrying until one
// answers within 20 s.
func (c *testCluster) txnCoordinator(id string) int32 {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		cl, err := c.newClient(kgo.SeedBrokers(c.seeds()...))
		if err != nil {
			c.t.Fatal(err)
		}
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType, req.CoordinatorKey = 1, id
		req.CoordinatorKeys = []string{id}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := req.RequestWith(ctx, cl)
		cancel()
		cl.Close()
		if err == nil {
			node, code := resp.NodeID, resp.ErrorCode
			if len(resp.Coordinators) > 0 {
				node, code = resp.Coordinators[0].NodeID, resp.Coordinators[0].ErrorCode
			}
			if code == 0 && node >= 0 {
				return node
			}
			err = kerr.ErrorForCode(code)
		}
		last = err
		time.Sleep(200 * time.Millisecond)
	}
	c.t.Fatalf("no transaction coordinator for %q within 20s: %v\n%s", id, last, c.logs())
	return -1
}

// waitAllISR waits until every partition of topics has an ISR of n, as
// the running brokers report it, and returns how long it took.
func (c *testCluster) waitAllISR(n int, within time.Duration, topics ...string) time.Duration {
	c.t.Helper()
	start := time.Now()
	c.waitFor(within, fmt.Sprintf("full ISRs (%d) of %v", n, topics), func(adm *kadm.Client) bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		m, err := adm.Metadata(ctx, topics...)
		if err != nil {
			return false
		}
		for _, topic := range topics {
			td, ok := m.Topics[topic]
			if !ok || td.Err != nil || len(td.Partitions) == 0 {
				return false
			}
			for _, pd := range td.Partitions {
				if pd.Err != nil || pd.Leader < 0 || len(pd.ISR) != n {
					return false
				}
			}
		}
		return true
	})
	return time.Since(start)
}

// TestExactlyOnceCluster: the EOS pipeline of TestExactlyOnceSingleNode on
// three brokers (RF 3 everywhere, min.insync.replicas 2), with the
// transaction coordinator of an instance SIGKILLed once and the leader of
// an output partition once (another broker when they differ), each
// restarted; the output is exactly once. Then a zombie producer, whose
// transactional id another client re-initialized, is fenced and its open
// transaction stays invisible to read_committed.
func TestExactlyOnceCluster(t *testing.T) {
	t.Parallel()
	const (
		n      = 15000
		budget = 50 * time.Second
	)
	rng := txnSeed(t)
	began := time.Now()
	c := startCluster(t, 3,
		"transaction.state.log.replication.factor=3", "transaction.state.log.min.isr=2",
		"transaction.state.log.num.partitions=5",
		"offsets.topic.replication.factor=3", "offsets.topic.num.partitions=5",
		"min.insync.replicas=2")
	two := "2"
	c.createTopic("eos-in", 6, 3, map[string]*string{"min.insync.replicas": &two})
	c.createTopic("eos-out", 6, 3, map[string]*string{"min.insync.replicas": &two})
	fillInput(t, c.seeds(), "eos-in", n)
	t.Logf("cluster up and input filled in %v", time.Since(began).Round(time.Millisecond))

	// Every broker's address, running or not: a client keeps its seeds
	// across a kill and restart.
	all := []string{c.brokers[1].addr, c.brokers[2].addr, c.brokers[3].addr}
	p := &eosPipeline{t: t, seeds: func() []string { return all },
		in: "eos-in", out: "eos-out", group: "eos-g", txnPrefix: "eos", instances: 3, maxPoll: 50, pace: 20 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	pipeStart := time.Now()
	ran := make(chan struct{})
	go func() { p.run(ctx); close(ran) }()

	// Wait for the first transactions: the coordinators exist then.
	for p.committedRecords.Load() == 0 && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	coord := c.txnCoordinator("eos-0")
	leader := c.mustPartition("eos-out", 0).Leader
	victims := []struct {
		what string
		id   int32
	}{{"transaction coordinator of eos-0", coord}}
	if leader != coord {
		victims = append(victims, struct {
			what string
			id   int32
		}{"leader of eos-out-0", leader})
	} else {
		// The coordinator leads eos-out-0 too; the second kill takes the
		// leader of another partition if one is elsewhere, else the
		// coordinator again (it has moved by then).
		second := coord
		for part := int32(1); part < 6; part++ {
			if l := c.mustPartition("eos-out", part).Leader; l != coord {
				second = l
				break
			}
		}
		victims = append(victims, struct {
			what string
			id   int32
		}{"another output partition's leader", second})
	}
	for k, v := range victims {
		target := int64(n) * int64(k+1) / 3
		wait := time.Now().Add(10 * time.Second)
		for p.committedRecords.Load() < target && time.Now().Before(wait) && ctx.Err() == nil {
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(time.Duration(rng.Intn(300)) * time.Millisecond)
		at, committed := time.Since(pipeStart), p.committedRecords.Load()
		c.brokers[v.id].kill()
		checkBrokerLogs(t, fmt.Sprintf("broker %d before the kill", v.id), c.brokers[v.id].logText())
		t.Logf("kill %d: broker %d (%s) at %v with %d records committed", k+1, v.id, v.what, at.Round(time.Millisecond), committed)
		// It can start again once its ZooKeeper registration is gone.
		killedAt := time.Now()
		c.waitBrokers(2, 30*time.Second)
		gone := time.Since(killedAt)
		time.Sleep(time.Duration(rng.Intn(1000)) * time.Millisecond)
		c.brokers[v.id].restart()
		isr := c.waitAllISR(3, 30*time.Second, "eos-in", "eos-out", "__transaction_state", "__consumer_offsets")
		t.Logf("broker %d gone from the metadata %v after the kill, restarted; full ISRs again %v later",
			v.id, gone.Round(time.Millisecond), isr.Round(time.Millisecond))
	}

	adm, acl := c.admin()
	defer acl.Close()
	var committed int64
	for {
		actx, acancel := context.WithTimeout(ctx, 5*time.Second)
		var ok bool
		ok, committed = groupDone(actx, adm, "eos-g", "eos-in")
		acancel()
		if ok {
			break
		}
		if ctx.Err() != nil {
			cancel()
			<-ran
			t.Fatalf("pipeline did not finish within %v: group committed %d of %d; %d commits, %d aborts, %d sessions recreated\n%s",
				budget, committed, n, p.commits.Load(), p.aborts.Load(), p.recreated.Load(), c.logs())
		}
		time.Sleep(200 * time.Millisecond)
	}
	pipeTime := time.Since(pipeStart)
	cancel()
	<-ran
	t.Logf("pipeline done in %v: %d transactions committed, %d aborted, %d Begin/End errors, %d sessions recreated, %d kills",
		pipeTime.Round(time.Millisecond), p.commits.Load(), p.aborts.Load(), p.errors.Load(), p.recreated.Load(), len(victims))
	checkExactlyOnce(t, all, "eos-out", n, 30*time.Second)

	// A zombie: its transactional id is re-initialized by another client,
	// which bumps the epoch; the zombie's next produce or EndTxn is
	// refused and its open transaction is aborted.
	zctx, zcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer zcancel()
	c.createTopic("zombie-out", 1, 3, map[string]*string{"min.insync.replicas": &two})
	newProducer := func() *kgo.Client {
		cl, err := c.newClient(kgo.SeedBrokers(all...), kgo.TransactionalID("zombie-tx"),
			kgo.DefaultProduceTopic("zombie-out"), kgo.TransactionTimeout(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	zombie := newProducer()
	if err := zombie.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := zombie.ProduceSync(zctx, kgo.StringRecord("zombie-0")).FirstErr(); err != nil {
		t.Fatalf("zombie's first record: %v", err)
	}
	fresh := newProducer()
	if err := fresh.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := fresh.ProduceSync(zctx, kgo.StringRecord("fresh-0")).FirstErr(); err != nil {
		t.Fatalf("fresh producer: %v", err)
	}
	if err := fresh.EndTransaction(zctx, kgo.TryCommit); err != nil {
		t.Fatalf("fresh producer's commit: %v", err)
	}
	err := zombie.ProduceSync(zctx, kgo.StringRecord("zombie-1")).FirstErr()
	if err == nil {
		err = zombie.EndTransaction(zctx, kgo.TryCommit)
	}
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("zombie: %v, want PRODUCER_FENCED or INVALID_PRODUCER_EPOCH", err)
	}
	t.Logf("zombie fenced: %v", err)
	got := readCommitted(t, all, "zombie-out", 1, 3*time.Second)
	if len(got) != 1 || got[0] != "fresh-0" {
		t.Fatalf("zombie-out read_committed: %q, want [fresh-0]", got)
	}
	for id := int32(1); id <= 3; id++ {
		checkBrokerLogs(t, fmt.Sprintf("broker %d", id), c.brokers[id].logText())
	}
	t.Logf("total %v", time.Since(began).Round(time.Millisecond))
}

// readCommitted reads topic from the start with read_committed until it
// has want records and quiet passes with nothing more (20 s at most).
func readCommitted(t *testing.T, seeds []string, topic string, want int, quiet time.Duration) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []string
	last := time.Now()
	for ctx.Err() == nil && (len(out) < want || time.Since(last) < quiet) {
		pctx, pcancel := context.WithTimeout(ctx, 300*time.Millisecond)
		fs := cl.PollFetches(pctx)
		pcancel()
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)); last = time.Now() })
	}
	return out
}

// TestReadCommittedKcat: transactions written by franz-go, read by kcat
// (librdkafka): an aborted transaction is invisible with
// isolation.level=read_committed and its data records (no control
// records) are visible with read_uncommitted; committed ones are visible
// to both; a transaction still open is visible only to read_uncommitted.
func TestReadCommittedKcat(t *testing.T) {
	t.Parallel()
	kcat := need(t, "kcat")
	b := startBroker(t, filepath.Join(t.TempDir(), "data"), "storage.backend=segment",
		"transaction.state.log.num.partitions=3")
	adm, done := adminFor(t, b.addr)
	defer done()
	createTopicE2E(t, adm, "rc", 1)

	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.TransactionalID("kcat-tx"),
		kgo.DefaultProduceTopic("rc"), kgo.TransactionTimeout(60*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	txn := func(prefix string, n int, end kgo.TransactionEndTry, finish bool) {
		t.Helper()
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if err := cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("%s-%d", prefix, i))).FirstErr(); err != nil {
				t.Fatalf("%s: %v", prefix, err)
			}
		}
		if finish {
			if err := cl.EndTransaction(ctx, end); err != nil {
				t.Fatalf("end %s: %v", prefix, err)
			}
		}
	}
	began := time.Now()
	txn("committed1", 4, kgo.TryCommit, true)
	txn("aborted", 3, kgo.TryAbort, true)
	txn("committed2", 2, kgo.TryCommit, true)
	t.Logf("broker up and 3 transactions written in %v", time.Since(began).Round(time.Millisecond))

	consume := func(level string) []string {
		t.Helper()
		out, stderr, err := run(t, 30*time.Second, "", kcat, "-C", "-b", b.addr, "-t", "rc", "-e", "-q",
			"-X", "isolation.level="+level, "-f", "%s\n")
		if err != nil {
			t.Fatalf("kcat -C %s: %v\n%s", level, err, stderr)
		}
		return lines(out)
	}
	want := func(prefixes ...string) []string {
		var w []string
		for _, p := range prefixes {
			n := map[string]int{"committed1": 4, "aborted": 3, "committed2": 2, "open": 2}[p]
			for i := range n {
				w = append(w, fmt.Sprintf("%s-%d", p, i))
			}
		}
		return w
	}
	check := func(level string, w []string) {
		t.Helper()
		start := time.Now()
		got := consume(level)
		if strings.Join(got, ",") != strings.Join(w, ",") {
			t.Fatalf("kcat %s read %q, want %q", level, got, w)
		}
		t.Logf("kcat %s: %d records in %v", level, len(got), time.Since(start).Round(time.Millisecond))
	}
	check("read_committed", want("committed1", "committed2"))
	check("read_uncommitted", want("committed1", "aborted", "committed2"))

	// A transaction left open: read_committed stops at the last stable
	// offset, before it; read_uncommitted reads it.
	txn("open", 2, kgo.TryCommit, false)
	check("read_committed", want("committed1", "committed2"))
	check("read_uncommitted", want("committed1", "aborted", "committed2", "open"))
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("end open: %v", err)
	}
	check("read_committed", want("committed1", "committed2", "open"))
}
