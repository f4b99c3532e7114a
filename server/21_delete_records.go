package server

// DeleteRecords (key 21), served v0-v2.
//
//	v0: per partition, delete every record below an offset
//	v1: no changes
//	v2: flexible
//
// Offset -1 means the high watermark. An offset above the high watermark is
// OFFSET_OUT_OF_RANGE. The answer's low watermark is the new log start
// offset; the space below it is reclaimed by the backend when it can. Only
// the partition's leader serves it (NOT_LEADER_OR_FOLLOWER elsewhere); in
// cluster mode the followers' logs follow the leader's start offset. On a
// tiered topic the offset may lie below the local log start, in the remote
// tier (deleteRecordsRemote, tiered.go): the log start is then kept below
// the local one, in log-start-offset-checkpoint on every replica (the
// followers take it from their fetch answers), so a restart or a leader
// change keeps the records deleted, and the remote log manager deletes the
// remote segments below it. Unlike Kafka's DelayedDeleteRecords, the
// answer does not wait for the followers to reach the new start.
//
// An internal topic (__consumer_offsets, __transaction_state) is
// INVALID_TOPIC_EXCEPTION for every principal, super users included, as in
// Kafka's ReplicaManager.deleteRecordsOnLocalLog: the coordinators' state
// is a replay of those logs, and cutting one loses committed offsets or
// leaves a transaction that can never be aborted. As in Kafka, a principal
// without Delete on the topic is TOPIC_AUTHORIZATION_FAILED and an unknown
// partition UNKNOWN_TOPIC_OR_PARTITION before that check, and a follower
// NOT_LEADER_OR_FOLLOWER after it.

import (
	"errors"
	"fmt"

	"github.com/sluice/sluice/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleDeleteRecords(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.DeleteRecordsRequest)
	resp := r.ResponseKind().(*kmsg.DeleteRecordsResponse)
	for _, rt := range r.Topics {
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LowWatermark = -1
			p, err := s.lookup.leaderPartition(rt.Topic, rp.Partition)
			switch {
			case !s.az.allowedTopic(rc, acl.OpDelete, rt.Topic):
				err = errTopicAuthorization
			case errors.Is(err, errUnknownTopicOrPartition):
			case isInternalTopic(rt.Topic):
				err = fmt.Errorf("%w: cannot delete records of internal topic %s", errInvalidTopic, rt.Topic)
			}
			if err != nil {
				sp.ErrorCode = errorCode(err)
			} else if low, err := p.DeleteRecordsBefore(rp.Offset); err != nil {
				sp.ErrorCode = errorCode(err)
				if sp.ErrorCode == kerr.UnknownServerError.Code || sp.ErrorCode == kerr.KafkaStorageError.Code {
					s.log.Error("server: delete records", "topic", rt.Topic, "partition", rp.Partition, "err", err)
				}
			} else if low, err = s.deleteRecordsRemote(p, rp.Offset, low); err != nil { // tiered.go
				sp.ErrorCode = errorCode(err)
			} else {
				sp.LowWatermark = low
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return kresp(resp), nil
}
