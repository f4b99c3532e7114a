package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/group"
	"github.com/sluice/sluice/metadata"
	"github.com/sluice/sluice/metastore"
	"github.com/sluice/sluice/metrics"
	"github.com/sluice/sluice/offsets"
)

// newFakeClusterMetricsServer is newFakeClusterServer with metrics on;
// mod, if set, edits the config first.
func newFakeClusterMetricsServer(t *testing.T, mod func(*config.Config)) (*Server, *fakePlane, *metrics.Metrics) {
	t.Helper()
	cfg := config.Default()
	cfg.BrokerID = 1
	cfg.NumPartitions = 2
	cfg.DefaultReplicationFactor = 3
	if mod != nil {
		mod(&cfg)
	}
	fp := newFakePlane()
	m := metrics.New()
	s := newTestServer(t, &cfg, Options{
		ClusterID: "fake", AdvertisedHost: "127.0.0.1", AdvertisedPort: 9092, Metrics: m,
		controlPlane: func(s *Server) controlPlane { fp.s = s; return fp },
	})
	return s, fp, m
}

// gather returns the registry's families by name.
func gather(t *testing.T, m *metrics.Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out
}

// series returns the value of the series of family name whose labels
// include want, and whether there is one.
func series(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, mt := range f.Metric {
		have := map[string]string{}
		for _, l := range mt.Label {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case mt.Counter != nil:
			return mt.Counter.GetValue(), true
		case mt.Gauge != nil:
			return mt.Gauge.GetValue(), true
		}
		return 0, true
	}
	return 0, false
}

// produceOne produces one record to topic-p with acks and returns the
// partition's error code.
func produceOne(t *testing.T, s *Server, topic string, p int32, acks int16, timeoutMs int32) int16 {
	t.Helper()
	return mustCall(t, s, 9, produceReq(topic, p, acks, timeoutMs)).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
}

// stopReplicas sends StopReplica (delete) for topic's partitions.
func stopReplicas(t *testing.T, s *Server, topic string, parts ...int32) {
	t.Helper()
	sreq := kmsg.NewPtrStopReplicaRequest()
	sreq.ControllerID, sreq.ControllerEpoch, sreq.BrokerEpoch = 2, 5, fakeBrokerEpoch
	st := kmsg.NewStopReplicaRequestTopic()
	st.Topic = topic
	for _, p := range parts {
		ps := kmsg.NewStopReplicaRequestTopicPartitionState()
		ps.Partition, ps.LeaderEpoch, ps.Delete = p, -2, true
		st.PartitionStates = append(st.PartitionStates, ps)
	}
	sreq.Topics = append(sreq.Topics, st)
	for _, rp := range mustCall(t, s, 3, sreq).(*kmsg.StopReplicaResponse).Partitions {
		if rp.ErrorCode != 0 {
			t.Fatalf("StopReplica %s-%d: %s", topic, rp.Partition, code(rp.ErrorCode))
		}
	}
}

// TestMetricsStopReplicaRemovesTopic: in cluster mode a deleted topic
// leaves through StopReplica; its per-topic series go with its last local
// replica, not before.
func TestMetricsStopReplicaRemovesTopic(t *testing.T) {
	s, fp, m := newFakeClusterMetricsServer(t, nil)
	id := fp.addTopic("t", 1, 1)
	mustCall(t, s, 5, leaderAndIsr("t", id, 0, 1, 1, 5))
	mustCall(t, s, 5, leaderAndIsr("t", id, 1, 1, 1, 5))
	if c := produceOne(t, s, "t", 0, 1, 5000); c != 0 {
		t.Fatalf("produce: %s", code(c))
	}
	in := map[string]string{"topic": "t"}
	if _, ok := series(gather(t, m), "kafka_server_brokertopicmetrics_messagesin_total", in); !ok {
		t.Fatal("no messagesin series for t after a produce")
	}
	fp.deleteTopic(t.Context(), "t")
	stopReplicas(t, s, "t", 0)
	if _, ok := series(gather(t, m), "kafka_server_brokertopicmetrics_messagesin_total", in); !ok {
		t.Fatal("t's series removed while t-1 is still here")
	}
	stopReplicas(t, s, "t", 1)
	if _, ok := series(gather(t, m), "kafka_server_brokertopicmetrics_messagesin_total", in); ok {
		t.Fatal("t's series still exported after StopReplica deleted its last replica here")
	}
}

// TestMetricsProduceCountsAppendedOnISRTimeout: an acks=all produce whose
// records were appended here but whose wait for the ISR timed out still
// counts its records in MessagesIn (Kafka counts at the local append).
func TestMetricsProduceCountsAppendedOnISRTimeout(t *testing.T) {
	s, fp, m := newFakeClusterMetricsServer(t, nil)
	id := fp.addTopic("t", 1)
	mustCall(t, s, 5, leaderAndIsr("t", id, 0, 1, 1, 5)) // ISR {1,2,3}: nobody fetches
	if c := produceOne(t, s, "t", 0, -1, 50); c != kerr.RequestTimedOut.Code {
		t.Fatalf("acks=all produce without followers: %s, want REQUEST_TIMED_OUT", code(c))
	}
	if end := s.rm.Partition("t", 0).Log().EndOffset(); end != 1 {
		t.Fatalf("log end %d: the record was not appended", end)
	}
	fams := gather(t, m)
	for _, topic := range []string{"t", ""} {
		if v, _ := series(fams, "kafka_server_brokertopicmetrics_messagesin_total", map[string]string{"topic": topic}); v != 1 {
			t.Errorf("messagesin{topic=%q} = %v, want 1", topic, v)
		}
		if v, _ := series(fams, "kafka_server_brokertopicmetrics_bytesin_total", map[string]string{"topic": topic}); v <= 0 {
			t.Errorf("bytesin{topic=%q} = %v, want > 0", topic, v)
		}
		if v, _ := series(fams, "kafka_server_brokertopicmetrics_failedproducerequests_total", map[string]string{"topic": topic}); v != 0 {
			t.Errorf("failedproducerequests{topic=%q} = %v, want 0", topic, v)
		}
	}
}

// TestMetricsExportedGroupsBounded: at most maxExportedGroups groups are
// exported, those with members first, so that empty groups minted by a
// client cannot push live ones out.
func TestMetricsExportedGroupsBounded(t *testing.T) {
	var gs []group.GroupStats
	for i := range maxExportedGroups + 5 {
		gs = append(gs, group.GroupStats{Name: fmt.Sprintf("a%05d", i)})
	}
	gs = append(gs, group.GroupStats{Name: "zz-live", Members: 1})
	out := exportedGroups(gs)
	if len(out) != maxExportedGroups {
		t.Fatalf("%d groups exported, want %d", len(out), maxExportedGroups)
	}
	if out[0].Name != "zz-live" {
		t.Errorf("first exported group %q, want the one with members", out[0].Name)
	}
	if out[1].Name != "a00000" || out[len(out)-1].Name != fmt.Sprintf("a%05d", maxExportedGroups-2) {
		t.Errorf("exported %q..%q: not by name after the live ones", out[1].Name, out[len(out)-1].Name)
	}
}

// leaderStub serves a single-node Server on loopback as broker 2 of the
// fake cluster, holding topic with records records in partition 0, and
// points the fake cluster's broker 2 at it.
func leaderStub(t *testing.T, fp *fakePlane, topic string, records int) {
	t.Helper()
	ls := newTestServer(t, nil, Options{ClusterID: "leader"})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go ls.Serve(ln)
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, 1, 1
	req.Topics = append(req.Topics, rt)
	mustCall(t, ls, 4, req)
	for range records {
		if c := produceOne(t, ls, topic, 0, 1, 5000); c != 0 {
			t.Fatalf("produce to the leader stub: %s", code(c))
		}
	}
	fp.mu.Lock()
	fp.live[1] = metadata.Broker{ID: 2, Host: "127.0.0.1", Port: int32(ln.Addr().(*net.TCPAddr).Port)}
	fp.mu.Unlock()
}

// leadOffsetsTopic makes s the leader, with itself the only in-sync
// replica, of a one-partition __consumer_offsets in the fake cluster, and
// waits for that partition to load: s then coordinates every group.
func leadOffsetsTopic(t *testing.T, s *Server, fp *fakePlane) {
	t.Helper()
	id := fp.addTopic(offsets.Topic, 1)
	req := leaderAndIsr(offsets.Topic, id, 0, 1, 1, 5)
	ps := &req.TopicStates[0].PartitionStates[0]
	ps.ISR, ps.Replicas = []int32{1}, []int32{1}
	mustCall(t, s, 4, req)
	s.offsets.OnRole(0, true) // what zkPlane.roleChanged does; the fake only records roles
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.offsets.WaitLoaded(ctx, 0); err != nil {
		t.Fatalf("load %s-0: %v", offsets.Topic, err)
	}
}

// commitOffset commits offset for group on topic-p through OffsetCommit.
func commitOffset(t *testing.T, s *Server, groupID, topic string, p int32, offset int64) {
	t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation = groupID, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = p, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := mustCall(t, s, 8, req).(*kmsg.OffsetCommitResponse)
	if c := resp.Topics[0].Partitions[0].ErrorCode; c != 0 {
		t.Fatalf("OffsetCommit: %s", code(c))
	}
}

// TestMetricsLagOfFollowedPartitionFromLeader: the lag of a partition this
// broker only follows is measured against the leader's high watermark,
// not the follower's (which trails, here by everything).
func TestMetricsLagOfFollowedPartitionFromLeader(t *testing.T) {
	s, fp, m := newFakeClusterMetricsServer(t, nil)
	id := fp.addTopic("t", 2)
	leaderStub(t, fp, "t", 3)
	mustCall(t, s, 5, leaderAndIsr("t", id, 0, 2, 1, 5)) // we follow t-0
	if p := s.rm.Partition("t", 0); p == nil || p.IsLeader() {
		t.Fatal("no follower replica of t-0 here")
	}
	leadOffsetsTopic(t, s, fp)
	commitOffset(t, s, "g", "t", 0, 1)
	fams := gather(t, m)
	lag, ok := series(fams, "kafka_consumergroup_lag", map[string]string{"consumergroup": "g", "topic": "t", "partition": "0"})
	if !ok || lag != 2 {
		t.Fatalf("lag of g on t-0 = %v (exported %v), want 2: the leader's high watermark 3 minus 1", lag, ok)
	}
}

// TestMetricsRemoteEndsLookupCost: the leaders' ends of many partitions of
// one topic cost one lookup of the topic per scrape, not one per
// partition (each copies the topic's partitions: quadratic).
func TestMetricsRemoteEndsLookupCost(t *testing.T) {
	s, fp, _ := newFakeClusterMetricsServer(t, nil)
	leaders := make([]int32, 50)
	for i := range leaders {
		leaders[i] = 2
	}
	fp.addTopic("wide", leaders...)
	var tps []metastore.TopicPartition
	for i := range leaders {
		tps = append(tps, metastore.TopicPartition{Topic: "wide", Partition: int32(i)})
	}
	fp.mu.Lock()
	fp.partitionsCalls = 0
	fp.mu.Unlock()
	var r remoteEnds
	defer r.close()
	r.lookup(s, tps) // broker 2's fake address does not answer: no ends
	fp.mu.Lock()
	calls := fp.partitionsCalls
	fp.mu.Unlock()
	if calls != 1 {
		t.Errorf("%d partitions() lookups for 50 partitions of one topic, want 1", calls)
	}
}

// TestMetricsRemoteEndsPrunesConns: the connection to a leader's address
// is closed and dropped once no broker in the metadata has that address.
func TestMetricsRemoteEndsPrunesConns(t *testing.T) {
	s, fp, _ := newFakeClusterMetricsServer(t, nil)
	fp.addTopic("t", 2)
	leaderStub(t, fp, "t", 1)
	addr := fp.brokers()[1].Addr()
	var r remoteEnds
	defer r.close()
	tps := []metastore.TopicPartition{{Topic: "t", Partition: 0}}
	if got := r.lookup(s, tps); got[tps[0]] != 1 {
		t.Fatalf("lookup = %v, want t-0 at 1", got)
	}
	if r.conns[addr] == nil {
		t.Fatalf("no connection kept to the leader at %s", addr)
	}
	fp.mu.Lock()
	fp.live[1].Port = 1 // broker 2 moved
	fp.mu.Unlock()
	r.lookup(s, tps)
	if c, ok := r.conns[addr]; ok {
		t.Fatalf("connection to the old address %s still kept (%p)", addr, c)
	}
}

// failStore wraps a Store so that a test can fail a log: its logs report
// the failure set for them through Failure, as a segment log does after a
// storage error.
type failStore struct {
	engine.Store
	mu     sync.Mutex
	failed map[engine.PartitionID]error
}

type failLog struct {
	engine.Log
	id engine.PartitionID
	st *failStore
}

func (l failLog) Failure() error {
	l.st.mu.Lock()
	defer l.st.mu.Unlock()
	return l.st.failed[l.id]
}

func (s *failStore) CreateLog(id engine.PartitionID, cfg engine.LogConfig) (engine.Log, error) {
	l, err := s.Store.CreateLog(id, cfg)
	if err != nil {
		return nil, err
	}
	return failLog{l, id, s}, nil
}

func (s *failStore) OpenLog(id engine.PartitionID, cfg engine.LogConfig) (engine.Log, error) {
	l, err := s.Store.OpenLog(id, cfg)
	if err != nil {
		return nil, err
	}
	return failLog{l, id, s}, nil
}

func (s *failStore) fail(id engine.PartitionID, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failed[id] = err
}

// TestMetricsOfflineCountsFailedLogs: a replica whose log failed is
// offline in the gauges as in /readyz.
func TestMetricsOfflineCountsFailedLogs(t *testing.T) {
	dir := t.TempDir()
	meta, err := metastore.Open(filepath.Join(dir, "meta"), metastore.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	mem, err := engine.Open("memory", engine.Options{Dir: filepath.Join(dir, "logs")})
	if err != nil {
		t.Fatal(err)
	}
	store := &failStore{Store: mem, failed: map[engine.PartitionID]error{}}
	m := metrics.New()
	s, err := New(Options{Config: config.Default(), Logger: slog.New(slog.DiscardHandler), Meta: meta, Store: store, ClusterID: "offline", Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Close()
		mem.Close()
		meta.Close()
	})
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "t", 2, 1
	req.Topics = append(req.Topics, rt)
	mustCall(t, s, 4, req)
	fams := gather(t, m)
	for _, name := range []string{"kafka_server_replicamanager_offlinereplicacount", "kafka_controller_kafkacontroller_offlinepartitionscount"} {
		if v, ok := series(fams, name, nil); !ok || v != 0 {
			t.Fatalf("%s = %v (%v) before any failure, want 0", name, v, ok)
		}
	}
	store.fail(engine.PartitionID{Topic: "t", Partition: 0}, errors.New("injected: write failed"))
	if rd := s.Readiness(); rd.OfflineCount != 1 {
		t.Fatalf("readiness: %d offline, want 1", rd.OfflineCount)
	}
	fams = gather(t, m)
	for _, name := range []string{"kafka_server_replicamanager_offlinereplicacount", "kafka_controller_kafkacontroller_offlinepartitionscount"} {
		if v, _ := series(fams, name, nil); v != 1 {
			t.Errorf("%s = %v with t-0's log failed, want 1 (as /readyz)", name, v)
		}
	}
}

// TestRequestPoolMetrics: the request memory pool's gauges (Kafka's
// SocketServer MemoryPoolUsed and MemoryPoolAvailable) follow what the pool
// lends, read at scrape time; before Serve there is no pool and the used
// bytes are 0; an unbounded pool has no available series.
func TestRequestPoolMetrics(t *testing.T) {
	const used, avail = "kafka_network_socketserver_memorypoolused", "kafka_network_socketserver_memorypoolavailable"
	for _, limit := range []int64{4 << 20, -1} {
		t.Run(strconv.FormatInt(limit, 10), func(t *testing.T) {
			s, _, m := newFakeClusterMetricsServer(t, func(c *config.Config) { c.QueuedMaxRequestBytes = limit })
			if v, ok := series(gather(t, m), used, nil); !ok || v != 0 {
				t.Fatalf("before Serve: used %v (%v), want 0", v, ok)
			}
			s.limits.init(&s.cfg, slog.New(slog.DiscardHandler))
			p := s.limits.pool.Load()
			if err := p.acquire(1<<20, time.Now().Add(time.Second)); err != nil {
				t.Fatal(err)
			}
			fams := gather(t, m)
			if v, _ := series(fams, used, nil); v != 1<<20 {
				t.Errorf("used %v, want %d", v, 1<<20)
			}
			v, ok := series(fams, avail, nil)
			switch {
			case limit > 0 && (!ok || v != float64(limit-1<<20)):
				t.Errorf("available %v (%v), want %d", v, ok, limit-1<<20)
			case limit <= 0 && ok:
				t.Errorf("unbounded pool: available %v, want no series", v)
			}
			if st := s.Stats(); st.RequestPoolUsed != 1<<20 {
				t.Errorf("Stats().RequestPoolUsed %d, want %d", st.RequestPoolUsed, 1<<20)
			}
			p.release(1 << 20)
			if v, _ := series(gather(t, m), used, nil); v != 0 {
				t.Errorf("after release: used %v, want 0", v)
			}
		})
	}
}
