package server

// The local replicas in cluster mode: which partitions this broker holds is
// decided by the controller (LeaderAndIsr, 04_leader_and_isr.go; StopReplica,
// 05_stop_replica.go). A cluster-mode topic's registry entry has one slot per
// partition of its assignment; partitions without a replica here are nil. A
// partition is published in the registry only after its role is applied, so
// no produce ever reaches a freshly opened replica that still believes it
// leads.

import (
	"fmt"
	"slices"

	"github.com/sluice/sluice/metastore"
	"github.com/sluice/sluice/replication"
)

// leaderPartition returns partition i of topic name if this broker leads
// it: errUnknownTopicOrPartition when the cluster does not know it,
// replication.ErrNotLeader when another broker leads it.
func (s *Server) leaderPartition(name string, i int32) (*partition, error) {
	if p := s.partition(name, i); p != nil {
		if !p.IsLeader() {
			return nil, replication.ErrNotLeader
		}
		return p, nil
	}
	if i >= 0 && int(i) < len(s.cp.partitions(name)) {
		return nil, replication.ErrNotLeader
	}
	return nil, errUnknownTopicOrPartition
}

// localTopicLocked returns the registry's topic name with room for
// partition part, creating (or extending, after partitions were added) its
// local entry from the control plane: assignment, topic id and config
// overrides, persisted in the metastore. A local topic with another id
// (the topic was deleted and created again while this broker missed the
// StopReplica) is dropped first. REQUIRES: s.topics.admin held.
func (s *Server) localTopicLocked(name string, id [16]byte, part int32) (*topic, error) {
	t := s.topics.get(name)
	if t != nil && id != ([16]byte{}) && t.id != id {
		s.log.Warn("server: local topic has an old topic id; dropping its logs", "topic", name)
		s.deleteTopicLocked(t) // logs what fails
		t = nil
	}
	if t != nil && part >= 0 && int(part) < len(t.parts) {
		return t, nil
	}
	zid, assignment, configs, err := s.cp.topicAssignment(name)
	if err != nil {
		return nil, err
	}
	if part < 0 || int(part) >= len(assignment) {
		return nil, fmt.Errorf("%w: %s-%d not in the assignment", errUnknownTopicOrPartition, name, part)
	}
	if cerr := checkTopicConfigs(configs); cerr != nil {
		s.log.Warn("server: topic config in zookeeper not valid here; using broker defaults for bad keys", "topic", name, "err", cerr)
	}
	m := metastore.Topic{
		Name: name, ID: zid, Partitions: int32(len(assignment)), ReplicationFactor: int16(len(assignment[0])),
		Configs: configs, CreatedAt: s.now(), Assignment: assignment,
	}
	nt := &topic{name: name, id: zid, meta: m, cfg: s.effectiveConfig(internalOverrides(name, configs)), parts: make([]*partition, len(assignment))}
	if t != nil {
		m.CreatedAt = t.meta.CreatedAt
		nt.meta = m
		copy(nt.parts, t.parts)
	}
	if err := s.meta.PutTopic(m); err != nil {
		return nil, fmt.Errorf("server: store topic %q: %w", name, err)
	}
	s.topics.publish(nt)
	return nt, nil
}

// setPartitionLocked publishes t with partition i replaced by p (nil:
// removed) and returns the new snapshot. REQUIRES: s.topics.admin held.
func (s *Server) setPartitionLocked(t *topic, i int32, p *partition) *topic {
	nt := *t
	nt.parts = slices.Clone(t.parts)
	nt.parts[i] = p
	s.topics.publish(&nt)
	return &nt
}
