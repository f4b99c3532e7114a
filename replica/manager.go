// Package replica is the replica manager (Kafka's ReplicaManager and
// LogManager in one): it owns the partitions this broker hosts and their
// logs. It keeps the topic registry (copy-on-write snapshots, lookups
// without garbage), opens and closes partitions (from the metastore on a
// single node, as the controller names them in a cluster), applies topic
// configs to logs, and runs the periodic work of logs: retention every
// log.retention.check.interval.ms, the log cleaner's feed, the flush every
// log.flush.interval.ms, and the recovery-point and high-watermark
// checkpoints. With several log dirs (JBOD) it places each log in a dir,
// takes a failed dir's partitions offline and moves replicas between dirs
// (logdirs.go, future.go). Package server asks it for a partition and
// never reaches through one to its engine.Log.
//
// What differs between the modes comes in through Hooks (the control
// plane's replica-lifecycle hooks): nil on a single node.
//
// Changes to the registry (create, delete, configs, partitions, replicas)
// are serialized by the admin lock, Lock and Unlock; methods that need it
// end in Locked. Lookups never take it.
package replica

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/engine/cleaner"
	"github.com/sluice/sluice/internal/lifecycle"
	"github.com/sluice/sluice/metastore"
	"github.com/sluice/sluice/metrics"
	"github.com/sluice/sluice/replication"
)

// ErrUnknownPartition: a partition the topic (or its assignment) does not
// have.
var ErrUnknownPartition = errors.New("replica: unknown topic or partition")

// HighWatermarkCheckpointInterval is how often the high watermarks are
// checkpointed (Kafka's replica.high.watermark.checkpoint.interval.ms).
const HighWatermarkCheckpointInterval = 5 * time.Second

// Hooks are what a cluster's control plane adds to the life of a local
// replica. Implementations are safe for concurrent use.
type Hooks interface {
	// ReplicaOptions returns o with the mode's settings added, for a
	// partition of t being opened. (By value: a pointer through this
	// interface made every partition's Options escape, ~240 bytes of
	// garbage per partition created.)
	ReplicaOptions(t *Topic, o replication.Options) replication.Options
	// ReplicaStopped is told that a local replica stops, before it is
	// closed.
	ReplicaStopped(p *Partition)
	// TopicAssignment returns a topic's id, replica assignment and config
	// overrides, for opening a local replica the controller names.
	TopicAssignment(name string) (id [16]byte, assignment [][]int32, configs map[string]string, err error)
	// RoleChanging is told of the role a LeaderAndIsr request from the
	// controller at controllerEpoch is about to give p; RoleChanged once
	// it is applied (see BecomeLeaderOrFollowerLocked).
	RoleChanging(p *Partition, st replication.LeaderAndIsr, controllerEpoch int32)
	RoleChanged(p *Partition, st replication.LeaderAndIsr)
}

// Options configure a Manager.
type Options struct {
	// Config is the broker config: producer-id expiry, the cleaner's
	// settings, log.retention.check.interval.ms, log.flush.interval.ms,
	// log.flush.offset.checkpoint.interval.ms.
	Config config.Config
	// Meta keeps the topics' metadata; Store the logs. Both are the
	// caller's, open for the Manager's life.
	Meta  *metastore.Store
	Store engine.Store
	// Dirs are the log dirs (log.dirs), each with its own store, in
	// order; when empty, Store is the only one, at Config.LogDirs[0]. The
	// stores are the caller's, open for the Manager's life (see
	// logdirs.go).
	Dirs []LogDir
	// OnLogDirFailure is told, once per dir and after the dir's
	// partitions have gone offline, that a log dir failed (nil: no one
	// is). It runs with the admin lock held: it must not call back into
	// the Manager's Locked methods.
	OnLogDirFailure func(dir string)
	// NodeID is this broker's id.
	NodeID  int32
	Logger  *slog.Logger     // nil: slog.Default()
	Now     func() time.Time // nil: time.Now
	Metrics *metrics.Metrics // nil: none kept
	// TopicConfig parses the effective config of a topic with overrides.
	TopicConfig func(topic string, overrides map[string]string) TopicConfig
	// CheckConfig validates stored overrides; a failure is logged and the
	// bad keys run at the broker's values.
	CheckConfig func(overrides map[string]string) error
	// Hooks are the cluster's replica-lifecycle hooks (nil: single node,
	// where this broker leads every partition it hosts and no controller
	// names replicas: BecomeLeaderOrFollowerLocked and StopReplicaLocked
	// are for cluster mode only).
	Hooks Hooks
	// OwnsRetention reports whether retention of a topic belongs to
	// someone else (the remote log manager of a tiered topic, package
	// tiered); nil: to no one else.
	OwnsRetention func(t *Topic) bool
	// CheckpointHighWatermarks saves the replicas' high watermarks every
	// HighWatermarkCheckpointInterval and at Close, and restores them when
	// a replica opens (cluster mode; see checkpoint.go).
	CheckpointHighWatermarks bool
}

// Manager owns the partitions this broker hosts. Safe for concurrent use.
type Manager struct {
	cfg    config.Config
	meta   *metastore.Store
	nodeID int32
	log    *slog.Logger
	now    func() time.Time
	mtr    *metrics.Metrics
	hooks  Hooks

	topicConfig func(string, map[string]string) TopicConfig
	checkConfig func(map[string]string) error
	// ownsRetention is Options.OwnsRetention.
	ownsRetention func(*Topic) bool

	reg registry

	// lastShared is the topic-wide part of the options of the partition
	// opened last (openPartition), shared with the next ones of its topic.
	lastShared atomic.Pointer[replication.Shared]

	// cleaner runs log compaction (nil: log.cleaner.enable=false, or not
	// started). Set by Start while a cluster's config changes may already
	// wake it.
	cleaner atomic.Pointer[cleaner.Manager]
	// cleanerMu serializes starting, stopping and reconfiguring the
	// cleaner; cleanerKeys are the keys it runs (or will run) with and
	// cleanerRunning is true between Start and its stop.
	cleanerMu      sync.Mutex
	cleanerKeys    cleanerKeys
	cleanerRunning bool

	// hwCheckpoints is Options.CheckpointHighWatermarks; savedHW the high
	// watermarks checkpointed before the last stop, read-only after New.
	hwCheckpoints bool
	savedHW       map[engine.PartitionID]int64

	// dirs are the log dirs in log.dirs order, read-only after New
	// (logdirs.go); dirMu guards the maps below. Lock order: the admin
	// lock, then dirMu.
	dirs  []*logDir
	dirMu sync.RWMutex
	// dirOf is the dir holding each local log (opened or not).
	dirOf dirIndex
	// offline holds the partitions whose dir failed (Kafka's
	// HostedPartition.Offline), with that dir.
	offline map[engine.PartitionID]*logDir
	// futures are the moves between dirs in progress (future.go);
	// preferred the dirs AlterReplicaLogDirs named for replicas not
	// created yet.
	futures   map[engine.PartitionID]*future
	preferred map[engine.PartitionID]*logDir
	// failedDirs counts the dirs offline, so that lookups of offline
	// partitions cost nothing while none is.
	failedDirs   atomic.Int32
	onDirFailure func(dir string)
	// throttle paces the moves between dirs (future.go).
	throttle moveThrottle
	// bg is the background work Close waits for: dir failure handling
	// and the copiers of moves.
	bg sync.WaitGroup
}

// New returns a Manager hosting no partition yet. With
// CheckpointHighWatermarks it reads the last checkpoint.
func New(opts Options) *Manager {
	m := &Manager{
		cfg:           opts.Config,
		meta:          opts.Meta,
		nodeID:        opts.NodeID,
		log:           opts.Logger,
		now:           opts.Now,
		mtr:           opts.Metrics,
		hooks:         opts.Hooks,
		topicConfig:   opts.TopicConfig,
		checkConfig:   opts.CheckConfig,
		ownsRetention: opts.OwnsRetention,
		hwCheckpoints: opts.CheckpointHighWatermarks,
		cleanerKeys:   cleanerKeysOf(&opts.Config),
		onDirFailure:  opts.OnLogDirFailure,
		throttle:      moveThrottle{rate: opts.Config.ReplicaAlterLogDirsIOMaxBytesPerSecond},
		preferred:     map[engine.PartitionID]*logDir{},
	}
	if m.log == nil {
		m.log = slog.Default()
	}
	if m.now == nil {
		m.now = time.Now
	}
	if m.checkConfig == nil {
		m.checkConfig = func(map[string]string) error { return nil }
	}
	m.reg.init()
	m.initDirs(opts)
	if m.hwCheckpoints {
		m.savedHW = m.loadHighWatermarks()
	}
	return m
}

// Lock takes the admin lock, which serializes every change to the
// registry; Unlock releases it.
func (m *Manager) Lock()   { m.reg.admin.Lock() }
func (m *Manager) Unlock() { m.reg.admin.Unlock() }

// Topic returns the snapshot of topic name, or nil.
func (m *Manager) Topic(name string) *Topic { return m.reg.get(name) }

// TopicByID returns the snapshot of the topic with id, or nil.
func (m *Manager) TopicByID(id [16]byte) *Topic { return m.reg.getID(id) }

// Topics returns every topic sorted by name. The slice is shared by every
// caller until the next change: read it, never modify it.
func (m *Manager) Topics() []*Topic { return m.reg.all() }

// EachTopicName calls fn with the name of every topic, in no order,
// until fn returns false, without copying: fn must not call back into m.
func (m *Manager) EachTopicName(fn func(name string) bool) { m.reg.eachName(fn) }

// Partition returns partition p of topic name if this broker hosts it, or
// nil.
func (m *Manager) Partition(name string, p int32) *Partition {
	t := m.reg.get(name)
	if t == nil || p < 0 || int(p) >= len(t.Parts) {
		return nil
	}
	return t.Parts[p]
}

// each calls fn for every local replica.
func (m *Manager) each(fn func(t *Topic, p *Partition)) {
	for _, t := range m.reg.all() {
		for _, p := range t.Parts {
			if p != nil { // cluster mode: no replica here
				fn(t, p)
			}
		}
	}
}

// Start starts the periodic work of the logs, in order: the log cleaner's
// threads (unless log.cleaner.enable is false); retention every
// log.retention.check.interval.ms; when the store is an engine.Maintainer,
// the flush every log.flush.interval.ms, each followed by a recovery-point
// checkpoint, and the recovery-point checkpoints every
// log.flush.offset.checkpoint.interval.ms (flush.go); with
// CheckpointHighWatermarks, the high-watermark checkpoints. An interval
// that is not positive runs nothing (a recovery-point checkpoint is then
// written only by the store's Close). The returned stop ends them in
// reverse order (before the logs close); Close writes the last
// high-watermark checkpoint, the store's Close the last recovery-point
// one.
func (m *Manager) Start() (stop func() error, err error) {
	var st lifecycle.Stack
	if err := st.Start("log cleaner", m.startCleaner); err != nil {
		return nil, fmt.Errorf("replica: %w", err)
	}
	if every := m.cfg.LogRetentionCheck; every > 0 {
		st.Go("retention", func(stop <-chan struct{}) {
			tick(stop, every, func() { m.ApplyRetention() }) // logs its own errors
		})
	}
	if m.anyMaintainer() {
		if every := m.cfg.LogFlushInterval; every > 0 {
			st.Go("log flush", func(stop <-chan struct{}) {
				tick(stop, every, m.flushLogs)
			})
		}
		if every := m.cfg.LogFlushOffsetCheckpointInterval; every > 0 {
			st.Go("recovery-point checkpoints", func(stop <-chan struct{}) {
				tick(stop, every, m.checkpointRecoveryPoints)
			})
		}
	}
	st.Go("log dir failure check", func(stop <-chan struct{}) {
		tick(stop, LogDirCheckInterval, m.checkFailedLogs)
	})
	if m.hwCheckpoints {
		st.Go("high-watermark checkpoints", func(stop <-chan struct{}) {
			tick(stop, HighWatermarkCheckpointInterval, m.checkpointHighWatermarks)
		})
	}
	return st.Close, nil
}

// tick calls fn every interval until stop is closed.
func tick(stop <-chan struct{}, every time.Duration, fn func()) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			fn()
		}
	}
}

// Close writes the last high-watermark checkpoint and closes every open
// partition; it returns the first error. The Manager is not used after.
func (m *Manager) Close() error {
	m.Lock()
	m.dirMu.RLock()
	var moving []engine.PartitionID
	for id := range m.futures {
		moving = append(moving, id)
	}
	m.dirMu.RUnlock()
	for _, id := range moving {
		m.cancelFutureLocked(id)
	}
	m.Unlock()
	m.bg.Wait()
	if m.hwCheckpoints {
		m.checkpointHighWatermarks()
	}
	var first error
	m.each(func(t *Topic, p *Partition) {
		if err := p.Close(); err != nil && first == nil {
			first = fmt.Errorf("replica: close %s-%d: %w", t.Name, p.Index(), err)
		}
	})
	return first
}

// ApplyRetention runs retention on every partition log and returns the
// first error; the other partitions are still processed. Start runs it
// every log.retention.check.interval.ms.
func (m *Manager) ApplyRetention() error {
	now := m.now()
	var first error
	m.each(func(t *Topic, p *Partition) {
		if m.ownsRetention != nil && m.ownsRetention(t) {
			return // the remote log manager's (tiered storage)
		}
		before := p.LogStartOffset()
		after, err := p.Log().ApplyRetention(now)
		if err != nil {
			if errors.Is(err, engine.ErrClosed) {
				return // deleted under us
			}
			m.ReportStorageError(p, err)
			m.log.Error("replica: retention failed", "topic", t.Name, "partition", p.Index(), "err", err)
			if first == nil {
				first = err
			}
			return
		}
		if after > before {
			m.log.Info("replica: retention deleted records", "topic", t.Name, "partition", p.Index(), "log_start_offset", after)
		}
	})
	return first
}
