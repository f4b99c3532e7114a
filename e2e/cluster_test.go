package e2e

// Cluster tests: a real ZooKeeper (internal/zktest) and three `sluice serve`
// processes with zookeeper.connect set, driven by kcat and franz-go. Each
// test bounds every wait; none asserts on timing (failover times are
// logged).

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/internal/zktest"
)

// testCluster is ZooKeeper plus brokers 1..n.
type testCluster struct {
	t       *testing.T
	zk      *zktest.Server
	brokers map[int32]*brokerProc
	// clientOpts are added to every client the helpers make (TLS and SASL
	// for a secured cluster).
	clientOpts []kgo.Opt
}

// newClient makes a client with c.clientOpts and opts.
func (c *testCluster) newClient(opts ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(append(slices.Clone(c.clientOpts), opts...)...)
}

// startCluster starts ZooKeeper and n brokers (ids 1..n) with extra
// --set values, and waits until every broker's metadata lists all n.
func startCluster(t *testing.T, n int, sets ...string) *testCluster {
	t.Helper()
	return startClusterWith(t, n, nil, sets...)
}

// startClusterWith is startCluster with client options for every client
// the helpers make (a secured cluster's TLS and SASL).
func startClusterWith(t *testing.T, n int, clientOpts []kgo.Opt, sets ...string) *testCluster {
	t.Helper()
	zk := zktest.Start(t)
	c := &testCluster{t: t, zk: zk, brokers: map[int32]*brokerProc{}, clientOpts: clientOpts}
	for id := int32(1); id <= int32(n); id++ {
		dir := filepath.Join(t.TempDir(), "broker-"+strconv.Itoa(int(id)))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		all := append([]string{
			"broker.id=" + strconv.Itoa(int(id)),
			"zookeeper.connect=" + zk.Addr() + "/sluice",
			"zookeeper.session.timeout.ms=3000",
			"group.initial.rebalance.delay.ms=0",
		}, sets...)
		c.brokers[id] = startBroker(t, dir, all...)
	}
	c.waitBrokers(n, 30*time.Second)
	return c
}

// seeds returns the addresses of the brokers that are running.
func (c *testCluster) seeds() []string {
	var out []string
	for id := int32(1); id <= int32(len(c.brokers)); id++ {
		if b := c.brokers[id]; b.cmd != nil {
			out = append(out, b.addr)
		}
	}
	return out
}

func (c *testCluster) admin() (*kadm.Client, *kgo.Client) {
	cl, err := c.newClient(kgo.SeedBrokers(c.seeds()...))
	if err != nil {
		c.t.Fatal(err)
	}
	return kadm.NewClient(cl), cl
}

// waitBrokers waits until every running broker's metadata lists n
// brokers and a controller, and names the same cluster id (/cluster/id).
func (c *testCluster) waitBrokers(n int, within time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for {
		views := c.views()
		ok := len(views) > 0
		for _, v := range views {
			ok = ok && v.err == nil && v.brokers == n && v.controller >= 0 && v.clusterID != "" && v.clusterID == views[0].clusterID
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("timed out after %v waiting for %d brokers in every broker's metadata\n%s\n%s", within, n, c.metadataViews(), c.logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitFor polls cond every 100 ms until it holds or within passes.
func (c *testCluster) waitFor(within time.Duration, what string, cond func(*kadm.Client) bool) {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for {
		// A fresh client every time: one made while brokers were starting
		// can keep a stale view.
		adm, cl := c.admin()
		ok := cond(adm)
		cl.Close()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("timed out after %v waiting for %s\n%s\n%s", within, what, c.metadataViews(), c.logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// partition returns the metadata of topic's partition p as a running
// broker sees it.
func (c *testCluster) partition(topic string, p int32) (kadm.PartitionDetail, bool) {
	adm, cl := c.admin()
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m, err := adm.Metadata(ctx, topic)
	if err != nil {
		return kadm.PartitionDetail{}, false
	}
	pd, ok := m.Topics[topic].Partitions[p]
	return pd, ok && pd.Err == nil
}

// createTopic creates topic and waits until its partitions have a leader
// and a full ISR.
func (c *testCluster) createTopic(topic string, partitions int32, rf int16, configs map[string]*string) {
	c.t.Helper()
	adm, cl := c.admin()
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := adm.CreateTopic(ctx, partitions, rf, configs, topic)
	if err != nil || res.Err != nil {
		c.t.Fatalf("create %s: %v %v", topic, err, res.Err)
	}
	for p := int32(0); p < partitions; p++ {
		c.waitFor(30*time.Second, fmt.Sprintf("%s-%d online with a full ISR", topic, p), func(*kadm.Client) bool {
			pd, ok := c.partition(topic, p)
			return ok && pd.Leader >= 0 && len(pd.ISR) == int(rf)
		})
	}
}

// view is what one broker answers to Metadata.
type view struct {
	id              int32
	controller      int32
	brokers, topics int
	clusterID       string
	hosts           []string // the brokers' advertised hosts
	err             error
}

// views asks each running broker for its metadata, with a fresh client
// each (a client made while brokers start can keep a stale view).
func (c *testCluster) views() []view {
	var out []view
	for id := int32(1); id <= int32(len(c.brokers)); id++ {
		bp := c.brokers[id]
		if bp.cmd == nil {
			continue
		}
		v := view{id: id}
		cl, err := c.newClient(kgo.SeedBrokers(bp.addr))
		if err != nil {
			c.t.Fatal(err)
		}
		req := kmsg.NewPtrMetadataRequest()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := req.RequestWith(ctx, cl)
		cancel()
		cl.Close()
		if v.err = err; err == nil {
			v.controller, v.brokers, v.topics = resp.ControllerID, len(resp.Brokers), len(resp.Topics)
			for _, b := range resp.Brokers {
				v.hosts = append(v.hosts, b.Host)
			}
			if resp.ClusterID != nil {
				v.clusterID = *resp.ClusterID
			}
		}
		out = append(out, v)
	}
	return out
}

// metadataViews describes what each running broker answers to Metadata.
func (c *testCluster) metadataViews() string {
	var b strings.Builder
	for _, v := range c.views() {
		fmt.Fprintf(&b, "broker %d metadata: cluster %s, controller %d, %d brokers, %d topics, err %v\n", v.id, v.clusterID, v.controller, v.brokers, v.topics, v.err)
	}
	return b.String()
}

// logs returns every broker's log tail, for failure messages.
func (c *testCluster) logs() string {
	var b strings.Builder
	for id := int32(1); id <= int32(len(c.brokers)); id++ {
		text := c.brokers[id].logText()
		if len(text) > 6000 {
			text = text[len(text)-6000:]
		}
		fmt.Fprintf(&b, "--- broker %d log tail ---\n%s\n", id, text)
	}
	return b.String()
}

// TestClusterKcat: kcat sees three brokers, leaders and ISRs, and produces
// and consumes through any bootstrap broker.
func TestClusterKcat(t *testing.T) {
	t.Parallel()
	kcat := need(t, "kcat")
	c := startCluster(t, 3)
	c.createTopic("kc", 3, 3, nil)

	out, stderr, err := run(t, 30*time.Second, "", kcat, "-L", "-b", c.brokers[2].addr, "-t", "kc")
	if err != nil {
		t.Fatalf("kcat -L: %v\n%s", err, stderr)
	}
	t.Logf("kcat -L:\n%s", out)
	if !strings.Contains(out, "3 brokers:") {
		t.Fatalf("kcat -L does not list 3 brokers:\n%s", out)
	}
	for id := 1; id <= 3; id++ {
		if !strings.Contains(out, fmt.Sprintf("broker %d at %s", id, c.brokers[int32(id)].addr)) {
			t.Errorf("kcat -L does not show broker %d at %s", id, c.brokers[int32(id)].addr)
		}
	}
	if n := strings.Count(out, "isrs: "); n != 3 {
		t.Fatalf("kcat -L shows %d partitions with ISRs, want 3:\n%s", n, out)
	}

	var input strings.Builder
	for i := range 300 {
		fmt.Fprintf(&input, "k%d:v%d\n", i, i)
	}
	if _, stderr, err := run(t, 30*time.Second, input.String(), kcat, "-P", "-b", c.brokers[1].addr, "-t", "kc", "-K:", "-X", "acks=all"); err != nil {
		t.Fatalf("kcat -P: %v\n%s\n%s", err, stderr, c.logs())
	}
	for _, via := range []int32{1, 2, 3} {
		out, stderr, err := run(t, 30*time.Second, "", kcat, "-C", "-b", c.brokers[via].addr, "-t", "kc", "-e", "-q", "-f", "%k=%s\n")
		if err != nil {
			t.Fatalf("kcat -C via broker %d: %v\n%s", via, err, stderr)
		}
		got := lines(out)
		if len(got) != 300 {
			t.Fatalf("kcat -C via broker %d: %d records, want 300\n%s", via, len(got), c.logs())
		}
		seen := map[string]bool{}
		for _, l := range got {
			seen[l] = true
		}
		for i := range 300 {
			if !seen[fmt.Sprintf("k%d=v%d", i, i)] {
				t.Fatalf("via broker %d: record k%d missing", via, i)
			}
		}
	}
}

// TestClusterLeaderKill: RF 3, min.insync.replicas 2; an idempotent
// acks=all producer writes 200k records while the partition leader is
// SIGKILLed.
// Every acknowledged record is consumed afterwards, in order, exactly
// once.
func TestClusterLeaderKill(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3)
	two := "2"
	c.createTopic("ha", 1, 3, map[string]*string{"min.insync.replicas": &two})
	pd := c.mustPartition("ha", 0)
	leader := pd.Leader
	t.Logf("leader of ha-0 is broker %d, ISR %v", leader, pd.ISR)

	const total = 200000 // the scale; small values keep it near 20 s
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(c.seeds()...),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic("ha"),
		kgo.ProducerLinger(2*time.Millisecond),
		kgo.MaxBufferedRecords(5000),
		kgo.RetryTimeout(60*time.Second),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	type ack struct {
		seq    int
		offset int64
		at     time.Time
	}
	acks := make(chan ack, total)
	fails := make(chan error, total)
	// Generous: 200k acks=all records, a failover and a full consume on a
	// shared, loaded CI machine.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Second)
	defer cancel()
	var killedAt time.Time
	killed := false
	for i := range total {
		if i == total/3 && !killed {
			// Let some of the first third be acknowledged first.
			for len(acks) < total/6 && ctx.Err() == nil {
				time.Sleep(time.Millisecond)
			}
			c.brokers[leader].kill()
			killedAt, killed = time.Now(), true
			t.Logf("SIGKILLed leader %d after %d acks", leader, len(acks))
		}
		seq := i
		cl.Produce(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("%09d", seq))}, func(r *kgo.Record, err error) {
			if err != nil {
				fails <- err
				return
			}
			acks <- ack{seq, r.Offset, time.Now()}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatalf("flush: %v (%d acked)\n%s", err, len(acks), c.logs())
	}
	close(acks)
	close(fails)
	acked := map[int]int64{}
	var firstAfter time.Time
	for a := range acks {
		acked[a.seq] = a.offset
		if a.at.After(killedAt) && (firstAfter.IsZero() || a.at.Before(firstAfter)) && a.seq >= total/3 {
			firstAfter = a.at
		}
	}
	nfail := 0
	for err := range fails {
		if nfail == 0 {
			t.Logf("first produce failure: %v", err)
		}
		nfail++
	}
	t.Logf("acknowledged %d of %d records (%d failed); first record sent after the kill acknowledged %v after it",
		len(acked), total, nfail, firstAfter.Sub(killedAt))
	if len(acked) == 0 {
		t.Fatal("nothing acknowledged")
	}
	pd, _ = c.partition("ha", 0)
	t.Logf("after failover: leader %d, ISR %v", pd.Leader, pd.ISR)

	// Consume everything from the start through the survivors.
	cons, err := c.newClient(kgo.SeedBrokers(c.seeds()...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"ha": {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	adm := kadm.NewClient(cons)
	ends, err := adm.ListEndOffsets(ctx, "ha")
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup("ha", 0)
	t.Logf("high watermark %d", end.Offset)
	var got []int
	var offsets []int64
	for int64(len(got)) < end.Offset && ctx.Err() == nil {
		fs := cons.PollFetches(ctx)
		fs.EachError(func(_ string, _ int32, err error) { t.Logf("fetch error: %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			n, _ := strconv.Atoi(string(r.Value))
			got = append(got, n)
			offsets = append(offsets, r.Offset)
		})
	}
	if int64(len(got)) != end.Offset {
		t.Fatalf("consumed %d records, high watermark %d", len(got), end.Offset)
	}
	seen := map[int]int64{}
	for i, n := range got {
		if prev, dup := seen[n]; dup {
			t.Fatalf("record %d consumed twice (offsets %d and %d)", n, prev, offsets[i])
		}
		seen[n] = offsets[i]
		if i > 0 && n <= got[i-1] {
			t.Fatalf("out of order at offset %d: %d after %d", offsets[i], n, got[i-1])
		}
	}
	var missing []int
	for seq, off := range acked {
		o, ok := seen[seq]
		if !ok {
			missing = append(missing, seq)
		} else if o != off {
			t.Errorf("record %d acknowledged at offset %d, consumed at %d", seq, off, o)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Fatalf("%d acknowledged records lost, first %v", len(missing), missing[:min(10, len(missing))])
	}
	t.Logf("all %d acknowledged records consumed once, in order (%d records in the log)", len(acked), len(got))
}
