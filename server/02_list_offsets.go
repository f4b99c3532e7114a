package server

// ListOffsets (key 2), served v1-v8.
//
//	v1: one offset per partition for a timestamp (v0's offset lists are gone)
//	v2: isolation level (read_committed answers -1 with the last stable offset)
//	v4: current leader epoch in the request, leader epoch in the response
//	v6: flexible
//	v7: timestamp -3 asks for the record with the largest timestamp (KIP-734)
//	v8: timestamp -4, earliest local offset (KIP-405); without tiered
//	    storage it is the earliest offset
//
// Timestamps: -1 latest (high watermark, or last stable offset for
// read_committed), -2 earliest (log start offset), -3 max timestamp, and
// any ts >= 0: the first offset whose record timestamp is >= ts, or offset
// -1 and timestamp -1 when there is none (for read_committed, none at or
// above the last stable offset). Other negative values are
// INVALID_REQUEST.

import (
	"fmt"

	"github.com/sluice/sluice/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	listLatest        = -1
	listEarliest      = -2
	listMaxTimestamp  = -3
	listEarliestLocal = -4
)

func handleListOffsets(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.ListOffsetsRequest)
	resp := r.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, rt := range r.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		allowed := s.az.allowedTopic(rc, acl.OpDescribe, rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			off, ts, epoch, err := int64(0), int64(0), int32(0), error(errTopicAuthorization)
			if allowed {
				off, ts, epoch, err = s.listOffset(r.Version, r.IsolationLevel, rt.Topic, rp)
			}
			if err != nil {
				sp.ErrorCode = errorCode(err)
				sp.Offset, sp.Timestamp = -1, -1
				if sp.ErrorCode == kerr.UnknownServerError.Code || sp.ErrorCode == kerr.KafkaStorageError.Code {
					s.log.Error("server: list offsets", "topic", rt.Topic, "partition", rp.Partition, "err", err)
				}
			} else {
				sp.Offset, sp.Timestamp, sp.LeaderEpoch = off, ts, epoch
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return kresp(resp), nil
}

func (s *Server) listOffset(version int16, isolation int8, topicName string, rp kmsg.ListOffsetsRequestTopicPartition) (offset, ts int64, epoch int32, err error) {
	p, err := s.lookup.leaderPartition(topicName, rp.Partition)
	if err != nil {
		return 0, 0, 0, err
	}
	if err := checkLeaderEpoch(p, rp.CurrentLeaderEpoch); err != nil {
		return 0, 0, 0, err
	}
	epoch = p.LeaderEpoch()
	switch t := rp.Timestamp; {
	case t == listLatest:
		if isolation == 1 {
			return p.LastStableOffset(), -1, epoch, nil
		}
		return p.HighWatermark(), -1, epoch, nil
	case t == listEarliest || t == listEarliestLocal && version >= 8:
		return p.LogStartOffset(), -1, epoch, nil
	case t == listMaxTimestamp && version >= 7, t >= 0:
		off, ts, ok, err := p.OffsetForTimestamp(t)
		if err != nil {
			return 0, 0, 0, err
		}
		if !ok || (isolation == 1 && off >= p.LastStableOffset()) {
			// read_committed finds only offsets below the LSO (Kafka's
			// Partition.fetchOffsetForTimestamp lastFetchableOffset).
			return -1, -1, epoch, nil
		}
		return off, ts, epoch, nil
	default:
		return 0, 0, 0, fmt.Errorf("%w: timestamp %d at version %d", errInvalidRequest, t, version)
	}
}
