package replica

// Opening and closing partitions, and the registry changes that do it.

import (
	"errors"
	"fmt"
	"slices"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/metastore"
	"github.com/sluice/sluice/replication"
)

// openMode says how openPartition finds a partition's log.
type openMode int

const (
	// openStored: the metastore lists the log; a missing one is created
	// empty, with a warning.
	openStored openMode = iota
	// openNew: a new partition; a leftover log is deleted first.
	openNew
	// openReplica: a replica the controller names; created when missing,
	// unless a log dir is offline (it may be there).
	openReplica
	// openReplicaNew: a replica of a partition the controller just
	// created (LeaderAndIsr is_new); created when missing.
	openReplicaNew
)

// newTopic returns a snapshot of m, unpublished, with no partitions.
func (m *Manager) newTopic(meta metastore.Topic) *Topic {
	if err := m.checkConfig(meta.Configs); err != nil {
		m.log.Warn("replica: topic config not valid here; using broker defaults for bad keys", "topic", meta.Name, "err", err)
	}
	return &Topic{Name: meta.Name, ID: meta.ID, Meta: meta, Config: m.topicConfig(meta.Name, meta.Configs)}
}

// Load opens every topic in the metastore (single-node mode), each
// partition from the log dir holding it. A log the metastore lists but no
// dir holds (a memory store after a restart, or a crash between the
// metastore write and the log creation) is created empty, unless a dir is
// offline: it may hold the log, so the partition is offline instead. A
// log a dir holds for no topic (a crash during a delete) is deleted. On
// error what opened stays registered, for Close.
func (m *Manager) Load() error {
	m.Lock()
	defer m.Unlock()
	metas, err := m.meta.ListTopics()
	if err != nil {
		return fmt.Errorf("replica: load topics: %w", err)
	}
	known := map[engine.PartitionID]bool{}
	for _, meta := range metas {
		t := m.newTopic(meta)
		t.epochs = new(epochCache)
		for i := int32(0); i < meta.Partitions; i++ {
			known[engine.PartitionID{Topic: meta.Name, Partition: i}] = true
			p, err := m.openPartition(t, i, openStored)
			if errors.Is(err, ErrLogDirOffline) {
				t.Parts = append(t.Parts, nil) // offline: its dir failed
				continue
			}
			if err != nil {
				m.reg.publish(t) // so Close sees what opened
				return err
			}
			t.Parts = append(t.Parts, p)
		}
		m.reg.publish(t)
	}
	m.dirMu.RLock()
	var stray []engine.PartitionID
	for id := range m.dirOf.m {
		if !known[id] {
			stray = append(stray, id)
		}
	}
	m.dirMu.RUnlock()
	for _, id := range stray {
		m.log.Warn("replica: deleting stray log with no topic in the metastore", "topic", id.Topic, "partition", id.Partition)
		if err := m.deleteLogLocked(id); err != nil && !errors.Is(err, engine.ErrNoLog) {
			return fmt.Errorf("replica: delete stray log %s-%d: %w", id.Topic, id.Partition, err)
		}
	}
	return nil
}

// openLog opens partition id's log in the dir holding it, or creates it
// (as mode says) in the dir AlterReplicaLogDirs named for it or else the
// next dir (nextDir). A failure of the disk takes the dir offline and
// gives an error wrapping ErrLogDirOffline; so does a log that may be in
// an offline dir.
func (m *Manager) openLog(t *Topic, id engine.PartitionID, mode openMode) (engine.Log, error) {
	if err := m.Offline(id.Topic, id.Partition); err != nil {
		return nil, err
	}
	ioFail := func(d *logDir, err error) error {
		if !isIOError(err) {
			return err
		}
		m.dirMu.Lock()
		m.dirOf.del(id)
		m.offline[id] = d
		m.dirMu.Unlock()
		m.failDir(d, err)
		return fmt.Errorf("%w: %w", offlineErr(d.path), err)
	}
	d := m.logDirOf(id)
	if d != nil && mode == openNew {
		m.log.Warn("replica: replacing leftover log", "topic", id.Topic, "partition", id.Partition, "dir", d.path)
		if err := d.store.DeleteLog(id); err != nil && !errors.Is(err, engine.ErrNoLog) {
			return nil, ioFail(d, err)
		}
		m.setDirOf(id, nil)
		d = nil
	}
	if d != nil {
		log, err := d.store.OpenLog(id, t.Config.Log)
		if err == nil {
			if b := d.store.BackendOf(id); b != "" && b != t.Config.backend(d.store.def) {
				m.log.Warn("replica: log found in another storage backend than its topic's; serving it from there", "topic", id.Topic, "partition", id.Partition, "dir", d.path, "backend", b, "topic_backend", t.Config.backend(d.store.def))
			}
			return log, nil
		}
		if !errors.Is(err, engine.ErrNoLog) {
			return nil, ioFail(d, err)
		}
		m.setDirOf(id, nil) // gone behind our back
	}
	if (mode == openStored || mode == openReplica) && m.anyDirOffline() {
		// It may be in the dir that is offline (Kafka refuses to create
		// a replica that is not new while a dir is offline).
		var od *logDir
		for _, dd := range m.dirs {
			if dd.failure() != nil {
				od = dd
				break
			}
		}
		m.dirMu.Lock()
		m.offline[id] = od
		m.dirMu.Unlock()
		return nil, offlineErr(od.path)
	}
	if mode == openStored {
		m.log.Warn("replica: log missing; creating it empty", "topic", id.Topic, "partition", id.Partition)
	}
	m.dirMu.Lock()
	d = m.preferred[id]
	delete(m.preferred, id)
	m.dirMu.Unlock()
	if d == nil || d.failure() != nil {
		d = m.nextDir()
	}
	if d == nil {
		return nil, fmt.Errorf("%w: %w: every log dir is offline", ErrLogDirOffline, engine.ErrStorage)
	}
	log, err := d.store.CreateLog(t.Config.Backend, id, t.Config.Log)
	if errors.Is(err, engine.ErrLogExists) && mode == openNew {
		m.log.Warn("replica: replacing leftover log", "topic", id.Topic, "partition", id.Partition, "dir", d.path)
		if err = d.store.DeleteLog(id); err == nil {
			log, err = d.store.CreateLog(t.Config.Backend, id, t.Config.Log)
		}
	}
	if err != nil {
		return nil, ioFail(d, err)
	}
	m.setDirOf(id, d)
	return log, nil
}

// deleteLogLocked deletes partition id's log from the dir holding it,
// after cancelling a move of it; a log in an offline dir is forgotten (it
// is deleted when the dir comes back, as a stray). ErrNoLog when no dir
// holds it. REQUIRES: m.Lock held.
func (m *Manager) deleteLogLocked(id engine.PartitionID) error {
	m.cancelFutureLocked(id)
	m.dirMu.Lock()
	d := m.dirOf.m[id]
	m.dirOf.del(id)
	delete(m.offline, id)
	delete(m.preferred, id)
	m.dirMu.Unlock()
	if d == nil {
		return fmt.Errorf("%w: %s-%d", engine.ErrNoLog, id.Topic, id.Partition)
	}
	if d.failure() != nil {
		return nil
	}
	err := d.store.DeleteLog(id)
	if err != nil && isIOError(err) {
		m.failDir(d, err)
	}
	return err
}

// openPartition opens (or creates, as mode says) partition i of t and wraps
// it in a replication.Partition with the mode's options. It is not
// published.
func (m *Manager) openPartition(t *Topic, i int32, mode openMode) (*Partition, error) {
	return m.openPartitionHW(t, i, mode, -1)
}

// openPartitionHW is openPartition with the high watermark to restore
// (hw >= 0; a replica reopened after a move between dirs) instead of the
// checkpointed one.
func (m *Manager) openPartitionHW(t *Topic, i int32, mode openMode, hw int64) (*Partition, error) {
	id := engine.PartitionID{Topic: t.Name, Partition: i}
	log, err := m.openLog(t, id, mode)
	if err != nil {
		return nil, fmt.Errorf("replica: open log %s-%d: %w", t.Name, i, err)
	}
	opts := replication.Options{
		Topic:         t.Name,
		TopicID:       t.ID,
		Partition:     i,
		LogAppendTime: t.Config.LogAppendTime,
		Rules:         &t.Config.Rules,
		Now:           m.now,
		// Idempotent producers idle this long are forgotten.
		ProducerIDExpiration: m.cfg.ProducerIDExpiration,
		Logger:               m.log,
		BrokerID:             m.nodeID,
	}
	stats := m.mtr.Topic(t.Name)
	if m.hooks != nil {
		opts = m.hooks.ReplicaOptions(t, opts)
	}
	switch {
	case hw >= 0:
		opts.RestoreHighWatermark = true
		opts.HighWatermark = hw
	case m.hwCheckpoints:
		// The high watermark restarts at the checkpointed one, never
		// past what was committed before the restart; missing clamps
		// to the log start.
		opts.RestoreHighWatermark = true
		opts.HighWatermark = m.savedHW[id]
	}
	// The partitions of a topic share the topic-wide part of their
	// options (their function fields are the same: the broker's and the
	// topic's metrics, the control plane's): ~90 bytes a partition.
	sh := m.lastShared.Load()
	if !sh.Matches(&opts) {
		// The metrics callbacks are set only for a new Shared: each
		// method value is an allocation, garbage when sh is kept.
		if m.mtr != nil {
			opts.OnISRChange = m.mtr.ISRChanged
			opts.OnFollowerAppend = stats.ReplicatedIn
		}
		sh = opts.NewShared()
		m.lastShared.Store(sh)
	}
	opts.Shared = sh
	rp, err := replication.NewPartition(log, opts)
	if err != nil {
		log.Close()
		return nil, fmt.Errorf("replica: open partition %s-%d: %w", t.Name, i, err)
	}
	return &Partition{Partition: rp, Stats: stats}, nil
}

// CreateTopicLocked creates a validated topic hosted wholly here
// (single-node mode) from meta's Name, ID, Partitions, ReplicationFactor
// and Configs: metastore first (so a crash leaves a topic whose logs are
// created at the next start), then its logs. REQUIRES: m.Lock held.
func (m *Manager) CreateTopicLocked(meta metastore.Topic) (*Topic, error) {
	meta.CreatedAt = m.now()
	if meta.Configs == nil {
		meta.Configs = map[string]string{}
	}
	// One replica (this broker) per partition, all rows in one array:
	// one allocation per topic instead of one per partition.
	replicas := make([]int32, meta.Partitions)
	meta.Assignment = make([][]int32, meta.Partitions)
	for i := range meta.Assignment {
		replicas[i] = m.nodeID
		meta.Assignment[i] = replicas[i : i+1 : i+1]
	}
	if err := m.meta.PutTopic(meta); err != nil {
		return nil, fmt.Errorf("replica: store topic %q: %w", meta.Name, err)
	}
	t := &Topic{Name: meta.Name, ID: meta.ID, Meta: meta, Config: m.topicConfig(meta.Name, meta.Configs), epochs: new(epochCache)}
	t.Parts = make([]*Partition, 0, meta.Partitions)
	for i := int32(0); i < meta.Partitions; i++ {
		p, err := m.openPartition(t, i, openNew)
		if err != nil {
			for _, p := range t.Parts {
				p.Close()
				m.deleteLogLocked(engine.PartitionID{Topic: t.Name, Partition: p.Index()})
			}
			if derr := m.meta.DeleteTopic(t.Name); derr != nil {
				m.log.Error("replica: undo topic creation", "topic", t.Name, "err", derr)
			}
			return nil, err
		}
		t.Parts = append(t.Parts, p)
	}
	m.reg.publish(t)
	m.log.Info("replica: created topic", "topic", t.Name, "partitions", meta.Partitions, "configs", meta.Configs)
	return t, nil
}

// DeleteTopicLocked removes t: it disappears from lookups at once, its
// local replicas stop and close (waking long polls), their logs and the
// topic's metastore entry are deleted. Every step is tried; the first
// failure is logged and returned. REQUIRES: m.Lock held.
func (m *Manager) DeleteTopicLocked(t *Topic) error {
	m.reg.remove(t)
	m.mtr.RemoveTopic(t.Name)
	var first error
	for i, p := range t.Parts {
		id := engine.PartitionID{Topic: t.Name, Partition: int32(i)}
		if p == nil {
			// Cluster mode: no replica here; or offline: forget it.
			m.deleteLogLocked(id)
			continue
		}
		if m.hooks != nil {
			m.hooks.ReplicaStopped(p)
		}
		m.cancelFutureLocked(id)
		if err := p.Close(); err != nil && first == nil {
			first = err
		}
		if err := m.deleteLogLocked(id); err != nil && !errors.Is(err, engine.ErrNoLog) && first == nil {
			first = err
		}
	}
	if err := m.meta.DeleteTopic(t.Name); err != nil && !errors.Is(err, metastore.ErrNotFound) && first == nil {
		first = err
	}
	if first != nil {
		m.log.Error("replica: delete topic", "topic", t.Name, "err", first)
		return fmt.Errorf("replica: delete topic %q: %w", t.Name, first)
	}
	m.log.Info("replica: deleted topic", "topic", t.Name)
	return nil
}

// SetTopicConfigsLocked stores new overrides for t in the metastore and
// applies them to its local replicas: log configs, timestamp type and (in
// cluster mode) min.insync.replicas. A replica that fails to apply them is
// logged and the others still get them; the first error is returned.
// REQUIRES: m.Lock held; overrides validated.
func (m *Manager) SetTopicConfigsLocked(t *Topic, overrides map[string]string) error {
	meta := t.Meta
	meta.Configs = overrides
	if err := m.meta.PutTopic(meta); err != nil {
		return fmt.Errorf("replica: store configs of %q: %w", t.Name, err)
	}
	first := m.applyTopicConfigLocked(t, meta)
	m.wakeCleaner()
	m.log.Info("replica: applied topic configs", "topic", t.Name, "configs", overrides)
	return first
}

// ReconfigureTopicsLocked applies every topic's effective config again,
// from its stored overrides and the broker's current defaults (the
// TopicConfig callback): a dynamic broker config changed a topic default
// (log.retention.ms, message.max.bytes, min.insync.replicas, ...), as
// Kafka's DynamicLogConfig.updateLogsConfig does. Failures are logged and
// the first is returned. REQUIRES: m.Lock held.
func (m *Manager) ReconfigureTopicsLocked() error {
	var first error
	for _, t := range m.Topics() {
		if err := m.applyTopicConfigLocked(t, t.Meta); err != nil && first == nil {
			first = err
		}
	}
	m.wakeCleaner()
	return first
}

// applyTopicConfigLocked publishes t with meta and its effective config
// and applies that config to t's local replicas. REQUIRES: m.Lock held.
func (m *Manager) applyTopicConfigLocked(t *Topic, meta metastore.Topic) error {
	nt := *t
	nt.Meta = meta
	nt.Config = m.topicConfig(t.Name, meta.Configs)
	opts := replication.Options{}
	if m.hooks != nil {
		opts = m.hooks.ReplicaOptions(&nt, opts)
	}
	var first error
	for _, p := range nt.Parts {
		if p == nil {
			continue // cluster mode: no replica of this partition here
		}
		if err := p.Log().SetConfig(nt.Config.Log); err != nil {
			m.log.Error("replica: apply topic configs", "topic", t.Name, "partition", p.Index(), "err", err)
			if first == nil {
				first = fmt.Errorf("replica: apply configs to %s-%d: %w", t.Name, p.Index(), err)
			}
		}
		p.SetLogAppendTime(nt.Config.LogAppendTime)
		p.SetRules(nt.Config.Rules)
		p.SetMinInsyncReplicas(opts.MinInsyncReplicas)
	}
	m.reg.publish(&nt)
	return first
}

// AddPartitionsLocked raises t's partition count to count on this broker
// (single-node mode): metastore first, so a crash leaves logs that the
// next start creates. REQUIRES: m.Lock held; count validated.
func (m *Manager) AddPartitionsLocked(t *Topic, count int32) error {
	cur := int32(len(t.Parts))
	meta := t.Meta
	meta.Partitions = count
	meta.Assignment = append([][]int32(nil), meta.Assignment...)
	for i := cur; i < count; i++ {
		meta.Assignment = append(meta.Assignment, []int32{m.nodeID})
	}
	if err := m.meta.PutTopic(meta); err != nil {
		return fmt.Errorf("replica: store topic %q: %w", t.Name, err)
	}
	nt := *t
	nt.Meta = meta
	nt.Parts = append([]*Partition(nil), t.Parts...)
	for i := cur; i < count; i++ {
		p, err := m.openPartition(&nt, i, openNew)
		if err != nil {
			// Publish what opened; the metastore already says count, and
			// the next start creates the missing logs.
			m.reg.publish(&nt)
			return err
		}
		nt.Parts = append(nt.Parts, p)
	}
	m.reg.publish(&nt)
	m.log.Info("replica: added partitions", "topic", t.Name, "partitions", count)
	return nil
}

// ErrOpen marks a replica whose log could not be opened (see
// BecomeLeaderOrFollowerLocked).
var ErrOpen = errors.New("replica: cannot open the replica")

// BecomeLeaderOrFollowerLocked gives the local replica of partition part
// of topic name the role st of a LeaderAndIsr request (cluster mode):
// leader when st.Leader is this broker, else follower (of no one when it
// is -1). A replica this broker does not host yet is opened first, and
// published only once its role is applied, so no produce reaches a
// replica that still believes it leads; it is closed again when the role
// fails. Hooks.RoleChanging is told before the role is applied (a new
// leader's fetcher stops, so no fetch lands after MakeLeader), and
// Hooks.RoleChanged after (a follower's fetcher starts, the internal
// topics' coordinators load or unload). The topic's local entry is
// created (or extended, after partitions were added) from
// Hooks.TopicAssignment and persisted in the metastore; a local topic with
// another id (deleted and created again while this broker missed the
// StopReplica) is dropped first. Errors: the topic's (ErrUnknownPartition,
// Hooks.TopicAssignment's), ErrOpen, or the role's
// (replication.ErrStaleLeaderEpoch, ...). REQUIRES: m.Lock held.
func (m *Manager) BecomeLeaderOrFollowerLocked(name string, id [16]byte, part int32, st replication.LeaderAndIsr, controllerEpoch int32) error {
	t, err := m.localTopicLocked(name, id, part)
	if err != nil {
		return err
	}
	p := t.Parts[part]
	fresh := p == nil
	if fresh {
		if err := m.Offline(name, part); err != nil {
			return fmt.Errorf("%w: %w", ErrOpen, err)
		}
		mode := openReplica
		if st.IsNew {
			mode = openReplicaNew
		}
		if p, err = m.openPartition(t, part, mode); err != nil {
			return fmt.Errorf("%w: %w", ErrOpen, err)
		}
	}
	m.hooks.RoleChanging(p, st, controllerEpoch)
	if st.Leader == m.nodeID {
		err = p.MakeLeader(st)
	} else {
		err = p.MakeFollower(st)
	}
	if err != nil {
		if fresh {
			p.Close()
		}
		return err
	}
	m.hooks.RoleChanged(p, st)
	if fresh {
		m.setPartitionLocked(t, part, p)
	}
	return nil
}

// localTopicLocked returns the registry's topic name with room for
// partition part (see BecomeLeaderOrFollowerLocked). REQUIRES: m.Lock held.
func (m *Manager) localTopicLocked(name string, id [16]byte, part int32) (*Topic, error) {
	t := m.reg.get(name)
	if t != nil && id != ([16]byte{}) && t.ID != id {
		m.log.Warn("replica: local topic has an old topic id; dropping its logs", "topic", name)
		m.DeleteTopicLocked(t) // logs what fails
		t = nil
	}
	if t != nil && part >= 0 && int(part) < len(t.Parts) {
		return t, nil
	}
	zid, assignment, configs, err := m.hooks.TopicAssignment(name)
	if err != nil {
		return nil, err
	}
	if part < 0 || int(part) >= len(assignment) {
		return nil, fmt.Errorf("%w: %s-%d not in the assignment", ErrUnknownPartition, name, part)
	}
	meta := metastore.Topic{
		Name: name, ID: zid, Partitions: int32(len(assignment)), ReplicationFactor: int16(len(assignment[0])),
		Configs: configs, CreatedAt: m.now(), Assignment: assignment,
	}
	nt := m.newTopic(meta)
	nt.Parts = make([]*Partition, len(assignment))
	if t != nil {
		nt.Meta.CreatedAt = t.Meta.CreatedAt
		copy(nt.Parts, t.Parts)
	}
	if err := m.meta.PutTopic(nt.Meta); err != nil {
		return nil, fmt.Errorf("replica: store topic %q: %w", name, err)
	}
	m.reg.publish(nt)
	return nt, nil
}

// setPartitionLocked publishes t with partition i replaced by p (nil:
// removed) and returns the new snapshot. REQUIRES: m.Lock held.
func (m *Manager) setPartitionLocked(t *Topic, i int32, p *Partition) *Topic {
	nt := *t
	nt.Parts = slices.Clone(t.Parts)
	nt.Parts[i] = p
	m.reg.publish(&nt)
	return &nt
}

// StopReplicaLocked stops the local replica of name-part (cluster mode):
// Hooks.ReplicaStopped is told, and with del the replica closes and its
// log is deleted; a topic left with no replica here leaves the registry
// and the metastore. With del and no replica here, a log left behind by a
// crash is deleted anyway. The error is a failed log deletion.
// REQUIRES: m.Lock held.
func (m *Manager) StopReplicaLocked(name string, part int32, del bool) error {
	id := engine.PartitionID{Topic: name, Partition: part}
	p := m.Partition(name, part)
	if p == nil {
		if !del {
			return nil
		}
		if err := m.deleteLogLocked(id); err != nil && !errors.Is(err, engine.ErrNoLog) {
			m.log.Error("replica: StopReplica: delete log", "topic", name, "partition", part, "err", err)
			return err
		}
		return nil
	}
	if m.hooks != nil {
		m.hooks.ReplicaStopped(p)
	}
	if !del {
		return nil
	}
	t := m.setPartitionLocked(m.reg.get(name), part, nil)
	m.cancelFutureLocked(id)
	if err := p.Close(); err != nil {
		m.log.Warn("replica: StopReplica: close", "topic", name, "partition", part, "err", err)
	}
	var derr error
	if err := m.deleteLogLocked(id); err != nil && !errors.Is(err, engine.ErrNoLog) {
		m.log.Error("replica: StopReplica: delete log", "topic", name, "partition", part, "err", err)
		derr = err
	}
	for _, q := range t.Parts {
		if q != nil {
			return derr
		}
	}
	m.reg.remove(t)
	m.mtr.RemoveTopic(name) // as DeleteTopicLocked: the topic is gone from here
	if err := m.meta.DeleteTopic(name); err != nil && !errors.Is(err, metastore.ErrNotFound) {
		m.log.Error("replica: StopReplica: delete topic from metastore", "topic", name, "err", err)
	}
	m.log.Info("replica: deleted local replicas of topic", "topic", name)
	return derr
}
