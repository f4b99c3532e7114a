package server

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/metastore"
	"github.com/sluice/sluice/metrics"
	"github.com/sluice/sluice/replication"
)

// partition is one open partition of a topic.
type partition struct {
	*replication.Partition // its Topic() and Index() name it
	// stats is the topic's metrics handle (nil: no metrics), counted by
	// produce and fetch without a lookup.
	stats *metrics.Topic
}

// topic is a published, immutable snapshot of one topic: a change (configs,
// partitions) publishes a new snapshot sharing the partitions.
type topic struct {
	name  string
	id    [16]byte
	meta  metastore.Topic // as stored; Configs holds the overrides
	cfg   topicConfig
	parts []*partition
	// md caches the topic's Metadata answer on a single node (nil: none,
	// as in cluster mode). Snapshots copied from this one share it.
	md *metadataCache
}

// topicRegistry is the set of live topics. Lookups take mu for reading;
// changes are serialized by admin (held across the metastore write and the
// log changes) and publish with mu held for writing.
type topicRegistry struct {
	admin  sync.Mutex
	mu     sync.RWMutex
	byName map[string]*topic
	byID   map[[16]byte]*topic
	// sorted is every topic by name, built by all on first use after a
	// change; nil: to build. Never modified once built.
	sorted []*topic
}

func (r *topicRegistry) init() {
	r.byName = map[string]*topic{}
	r.byID = map[[16]byte]*topic{}
}

func (r *topicRegistry) get(name string) *topic {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.byName[name]
}

func (r *topicRegistry) getID(id [16]byte) *topic {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.byID[id]
}

// all returns the topics sorted by name. The slice is shared by every
// caller until the next change: read it, never modify it. Sorting 100,000
// names per Metadata request was most of its cost at that many topics.
func (r *topicRegistry) all() []*topic {
	r.mu.RLock()
	ts := r.sorted
	r.mu.RUnlock()
	if ts != nil {
		return ts
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sorted == nil {
		ts := slices.Collect(maps.Values(r.byName))
		slices.SortFunc(ts, func(a, b *topic) int { return strings.Compare(a.name, b.name) })
		r.sorted = ts
	}
	return r.sorted
}

// eachName calls fn with the name of every topic, in no order, until fn
// returns false, with r.mu held for reading: fn must not call back into r.
// Unlike all it neither copies nor sorts, so a check per created topic
// costs no garbage (all is rebuilt after every creation).
func (r *topicRegistry) eachName(fn func(name string) bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for name := range r.byName {
		if !fn(name) {
			return
		}
	}
}

// publish installs t (replacing a topic of the same name).
func (r *topicRegistry) publish(t *topic) {
	r.mu.Lock()
	r.byName[t.name] = t
	r.byID[t.id] = t
	r.sorted = nil
	r.mu.Unlock()
}

func (r *topicRegistry) remove(t *topic) {
	r.mu.Lock()
	delete(r.byName, t.name)
	delete(r.byID, t.id)
	r.sorted = nil
	r.mu.Unlock()
}

// partition returns the named partition, or nil.
func (s *Server) partition(topicName string, p int32) *partition {
	t := s.topics.get(topicName)
	if t == nil || p < 0 || int(p) >= len(t.parts) {
		return nil
	}
	return t.parts[p]
}

// loadTopics opens every topic in the metastore. A log the metastore lists
// but the store lacks (a memory store after a restart, or a crash between
// the metastore write and the log creation) is created empty; a log the
// store holds for no topic (a crash during a delete) is deleted.
func (s *Server) loadTopics() error {
	metas, err := s.meta.ListTopics()
	if err != nil {
		return fmt.Errorf("server: load topics: %w", err)
	}
	known := map[engine.PartitionID]bool{}
	for _, m := range metas {
		if err := checkTopicConfigs(m.Configs); err != nil {
			s.log.Warn("server: stored topic config no longer valid; using broker defaults for bad keys", "topic", m.Name, "err", err)
		}
		t := &topic{name: m.Name, id: m.ID, meta: m, cfg: s.effectiveConfig(internalOverrides(m.Name, m.Configs)), md: new(metadataCache)}
		for i := int32(0); i < m.Partitions; i++ {
			known[engine.PartitionID{Topic: m.Name, Partition: i}] = true
			p, err := s.openPartition(t, i, openStored)
			if err != nil {
				s.topics.publish(t) // so closePartitions sees what opened
				return err
			}
			t.parts = append(t.parts, p)
		}
		s.topics.publish(t)
	}
	ids, err := s.store.ListLogs()
	if err != nil {
		return fmt.Errorf("server: list logs: %w", err)
	}
	for _, id := range ids {
		if !known[id] {
			s.log.Warn("server: deleting stray log with no topic in the metastore", "topic", id.Topic, "partition", id.Partition)
			if err := s.store.DeleteLog(id); err != nil {
				return fmt.Errorf("server: delete stray log %s-%d: %w", id.Topic, id.Partition, err)
			}
		}
	}
	return nil
}

// openMode says how openPartition finds a partition's log.
type openMode int

const (
	// openStored: the metastore lists the log; a missing one is created
	// empty, with a warning.
	openStored openMode = iota
	// openNew: a new partition; a leftover log is deleted first.
	openNew
	// openReplica: a replica the controller names; created when missing.
	openReplica
)

// openPartition opens (or creates, as mode says) partition i of t and wraps
// it in a replication.Partition with the control plane's options. It is not
// published.
func (s *Server) openPartition(t *topic, i int32, mode openMode) (*partition, error) {
	id := engine.PartitionID{Topic: t.name, Partition: i}
	var log engine.Log
	var err error
	if mode == openNew {
		log, err = s.store.CreateLog(id, t.cfg.log)
		if errors.Is(err, engine.ErrLogExists) {
			s.log.Warn("server: replacing leftover log", "topic", t.name, "partition", i)
			if err = s.store.DeleteLog(id); err == nil {
				log, err = s.store.CreateLog(id, t.cfg.log)
			}
		}
	} else {
		log, err = s.store.OpenLog(id, t.cfg.log)
		if errors.Is(err, engine.ErrNoLog) {
			if mode == openStored {
				s.log.Warn("server: log missing; creating it empty", "topic", t.name, "partition", i)
			}
			log, err = s.store.CreateLog(id, t.cfg.log)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("server: open log %s-%d: %w", t.name, i, err)
	}
	opts := replication.Options{
		Topic:         t.name,
		TopicID:       t.id,
		Partition:     i,
		LogAppendTime: t.cfg.logAppendTime,
		Rules:         &t.cfg.rules,
		Now:           s.now,
		// Idempotent producers idle this long are forgotten.
		ProducerIDExpiration: s.cfg.ProducerIDExpiration,
		Logger:               s.log,
		BrokerID:             s.nodeID,
	}
	stats := s.metrics.Topic(t.name)
	opts = s.cp.replicaOptions(t, opts)
	// The partitions of a topic share the topic-wide part of their
	// options (their function fields are the same: the server's and the
	// topic's metrics, the control plane's): ~90 bytes a partition.
	sh := s.lastShared.Load()
	if !sh.Matches(&opts) {
		// The metrics callbacks are set only for a new Shared: each
		// method value is an allocation, garbage when sh is kept.
		if s.metrics != nil {
			opts.OnISRChange = s.metrics.ISRChanged
			opts.OnFollowerAppend = stats.ReplicatedIn
		}
		sh = opts.NewShared()
		s.lastShared.Store(sh)
	}
	opts.Shared = sh
	rp, err := replication.NewPartition(log, opts)
	if err != nil {
		log.Close()
		return nil, fmt.Errorf("server: open partition %s-%d: %w", t.name, i, err)
	}
	return &partition{Partition: rp, stats: stats}, nil
}

// newTopicID returns a random topic id that is not zero and whose base64
// form does not start with '-' (Kafka's Uuid.randomUuid rules, so it never
// looks like a command-line flag).
func newTopicID() [16]byte {
	for {
		var id [16]byte
		rand.Read(id[:])
		if id == ([16]byte{}) {
			continue
		}
		if base64.RawURLEncoding.EncodeToString(id[:])[0] == '-' {
			continue
		}
		return id
	}
}

// topicSpec is a validated CreateTopics entry.
type topicSpec struct {
	name       string
	partitions int32
	rf         int16
	configs    map[string]string
	assignment [][]int32 // manual replica assignment; nil: automatic
}

// createTopicLocked creates a validated topic on this broker (single-node
// mode): metastore first (so a crash leaves
// a topic whose logs are created at the next start), then its logs.
// REQUIRES: s.topics.admin held.
func (s *Server) createTopicLocked(spec topicSpec) (*topic, error) {
	m := metastore.Topic{
		Name:              spec.name,
		ID:                newTopicID(),
		Partitions:        spec.partitions,
		ReplicationFactor: spec.rf,
		Configs:           spec.configs,
		CreatedAt:         s.now(),
	}
	if m.Configs == nil {
		m.Configs = map[string]string{}
	}
	// One replica (this broker) per partition, all rows in one array:
	// one allocation per topic instead of one per partition.
	replicas := make([]int32, spec.partitions)
	m.Assignment = make([][]int32, spec.partitions)
	for i := range m.Assignment {
		replicas[i] = s.nodeID
		m.Assignment[i] = replicas[i : i+1 : i+1]
	}
	if err := s.meta.PutTopic(m); err != nil {
		return nil, fmt.Errorf("server: store topic %q: %w", spec.name, err)
	}
	t := &topic{name: m.Name, id: m.ID, meta: m, cfg: s.effectiveConfig(internalOverrides(m.Name, m.Configs)), md: new(metadataCache)}
	t.parts = make([]*partition, 0, m.Partitions)
	for i := int32(0); i < m.Partitions; i++ {
		p, err := s.openPartition(t, i, openNew)
		if err != nil {
			for _, p := range t.parts {
				p.Close()
				s.store.DeleteLog(engine.PartitionID{Topic: t.name, Partition: p.Index()})
			}
			if derr := s.meta.DeleteTopic(t.name); derr != nil {
				s.log.Error("server: undo topic creation", "topic", t.name, "err", derr)
			}
			return nil, err
		}
		t.parts = append(t.parts, p)
	}
	s.topics.publish(t)
	s.log.Info("server: created topic", "topic", t.name, "partitions", m.Partitions, "configs", m.Configs)
	return t, nil
}

// deleteTopicLocked removes t: it disappears from lookups at once, its
// local replicas stop and close (waking long polls), their logs and the
// topic's metastore entry are deleted. Every step is tried; the first
// failure is logged and returned. REQUIRES: s.topics.admin held.
func (s *Server) deleteTopicLocked(t *topic) error {
	s.topics.remove(t)
	s.metrics.RemoveTopic(t.name)
	var first error
	for _, p := range t.parts {
		if p == nil {
			continue // cluster mode: no replica of this partition here
		}
		s.cp.replicaStopped(p)
		if err := p.Close(); err != nil && first == nil {
			first = err
		}
		if err := s.store.DeleteLog(engine.PartitionID{Topic: t.name, Partition: p.Index()}); err != nil && !errors.Is(err, engine.ErrNoLog) && first == nil {
			first = err
		}
	}
	if err := s.meta.DeleteTopic(t.name); err != nil && !errors.Is(err, metastore.ErrNotFound) && first == nil {
		first = err
	}
	if first != nil {
		s.log.Error("server: delete topic", "topic", t.name, "err", first)
		return fmt.Errorf("server: delete topic %q: %w", t.name, first)
	}
	s.log.Info("server: deleted topic", "topic", t.name)
	return nil
}

// setTopicConfigsLocked stores new overrides for t in the metastore and
// applies them to its local replicas: log configs, timestamp type and (in
// cluster mode) min.insync.replicas. A replica that fails to apply them is
// logged and the others still get them; the first error is returned.
// REQUIRES: s.topics.admin held; overrides validated.
func (s *Server) setTopicConfigsLocked(t *topic, overrides map[string]string) error {
	m := t.meta
	m.Configs = overrides
	if err := s.meta.PutTopic(m); err != nil {
		return fmt.Errorf("server: store configs of %q: %w", t.name, err)
	}
	nt := *t
	nt.meta = m
	nt.cfg = s.effectiveConfig(internalOverrides(t.name, overrides))
	opts := s.cp.replicaOptions(&nt, replication.Options{})
	var first error
	for _, p := range nt.parts {
		if p == nil {
			continue // cluster mode: no replica of this partition here
		}
		if err := p.Log().SetConfig(nt.cfg.log); err != nil {
			s.log.Error("server: apply topic configs", "topic", t.name, "partition", p.Index(), "err", err)
			if first == nil {
				first = fmt.Errorf("server: apply configs to %s-%d: %w", t.name, p.Index(), err)
			}
		}
		p.SetLogAppendTime(nt.cfg.logAppendTime)
		p.SetRules(nt.cfg.rules)
		p.SetMinInsyncReplicas(opts.MinInsyncReplicas)
	}
	s.topics.publish(&nt)
	s.wakeCleaner()
	s.log.Info("server: applied topic configs", "topic", t.name, "configs", overrides)
	return first
}

// addPartitionsLocked raises t's partition count to count on this broker
// (single-node mode): metastore first, so a crash leaves logs that the next
// start creates. REQUIRES: s.topics.admin held; count validated.
func (s *Server) addPartitionsLocked(t *topic, count int32) error {
	cur := int32(len(t.parts))
	m := t.meta
	m.Partitions = count
	m.Assignment = append([][]int32(nil), m.Assignment...)
	for i := cur; i < count; i++ {
		m.Assignment = append(m.Assignment, []int32{s.nodeID})
	}
	if err := s.meta.PutTopic(m); err != nil {
		return fmt.Errorf("server: store topic %q: %w", t.name, err)
	}
	nt := *t
	nt.meta = m
	nt.parts = append([]*partition(nil), t.parts...)
	for i := cur; i < count; i++ {
		p, err := s.openPartition(&nt, i, openNew)
		if err != nil {
			// Publish what opened; the metastore already says count, and
			// the next start creates the missing logs.
			s.topics.publish(&nt)
			return err
		}
		nt.parts = append(nt.parts, p)
	}
	s.topics.publish(&nt)
	s.log.Info("server: added partitions", "topic", t.name, "partitions", count)
	return nil
}

// resolveTopic finds a topic by id when id is non-zero, else by name.
func (s *Server) resolveTopic(name string, id [16]byte) (*topic, error) {
	if id != ([16]byte{}) {
		if t := s.topics.getID(id); t != nil {
			return t, nil
		}
		return nil, errUnknownTopicID
	}
	if t := s.topics.get(name); t != nil {
		return t, nil
	}
	return nil, errUnknownTopicOrPartition
}
