package server

import (
	"github.com/sluice/sluice/metastore"
	"github.com/sluice/sluice/replica"
)

// createTopicLocked creates spec on a single node's replica manager, as
// CreateTopics does. REQUIRES: s.rm.Lock held.
func (s *Server) createTopicLocked(spec topicSpec) (*replica.Topic, error) {
	return s.rm.CreateTopicLocked(metastore.Topic{
		Name: spec.name, ID: newTopicID(), Partitions: spec.partitions, ReplicationFactor: spec.rf, Configs: spec.configs,
	})
}
