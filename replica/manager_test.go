package replica

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/engine"
	_ "github.com/sluice/sluice/engine/memlog"
	"github.com/sluice/sluice/metastore"
	"github.com/sluice/sluice/record"
	"github.com/sluice/sluice/replication"
)

// env is a metastore and a memory store for Managers under test.
type env struct {
	meta  *metastore.Store
	store engine.Store
	now   time.Time
}

func newEnv(t *testing.T) *env {
	t.Helper()
	dir := t.TempDir()
	meta, err := metastore.Open(filepath.Join(dir, "meta"), metastore.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	store, err := engine.Open("memory", engine.Options{Dir: filepath.Join(dir, "logs")})
	if err != nil {
		meta.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close(); meta.Close() })
	return &env{meta: meta, store: store, now: time.Now()}
}

// testConfig parses the two overrides the tests use.
func testConfig(_ string, overrides map[string]string) TopicConfig {
	tc := TopicConfig{MinISR: 1, MaxMessage: 1 << 20}
	tc.Log.RetentionMs, tc.Log.RetentionBytes = -1, -1
	tc.Log.SegmentBytes = 1 << 20
	if overrides["retention.ms"] == "1" {
		tc.Log.RetentionMs = time.Millisecond
		tc.Log.SegmentBytes = 64 // a segment per batch
	}
	if overrides["min.insync.replicas"] == "2" {
		tc.MinISR = 2
	}
	tc.Rules.MaxDecompressed = record.DecompressBound(tc.MaxMessage)
	tc.Rules.TimestampBeforeMax, tc.Rules.TimestampAfterMax = math.MaxInt64, math.MaxInt64
	return tc
}

func (e *env) manager(t *testing.T, hooks Hooks, hw bool) *Manager {
	t.Helper()
	cfg := config.Default()
	cfg.LogCleanerEnable = false
	return New(Options{
		Config: cfg, Meta: e.meta, Store: e.store, NodeID: 1,
		Logger: slog.New(slog.DiscardHandler), Now: func() time.Time { return e.now },
		TopicConfig: testConfig, Hooks: hooks, CheckpointHighWatermarks: hw,
	})
}

func (m *Manager) create(t *testing.T, name string, parts int32, configs map[string]string) *Topic {
	t.Helper()
	m.Lock()
	defer m.Unlock()
	tp, err := m.CreateTopicLocked(metastore.Topic{Name: name, ID: [16]byte{byte(len(name)), 1}, Partitions: parts, ReplicationFactor: 1, Configs: configs})
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

func logs(t *testing.T, s engine.Store) []engine.PartitionID {
	t.Helper()
	ids, err := s.ListLogs()
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(ids, func(a, b engine.PartitionID) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Partition - b.Partition)
	})
	return ids
}

// produce appends n records to p as a client would.
func produce(t *testing.T, p *Partition, n int, ts int64) {
	t.Helper()
	recs := make([]record.BuildRecord, n)
	for i := range recs {
		recs[i] = record.BuildRecord{Value: []byte("v"), Timestamp: ts}
	}
	b := record.AppendBatch(nil, record.BatchOptions{ProducerID: -1, BaseSequence: -1}, recs)
	if _, err := p.Append(context.Background(), b, 1); err != nil {
		t.Fatal(err)
	}
}

// TestSingleNodeTopics creates, grows, reconfigures and deletes a topic
// hosted wholly here, and checks the registry, the metastore and the logs
// after each step, and that earlier snapshots never change.
func TestSingleNodeTopics(t *testing.T) {
	e := newEnv(t)
	m := e.manager(t, nil, false)
	defer m.Close()

	t1 := m.create(t, "a", 2, nil)
	if m.Topic("a") != t1 || m.TopicByID(t1.ID) != t1 || m.Partition("a", 1) == nil || m.Partition("a", 2) != nil || m.Partition("b", 0) != nil {
		t.Fatalf("lookups after create: %v %v", m.Topic("a"), m.Partition("a", 1))
	}
	if got := logs(t, e.store); len(got) != 2 {
		t.Fatalf("logs after create: %v", got)
	}

	m.Lock()
	if err := m.AddPartitionsLocked(t1, 3); err != nil {
		t.Fatal(err)
	}
	m.Unlock()
	t2 := m.Topic("a")
	if len(t1.Parts) != 2 || len(t2.Parts) != 3 || t2.Parts[0] != t1.Parts[0] {
		t.Fatalf("add partitions: old snapshot %d parts, new %d", len(t1.Parts), len(t2.Parts))
	}
	if mt, err := e.meta.GetTopic("a"); err != nil || mt.Partitions != 3 || len(mt.Assignment) != 3 {
		t.Fatalf("metastore after add: %+v %v", mt, err)
	}

	m.Lock()
	if err := m.SetTopicConfigsLocked(t2, map[string]string{"retention.ms": "1"}); err != nil {
		t.Fatal(err)
	}
	m.Unlock()
	t3 := m.Topic("a")
	if t3.Config.Log.RetentionMs != time.Millisecond || t2.Config.Log.RetentionMs != -1 || t3.Meta.Configs["retention.ms"] != "1" {
		t.Fatalf("configs: new %v, old %v", t3.Config.Log.RetentionMs, t2.Config.Log.RetentionMs)
	}

	m.Lock()
	if err := m.DeleteTopicLocked(t3); err != nil {
		t.Fatal(err)
	}
	m.Unlock()
	if m.Topic("a") != nil || len(m.Topics()) != 0 || len(logs(t, e.store)) != 0 {
		t.Fatalf("after delete: topic %v, logs %v", m.Topic("a"), logs(t, e.store))
	}
	if _, err := e.meta.GetTopic("a"); !errors.Is(err, metastore.ErrNotFound) {
		t.Fatalf("metastore after delete: %v", err)
	}
}

// TestLoad reopens the topics of the metastore: a missing log is created
// empty, a stray log with no topic is deleted, records survive.
func TestLoad(t *testing.T) {
	e := newEnv(t)
	m := e.manager(t, nil, false)
	m.create(t, "kept", 1, nil)
	produce(t, m.Partition("kept", 0), 3, e.now.UnixMilli())
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.meta.PutTopic(metastore.Topic{Name: "nolog", ID: [16]byte{9}, Partitions: 1, ReplicationFactor: 1, Assignment: [][]int32{{1}}}); err != nil {
		t.Fatal(err)
	}
	stray, err := e.store.CreateLog(engine.PartitionID{Topic: "stray", Partition: 0}, engine.LogConfig{})
	if err != nil {
		t.Fatal(err)
	}
	stray.Close()

	m = e.manager(t, nil, false)
	defer m.Close()
	if err := m.Load(); err != nil {
		t.Fatal(err)
	}
	if p := m.Partition("kept", 0); p == nil || p.LogEndOffset() != 3 || !p.IsLeader() {
		t.Fatalf("kept-0 after load: %v", p)
	}
	if m.Partition("nolog", 0) == nil {
		t.Fatal("nolog-0 not created")
	}
	want := []engine.PartitionID{{Topic: "kept"}, {Topic: "nolog"}}
	if got := logs(t, e.store); !slices.Equal(got, want) {
		t.Fatalf("logs after load: %v, want %v", got, want)
	}
}

// TestApplyRetention deletes what retention.ms no longer keeps, and Start's
// loop does it on its own.
func TestApplyRetention(t *testing.T) {
	e := newEnv(t)
	m := e.manager(t, nil, false)
	defer m.Close()
	m.create(t, "r", 1, map[string]string{"retention.ms": "1"})
	p := m.Partition("r", 0)
	produce(t, p, 2, e.now.Add(-time.Hour).UnixMilli())
	produce(t, p, 1, e.now.Add(-time.Hour).UnixMilli()) // the active segment stays
	if err := m.ApplyRetention(); err != nil {
		t.Fatal(err)
	}
	if p.LogStartOffset() == 0 {
		t.Fatalf("log start %d after retention", p.LogStartOffset())
	}
}

// fakeHooks is a cluster's control plane as the Manager sees it.
type fakeHooks struct {
	mu       sync.Mutex
	assigned map[string][][]int32
	stopped  []string
	roles    []string
}

func (h *fakeHooks) ReplicaOptions(t *Topic, o replication.Options) replication.Options {
	o.MinInsyncReplicas = t.Config.MinISR
	return o
}

func (h *fakeHooks) ReplicaStopped(p *Partition) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopped = append(h.stopped, p.Topic())
}

func (h *fakeHooks) TopicAssignment(name string) ([16]byte, [][]int32, map[string]string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	a, ok := h.assigned[name]
	if !ok {
		return [16]byte{}, nil, nil, errors.New("no such topic")
	}
	return [16]byte{7}, a, map[string]string{"min.insync.replicas": "2"}, nil
}

func (h *fakeHooks) RoleChanging(p *Partition, st replication.LeaderAndIsr, controllerEpoch int32) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.roles = append(h.roles, fmt.Sprintf("%s-%d:%d@%d", p.Topic(), p.Index(), st.Leader, controllerEpoch))
}

func (h *fakeHooks) RoleChanged(p *Partition, st replication.LeaderAndIsr) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.roles = append(h.roles, fmt.Sprintf("%s-%d:%d", p.Topic(), p.Index(), st.Leader))
}

func (m *Manager) applyRole(name string, part int32, leader bool) error {
	m.Lock()
	defer m.Unlock()
	st := replication.LeaderAndIsr{Leader: 2, LeaderEpoch: 1, ISR: []int32{1, 2}, Replicas: []int32{1, 2}}
	if leader {
		st.Leader = 1
	}
	return m.BecomeLeaderOrFollowerLocked(name, [16]byte{7}, part, st, 3)
}

// TestReplicaLifecycle opens replicas as a controller names them, keeps a
// replica whose role fails unpublished, checkpoints and restores high
// watermarks, and stops and deletes replicas.
func TestReplicaLifecycle(t *testing.T) {
	e := newEnv(t)
	h := &fakeHooks{assigned: map[string][][]int32{"c": {{1, 2}, {2, 1}}}}
	m := e.manager(t, h, true)

	if err := m.applyRole("missing", 0, true); err == nil {
		t.Fatal("a replica of a topic with no assignment opened")
	}
	if err := m.applyRole("c", 5, true); !errors.Is(err, ErrUnknownPartition) {
		t.Fatalf("partition outside the assignment: %v", err)
	}
	if err := m.applyRole("c", 0, true); err != nil {
		t.Fatal(err)
	}
	tc := m.Topic("c")
	if tc == nil || len(tc.Parts) != 2 || tc.Parts[0] == nil || tc.Parts[1] != nil || !tc.Parts[0].IsLeader() {
		t.Fatalf("after LeaderAndIsr: %+v", tc)
	}
	if tc.Config.MinISR != 2 {
		t.Fatalf("configs of the assignment not applied: %+v", tc.Config)
	}
	if want := []string{"c-0:1@3", "c-0:1"}; !slices.Equal(h.roles, want) {
		t.Fatalf("hooks saw %v, want %v", h.roles, want)
	}
	// A role that fails (an epoch older than the replica's) leaves no
	// new replica behind.
	m.Lock()
	err := m.BecomeLeaderOrFollowerLocked("c", [16]byte{7}, 1, replication.LeaderAndIsr{Leader: 2, LeaderEpoch: -5, ISR: []int32{1, 2}, Replicas: []int32{1, 2}}, 3)
	m.Unlock()
	if err == nil || m.Partition("c", 1) != nil {
		t.Fatalf("failed role: %v, replica %v", err, m.Partition("c", 1))
	}

	p := m.Partition("c", 0)
	produce(t, p, 4, e.now.UnixMilli())
	// The ISR has two members: the high watermark moves once broker 2 has
	// fetched up to the end.
	if _, err := p.HandleReplicaFetch(2, 1, 4, 0, e.now); err != nil {
		t.Fatalf("follower fetch: %v", err)
	}
	hw := p.HighWatermark()
	if hw != 4 {
		t.Fatalf("high watermark %d after the follower caught up, want 4", hw)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	m = e.manager(t, h, true)
	defer m.Close()
	if err := m.applyRole("c", 0, false); err != nil {
		t.Fatal(err)
	}
	if got := m.Partition("c", 0).HighWatermark(); got != hw {
		t.Fatalf("restored high watermark %d, checkpointed %d", got, hw)
	}

	m.Lock()
	if err := m.StopReplicaLocked("c", 0, false); err != nil || m.Partition("c", 0) == nil {
		t.Fatalf("stop without delete: %v", err)
	}
	if err := m.StopReplicaLocked("c", 0, true); err != nil {
		t.Fatal(err)
	}
	m.Unlock()
	// c-1's log stays from the failed role: a log the controller names
	// is kept for its next LeaderAndIsr.
	if m.Topic("c") != nil || !slices.Equal(logs(t, e.store), []engine.PartitionID{{Topic: "c", Partition: 1}}) || len(h.stopped) != 2 {
		t.Fatalf("after StopReplica delete: topic %v, logs %v, stopped %v", m.Topic("c"), logs(t, e.store), h.stopped)
	}
}

// TestLookupsAllocateNothing guards the hot lookups: a partition by name,
// the sorted topics, the names, and a single node's leader epochs.
func TestLookupsAllocateNothing(t *testing.T) {
	e := newEnv(t)
	m := e.manager(t, nil, false)
	defer m.Close()
	for _, n := range []string{"x", "y", "z"} {
		m.create(t, n, 4, nil)
	}
	m.Topics()
	m.Topic("y").LeaderEpochs()
	allocs := testing.AllocsPerRun(100, func() {
		if m.Partition("y", 3) == nil || len(m.Topics()) != 3 || len(m.Topic("y").LeaderEpochs()) != 4 {
			t.Fatal("lookup failed")
		}
		m.EachTopicName(func(string) bool { return true })
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per lookup", allocs)
	}
}

// TestStart runs the periodic work: retention deletes on its own, the
// cleaner is fed the compacted logs; stop ends both.
func TestStart(t *testing.T) {
	e := newEnv(t)
	cfg := config.Default()
	cfg.LogRetentionCheck = time.Millisecond
	topicConfig := func(name string, o map[string]string) TopicConfig {
		tc := testConfig(name, o)
		tc.Log.Compact = o["cleanup.policy"] == "compact"
		return tc
	}
	m := New(Options{Config: cfg, Meta: e.meta, Store: e.store, NodeID: 1, Logger: slog.New(slog.DiscardHandler), TopicConfig: topicConfig})
	defer m.Close()
	m.create(t, "s", 1, map[string]string{"retention.ms": "1"})
	m.create(t, "k", 2, map[string]string{"cleanup.policy": "compact"})
	p := m.Partition("s", 0)
	produce(t, p, 2, time.Now().Add(-time.Hour).UnixMilli())
	produce(t, p, 1, time.Now().Add(-time.Hour).UnixMilli())
	stop, err := m.Start()
	if err != nil {
		t.Fatal(err)
	}
	if !m.Cleaning() {
		t.Error("log.cleaner.enable=true but no cleaner")
	}
	for deadline := time.Now().Add(10 * time.Second); p.LogStartOffset() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the retention loop deleted nothing in 10s")
		}
	}
	targets := m.cleanerTargets()
	if len(targets) != 2 || targets[0].ID.Topic != "k" || targets[1].ID.Partition != 1 {
		t.Fatalf("cleaner targets %+v, want k-0 and k-1", targets)
	}
	if ratio, last := m.CleanerSummary(m.Topic("k")); ratio != 0 || last != -1 {
		t.Fatalf("summary of an empty compacted topic: ratio %v, last cleaned %d", ratio, last)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// maintainedStore is a store with an engine.Maintainer that records its
// calls, in order, and fails each with err.
type maintainedStore struct {
	engine.Store
	err   error
	mu    sync.Mutex
	calls []string
}

func (s *maintainedStore) FlushAll() error { return s.record("flush") }

func (s *maintainedStore) CheckpointRecoveryPoints() error { return s.record("checkpoint") }

func (s *maintainedStore) record(call string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, call)
	return s.err
}

func (s *maintainedStore) recorded() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// errorLog is a slog.Handler that keeps the messages of error records.
type errorLog struct {
	mu   sync.Mutex
	msgs []string
}

func (h *errorLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *errorLog) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *errorLog) WithGroup(string) slog.Handler            { return h }

func (h *errorLog) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError {
		h.mu.Lock()
		h.msgs = append(h.msgs, r.Message)
		h.mu.Unlock()
	}
	return nil
}

func (h *errorLog) messages() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.msgs)
}

// TestFlushAndRecoveryCheckpoints: on a store that is an engine.Maintainer,
// Start flushes every log.flush.interval.ms, each flush followed by a
// recovery-point checkpoint, and checkpoints every
// log.flush.offset.checkpoint.interval.ms; a failure is logged and the
// loops go on, a closed store is no error, and stop ends the loops.
func TestFlushAndRecoveryCheckpoints(t *testing.T) {
	errBoom := errors.New("boom")
	for _, tc := range []struct {
		name        string
		flush, ckpt time.Duration
		err         error
		logged      []string // distinct error messages, sorted
	}{
		{name: "flush", flush: time.Millisecond},
		{name: "checkpoints", ckpt: time.Millisecond},
		{name: "failing", flush: time.Millisecond, err: errBoom,
			logged: []string{"replica: periodic flush failed", "replica: recovery point checkpoint failed"}},
		{name: "closed store", flush: time.Millisecond, ckpt: time.Millisecond, err: engine.ErrClosed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			store := &maintainedStore{Store: e.store, err: tc.err}
			cfg := config.Default()
			cfg.LogCleanerEnable = false
			cfg.LogRetentionCheck = 0
			cfg.LogFlushInterval, cfg.LogFlushOffsetCheckpointInterval = tc.flush, tc.ckpt
			var log errorLog
			m := New(Options{Config: cfg, Meta: e.meta, Store: store, NodeID: 1, Logger: slog.New(&log), TopicConfig: testConfig})
			defer m.Close()
			stop, err := m.Start()
			if err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(10 * time.Second); len(store.recorded()) < 6; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("calls in 10s: %v", store.recorded())
				}
			}
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			calls := store.recorded()
			for i, c := range calls {
				switch {
				case tc.flush == 0 && c == "flush":
					t.Fatalf("call %d is a flush with log.flush.interval.ms=0: %v", i, calls)
				case tc.ckpt == 0 && c != []string{"flush", "checkpoint"}[i%2]:
					t.Fatalf("call %d: %v, want flushes each followed by a checkpoint", i, calls)
				}
			}
			logged := slices.Compact(slices.Sorted(slices.Values(log.messages())))
			if !slices.Equal(logged, tc.logged) {
				t.Fatalf("logged errors %q, want %q", logged, tc.logged)
			}
			// Stopped: no call comes later, however long we wait (this
			// cannot fail by slowness).
			time.Sleep(20 * time.Millisecond)
			if after := store.recorded(); len(after) != len(calls) {
				t.Fatalf("%d calls after stop", len(after)-len(calls))
			}
		})
	}
}
