package server

// AlterReplicaLogDirs (key 34), served v0-v2: move local replicas to
// other dirs of log.dirs (JBOD), as Kafka's
// ReplicaManager.alterReplicaLogDirs does; the move itself (a future
// replica copied and caught up, then swapped in) is replica.Manager's
// (replica/future.go). Per partition:
//
//   - the dir is not in log.dirs: LOG_DIR_NOT_FOUND;
//   - the dir, or the partition's own, is offline, or a future replica
//     would be created while any dir is offline: KAFKA_STORAGE_ERROR;
//   - the topic is unknown: UNKNOWN_TOPIC_OR_PARTITION;
//   - no replica of it here yet: REPLICA_NOT_AVAILABLE, and the dir is
//     remembered for when the replica is created;
//   - the replica is there already: nothing to do; a move to another dir
//     in progress is replaced.
//
//	v1: no change (throttle behaviour)
//	v2: flexible versions
//
// Needs Alter on the cluster (KafkaApis.handleAlterReplicaLogDirsRequest):
// refused, every partition answers CLUSTER_AUTHORIZATION_FAILED.

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/replica"
)

// maxFutureDirName is the longest directory name a file system takes: a
// topic whose future dir name is longer cannot be moved (Kafka answers
// INVALID_TOPIC_EXCEPTION, KAFKA-4893).
const maxFutureDirName = 255

func handleAlterReplicaLogDirs(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.AlterReplicaLogDirsRequest)
	resp := r.ResponseKind().(*kmsg.AlterReplicaLogDirsResponse)
	allowed := s.az.allowedCluster(rc, acl.OpAlter)
	type tp struct {
		topic string
		part  int32
	}
	// Kafka reads the request into a map: a partition named twice is
	// moved to the last dir named, and answered once.
	dirs := map[tp]string{}
	var order []tp
	for _, d := range r.Dirs {
		for _, t := range d.Topics {
			for _, p := range t.Partitions {
				k := tp{t.Topic, p}
				if _, ok := dirs[k]; !ok {
					order = append(order, k)
				}
				dirs[k] = d.Dir
			}
		}
	}
	code := func(k tp) int16 {
		if !allowed {
			return kerr.ClusterAuthorizationFailed.Code
		}
		if len(engine.FutureLogID(engine.PartitionID{Topic: k.topic, Partition: k.part}, "00000000000000000000000000000000").Topic) > maxFutureDirName {
			return kerr.InvalidTopicException.Code
		}
		s.rm.Lock()
		err := s.rm.AlterReplicaLogDirLocked(k.topic, k.part, dirs[k])
		s.rm.Unlock()
		switch {
		case err == nil:
			return 0
		case errors.Is(err, replica.ErrLogDirNotFound):
			return kerr.LogDirNotFound.Code
		case errors.Is(err, replica.ErrReplicaNotAvailable):
			if t := s.rm.Topic(k.topic); t == nil && len(s.md.partitions(k.topic)) == 0 || t != nil && (k.part < 0 || int(k.part) >= len(t.Parts)) {
				return kerr.UnknownTopicOrPartition.Code
			}
			return kerr.ReplicaNotAvailable.Code
		case errors.Is(err, replica.ErrLogDirOffline), errors.Is(err, replica.ErrMoveUnsupported):
			s.log.Warn("server: AlterReplicaLogDirs", "topic", k.topic, "partition", k.part, "dir", dirs[k], "err", err)
			return kerr.KafkaStorageError.Code
		default:
			s.log.Error("server: AlterReplicaLogDirs", "topic", k.topic, "partition", k.part, "dir", dirs[k], "err", err)
			return errorCode(err)
		}
	}
	for _, k := range order {
		if n := len(resp.Topics); n == 0 || resp.Topics[n-1].Topic != k.topic {
			rt := kmsg.NewAlterReplicaLogDirsResponseTopic()
			rt.Topic = k.topic
			resp.Topics = append(resp.Topics, rt)
		}
		rp := kmsg.NewAlterReplicaLogDirsResponseTopicPartition()
		rp.Partition, rp.ErrorCode = k.part, code(k)
		rt := &resp.Topics[len(resp.Topics)-1]
		rt.Partitions = append(rt.Partitions, rp)
	}
	return kresp(resp), nil
}
