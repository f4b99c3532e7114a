package server

import (
	"crypto/rand"
	"encoding/base64"

	"github.com/sluice/sluice/replica"
	"github.com/sluice/sluice/replication"
)

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

// topicLookup finds topics and partitions for the handlers: among the
// local replicas (the replica manager) first, then in the cluster's view
// for what is not here. Safe for concurrent use.
type topicLookup struct {
	rm     *replica.Manager
	md     metadataView
	nodeID int32
}

// resolveTopic finds a topic by id when id is non-zero, else by name.
func (l *topicLookup) resolveTopic(name string, id [16]byte) (*replica.Topic, error) {
	if id != ([16]byte{}) {
		if t := l.rm.TopicByID(id); t != nil {
			return t, nil
		}
		return nil, errUnknownTopicID
	}
	if t := l.rm.Topic(name); t != nil {
		return t, nil
	}
	return nil, errUnknownTopicOrPartition
}

// leaderPartition returns partition i of topic name if this broker leads
// it: errUnknownTopicOrPartition when the cluster does not know it,
// replication.ErrNotLeader when another broker leads it.
func (l *topicLookup) leaderPartition(name string, i int32) (*replica.Partition, error) {
	if p := l.rm.Partition(name, i); p != nil {
		if !p.IsLeader() {
			return nil, replication.ErrNotLeader
		}
		return p, nil
	}
	if err := l.rm.Offline(name, i); err != nil {
		return nil, err // its log dir failed: KAFKA_STORAGE_ERROR
	}
	if i >= 0 && int(i) < len(l.md.partitions(name)) {
		return nil, replication.ErrNotLeader
	}
	return nil, errUnknownTopicOrPartition
}
