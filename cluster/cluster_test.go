package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/internal/zktest"
)

// fakeNet stands in for the network between brokers: it records every
// request per destination broker, applies UpdateMetadata to that broker's
// MetadataCache, and routes ControlledShutdown to the destination Node.
// Requests to a broker marked down fail, and so do those to a broker the
// net does not know (one a test registered in ZooKeeper by hand, or one
// whose Node is not started yet), as a connection refused would.
type fakeNet struct {
	mu     sync.Mutex
	reqs   map[int32][]kmsg.Request
	caches map[int32]*MetadataCache
	nodes  map[int32]*Node
	down   map[int32]bool
}

func newFakeNet() *fakeNet {
	return &fakeNet{reqs: map[int32][]kmsg.Request{}, caches: map[int32]*MetadataCache{},
		nodes: map[int32]*Node{}, down: map[int32]bool{}}
}

func (f *fakeNet) send(ctx context.Context, to int32, addr string, req kmsg.Request) (kmsg.Response, error) {
	f.mu.Lock()
	if f.down[to] {
		f.mu.Unlock()
		return nil, fmt.Errorf("fake: broker %d down", to)
	}
	f.reqs[to] = append(f.reqs[to], req)
	cache, node := f.caches[to], f.nodes[to]
	f.mu.Unlock()
	switch r := req.(type) {
	case *kmsg.UpdateMetadataRequest:
		if cache == nil {
			return nil, fmt.Errorf("fake: no broker %d", to)
		}
		cache.Apply(r)
		return &kmsg.UpdateMetadataResponse{Version: r.Version}, nil
	case *kmsg.LeaderAndISRRequest:
		return &kmsg.LeaderAndISRResponse{Version: r.Version}, nil
	case *kmsg.StopReplicaRequest:
		return &kmsg.StopReplicaResponse{Version: r.Version}, nil
	case *kmsg.ControlledShutdownRequest:
		if node == nil {
			return nil, fmt.Errorf("fake: broker %d not started", to)
		}
		resp := &kmsg.ControlledShutdownResponse{Version: r.Version}
		rem, err := node.HandleControlledShutdown(r.BrokerID, r.BrokerEpoch)
		if err != nil {
			resp.ErrorCode = 41 // NOT_CONTROLLER; the server picks real codes
		}
		for _, tp := range rem {
			resp.PartitionsRemaining = append(resp.PartitionsRemaining, kmsg.ControlledShutdownResponsePartitionsRemaining{Topic: tp.Topic, Partition: tp.Partition})
		}
		return resp, nil
	}
	return nil, fmt.Errorf("fake: unexpected %T", req)
}

// requests returns the requests of type T sent to broker id.
func requestsTo[T kmsg.Request](f *fakeNet, id int32) []T {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []T
	for _, r := range f.reqs[id] {
		if t, ok := r.(T); ok {
			out = append(out, t)
		}
	}
	return out
}

type testCluster struct {
	t      *testing.T
	zk     *zktest.Server
	net    *fakeNet
	nodes  map[int32]*Node
	opts   func(*Options)
	client *zk.Conn
}

func testLogger() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// newTestCluster starts ZooKeeper and brokers 1..n.
func newTestCluster(t *testing.T, n int, opts func(*Options)) *testCluster {
	tc := &testCluster{t: t, zk: zktest.Start(t), net: newFakeNet(), nodes: map[int32]*Node{}, opts: opts}
	c, _, err := zk.Connect([]string{tc.zk.Addr()}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	tc.client = c
	t.Cleanup(func() {
		for _, n := range tc.nodes {
			n.Close()
		}
		c.Close()
	})
	for id := int32(1); id <= int32(n); id++ {
		tc.start(id)
	}
	return tc
}

func (tc *testCluster) options(id int32) Options {
	o := Options{BrokerID: id, Host: "127.0.0.1", Port: 9000 + id, ZkConnect: tc.zk.Addr() + "/sluice",
		SessionTimeout: 6 * time.Second, Logger: testLogger().With("node", id), Send: tc.net.send,
		RequestTimeout: 5 * time.Second}
	if tc.opts != nil {
		tc.opts(&o)
	}
	return o
}

func (tc *testCluster) start(id int32) *Node {
	tc.t.Helper()
	tc.net.mu.Lock()
	tc.net.caches[id] = NewMetadataCache()
	tc.net.down[id] = false
	tc.net.mu.Unlock()
	n, err := Start(tc.options(id))
	if err != nil {
		tc.t.Fatalf("start broker %d: %v", id, err)
	}
	tc.net.mu.Lock()
	tc.net.nodes[id] = n
	tc.net.mu.Unlock()
	tc.nodes[id] = n
	return n
}

// stop closes broker id without a controlled shutdown.
func (tc *testCluster) stop(id int32) {
	tc.net.mu.Lock()
	tc.net.down[id] = true
	tc.net.mu.Unlock()
	tc.nodes[id].Close()
	delete(tc.nodes, id)
}

func (tc *testCluster) cache(id int32) *MetadataCache {
	tc.net.mu.Lock()
	defer tc.net.mu.Unlock()
	return tc.net.caches[id]
}

// waitFor polls cond for up to 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// controller waits until exactly one live node is controller and all agree.
func (tc *testCluster) controller() *Node {
	tc.t.Helper()
	var ctl *Node
	waitFor(tc.t, "one controller", func() bool {
		ctl = nil
		count := 0
		for _, n := range tc.nodes {
			if n.IsController() {
				ctl = n
				count++
			}
		}
		if count != 1 {
			return false
		}
		for _, n := range tc.nodes {
			if n.ControllerID() != ctl.BrokerID() {
				return false
			}
		}
		return true
	})
	return ctl
}

func (tc *testCluster) anyNonController(ctl *Node) *Node {
	for _, id := range slices.Sorted(func(yield func(int32) bool) {
		for id := range tc.nodes {
			if !yield(id) {
				return
			}
		}
	}) {
		if id != ctl.BrokerID() {
			return tc.nodes[id]
		}
	}
	tc.t.Fatal("no non-controller node")
	return nil
}

func (tc *testCluster) epoch() int32 {
	b, _, err := tc.client.Get("/sluice" + controllerEpochPath)
	if err != nil {
		tc.t.Fatal(err)
	}
	e, _ := strconv.Atoi(string(b))
	return int32(e)
}

func (tc *testCluster) state(topic string, p int32) (PartitionState, bool) {
	tc.t.Helper()
	path := partitionStatePath(topic, p)
	b, _, err := tc.client.Get("/sluice" + path)
	if errors.Is(err, zk.ErrNoNode) {
		return PartitionState{}, false
	}
	if err != nil {
		tc.t.Fatal(err)
	}
	st, err := decodePartitionState(path, b)
	if err != nil {
		tc.t.Fatal(err)
	}
	return st, true
}

// createTopic creates a topic through n and waits until every partition
// has a state and every live broker's cache knows it.
func (tc *testCluster) createTopic(n *Node, name string, parts, rf int) [][]int32 {
	tc.t.Helper()
	if err := n.CreateTopic(context.Background(), name, parts, rf, map[string]string{"retention.ms": "60000"}, [16]byte{}); err != nil {
		tc.t.Fatal(err)
	}
	_, as, err := n.TopicAssignment(name)
	if err != nil {
		tc.t.Fatal(err)
	}
	waitFor(tc.t, "partition states of "+name, func() bool {
		for p := range as {
			if _, ok := tc.state(name, int32(p)); !ok {
				return false
			}
		}
		return true
	})
	for id := range tc.nodes {
		waitFor(tc.t, fmt.Sprintf("broker %d cache of %s", id, name), func() bool {
			return len(tc.cache(id).Partitions(name)) == parts
		})
	}
	return as
}

func TestRegistrationAndDuplicateID(t *testing.T) {
	tc := newTestCluster(t, 1, nil)
	b, stat, err := tc.client.Get("/sluice/brokers/ids/1")
	if err != nil {
		t.Fatal(err)
	}
	if stat.EphemeralOwner == 0 {
		t.Error("registration is not ephemeral")
	}
	br, err := decodeBroker(1, b, stat.Czxid)
	if err != nil || br.Addr() != "127.0.0.1:9001" || tc.nodes[1].BrokerEpoch() != stat.Czxid {
		t.Fatalf("registration %s: %+v %v", b, br, err)
	}
	for _, p := range persistentPaths {
		if ok, _, _ := tc.client.Exists("/sluice" + p); !ok {
			t.Errorf("%s missing", p)
		}
	}
	_, err = Start(tc.options(1))
	if !errors.Is(err, ErrBrokerIDInUse) {
		t.Fatalf("duplicate id: %v", err)
	}
	t.Log(err)
}

// TestClusterID: the first broker creates /cluster/id in Kafka's format,
// the others adopt it, and a broker whose data belongs to another cluster
// is refused.
func TestClusterID(t *testing.T) {
	tc := newTestCluster(t, 2, nil)
	data, _, err := tc.client.Get("/sluice" + clusterIDPath)
	if err != nil {
		t.Fatal(err)
	}
	var zn clusterIDZNode
	if err := json.Unmarshal(data, &zn); err != nil || zn.Version != "1" || len(zn.ID) != 22 {
		t.Fatalf("/cluster/id holds %s (%v)", data, err)
	}
	for id, n := range tc.nodes {
		if n.ClusterID() != zn.ID {
			t.Fatalf("broker %d says cluster %q, /cluster/id says %q", id, n.ClusterID(), zn.ID)
		}
	}
	o := tc.options(3)
	o.ClusterID = "another-cluster-id0000"
	if n, err := Start(o); !errors.Is(err, ErrInconsistentClusterID) {
		if err == nil {
			n.Close()
		}
		t.Fatalf("broker of another cluster: %v, want ErrInconsistentClusterID", err)
	} else {
		t.Log(err)
	}
	if ok, _, _ := tc.client.Exists("/sluice/brokers/ids/3"); ok {
		t.Fatal("the refused broker registered")
	}
	o.ClusterID = zn.ID // a broker restarting with the cluster's id
	n, err := Start(o)
	if err != nil {
		t.Fatal(err)
	}
	n.Close()
}

func TestControllerElectionAndEpoch(t *testing.T) {
	tc := newTestCluster(t, 3, nil)
	ctl := tc.controller()
	e := tc.epoch()
	if e < 1 {
		t.Fatalf("epoch %d", e)
	}
	b, _, err := tc.client.Get("/sluice/controller")
	if err != nil {
		t.Fatal(err)
	}
	if id, _ := decodeControllerID(b); id != ctl.BrokerID() {
		t.Fatalf("/controller %s, controller %d", b, ctl.BrokerID())
	}
	tc.stop(ctl.BrokerID())
	ctl2 := tc.controller()
	if ctl2.BrokerID() == ctl.BrokerID() {
		t.Fatal("same controller")
	}
	if got := tc.epoch(); got != e+1 {
		t.Fatalf("epoch after re-election %d, want %d", got, e+1)
	}
}

func TestCreateTopic(t *testing.T) {
	tc := newTestCluster(t, 3, nil)
	ctl := tc.controller()
	other := tc.anyNonController(ctl)
	as := tc.createTopic(other, "orders", 6, 3)

	leaders := map[int32]int{}
	for p, rs := range as {
		if len(rs) != 3 || len(slices.Compact(slices.Sorted(slices.Values(rs)))) != 3 {
			t.Fatalf("partition %d replicas %v", p, rs)
		}
		leaders[rs[0]]++
		st, _ := tc.state("orders", int32(p))
		if st.Leader != rs[0] || !slices.Equal(st.ISR, rs) || st.LeaderEpoch != 0 || st.ControllerEpoch != tc.epoch() {
			t.Errorf("partition %d state %+v, replicas %v", p, st, rs)
		}
	}
	for id := int32(1); id <= 3; id++ {
		if leaders[id] != 2 {
			t.Errorf("broker %d is preferred leader of %d partitions: %v", id, leaders[id], as)
		}
		// Every replica got a LeaderAndIsr for each of its partitions.
		waitFor(t, "LeaderAndIsr", func() bool {
			n := 0
			for _, r := range requestsTo[*kmsg.LeaderAndISRRequest](tc.net, id) {
				for _, ts := range r.TopicStates {
					if ts.Topic == "orders" {
						for _, ps := range ts.PartitionStates {
							if ps.IsNew && r.Version == LeaderAndIsrVersion {
								n++
							}
						}
					}
				}
			}
			return n == 6
		})
		c := tc.cache(id)
		if c.ControllerID() != ctl.BrokerID() || len(c.Brokers()) != 3 {
			t.Errorf("broker %d cache: controller %d brokers %v", id, c.ControllerID(), c.Brokers())
		}
		p0, _ := c.Partition("orders", 0)
		if p0.Leader != as[0][0] || !slices.Equal(p0.Replicas, as[0]) {
			t.Errorf("broker %d cache partition 0: %+v", id, p0)
		}
	}
	id, _, _ := other.TopicAssignment("orders")
	if cid, _ := tc.cache(1).TopicID("orders"); cid != id || id == ([16]byte{}) {
		t.Errorf("topic id %x, cache %x", id, cid)
	}
	cfg, err := ctl.TopicConfigs("orders")
	if err != nil || cfg["retention.ms"] != "60000" {
		t.Errorf("configs %v %v", cfg, err)
	}
	if err := ctl.CreateTopic(context.Background(), "orders", 1, 1, nil, [16]byte{}); !errors.Is(err, ErrTopicExists) {
		t.Errorf("create again: %v", err)
	}
	if err := ctl.CreateTopic(context.Background(), "big", 1, 4, nil, [16]byte{}); !errors.Is(err, ErrInvalidReplicationFactor) {
		t.Errorf("rf 4 of 3: %v", err)
	}
	if err := ctl.SetTopicConfig(context.Background(), "orders", map[string]string{"cleanup.policy": "compact"}); err != nil {
		t.Fatal(err)
	}
	if cfg, _ := other.TopicConfigs("orders"); cfg["cleanup.policy"] != "compact" || len(cfg) != 1 {
		t.Errorf("configs after set: %v", cfg)
	}

	// More partitions come online through the controller's watch.
	if err := other.AddPartitions(context.Background(), "orders", 8); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "added partitions in caches", func() bool { return len(tc.cache(1).Partitions("orders")) == 8 })

	// Deletion: StopReplica(delete) to replicas, znodes gone, caches forget.
	if err := other.DeleteTopic(context.Background(), "orders"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "topic deleted", func() bool {
		ok1, _, _ := tc.client.Exists("/sluice/brokers/topics/orders")
		ok2, _, _ := tc.client.Exists("/sluice/admin/delete_topics/orders")
		ok3, _, _ := tc.client.Exists("/sluice/config/topics/orders")
		return !ok1 && !ok2 && !ok3 && len(tc.cache(2).Topics()) == 0
	})
	waitFor(t, "StopReplica", func() bool { return len(requestsTo[*kmsg.StopReplicaRequest](tc.net, 3)) > 0 })
	if err := other.DeleteTopic(context.Background(), "orders"); !errors.Is(err, ErrTopicNotFound) {
		t.Errorf("delete again: %v", err)
	}
}
