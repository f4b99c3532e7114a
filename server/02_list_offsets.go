package server

// ListOffsets (key 2), served v0-v9.
//
//	v0: a list of offsets per partition, at most max_num_offsets of them
//	    (old_style_offsets; see listOffsetsV0)
//	v1: one offset per partition for a timestamp (v0's offset lists are gone)
//	v2: isolation level (read_committed answers -1 with the last stable offset)
//	v4: current leader epoch in the request, leader epoch in the response
//	v6: flexible
//	v7: timestamp -3 asks for the record with the largest timestamp (KIP-734)
//	v8: timestamp -4, earliest local offset (KIP-405); without tiered
//	    storage it is the earliest offset
//	v9: timestamp -5, latest tiered offset (KIP-1005): the last offset in
//	    remote storage, -1 when none is (or the topic is not tiered)
//
// A tiered topic (tiered.go) answers -2 with the first remote offset,
// the log start offset of Kafka's UnifiedLog, and searches a timestamp in
// the remote tier before the local log.
//
// Timestamps: -1 latest (high watermark, or last stable offset for
// read_committed), -2 earliest (log start offset), -3 max timestamp, and
// any ts >= 0: the first offset whose record timestamp is >= ts, or offset
// -1 and timestamp -1 when there is none (for read_committed, none at or
// above the last stable offset). As Kafka's ReplicaManager.fetchOffset,
// a negative timestamp the request's version does not know (-3 before v7,
// -4 before v8, -5 before v9, any other) is UNSUPPORTED_VERSION, and a
// partition named twice in one request (v1+) INVALID_REQUEST each time.
//
// The leader epoch answered (v4+) is the epoch of the offset answered, as
// Kafka's fetchOffsetByTimestamp: -1 the current leader epoch, every other
// timestamp the epoch its offset was written in (epochAt; from the remote
// segment metadata below the local log start), -1 when unknown or when
// no offset is found.

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/replica"
	"github.com/sluice/sluice/replication"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// debuggingReplicaID is ListOffsets v0's replica id that may read a
// follower (Kafka's ListOffsetsRequest.DEBUGGING_REPLICA_ID).
const debuggingReplicaID = -2

const (
	listLatest        = -1
	listEarliest      = -2
	listMaxTimestamp  = -3
	listEarliestLocal = -4
	listLatestTiered  = -5
)

func handleListOffsets(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.ListOffsetsRequest)
	resp := r.ResponseKind().(*kmsg.ListOffsetsResponse)
	dups := duplicateListPartitions(r)
	for _, rt := range r.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		allowed := s.az.allowedTopic(rc, acl.OpDescribe, rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			if r.Version == 0 {
				st.Partitions = append(st.Partitions, s.listOffsetsV0(r.ReplicaID, rt.Topic, rp, allowed))
				continue
			}
			off, ts, epoch, err := int64(0), int64(0), int32(0), error(errTopicAuthorization)
			switch {
			case !allowed:
			case dups[listPartition{rt.Topic, rp.Partition}]:
				err = fmt.Errorf("%w: partition %s-%d named twice", errInvalidRequest, rt.Topic, rp.Partition)
			case !listTimestampSupported(rp.Timestamp, r.Version):
				err = fmt.Errorf("%w: timestamp %d at ListOffsets v%d", errUnsupportedVersion, rp.Timestamp, r.Version)
			default:
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

// listPartition names a partition of a ListOffsets request.
type listPartition struct {
	topic     string
	partition int32
}

// duplicateListPartitions returns the partitions r names more than once
// (Kafka's ListOffsetsRequest.duplicatePartitions), nil when none is.
func duplicateListPartitions(r *kmsg.ListOffsetsRequest) map[listPartition]bool {
	var seen, dups map[listPartition]bool
	for _, rt := range r.Topics {
		for _, rp := range rt.Partitions {
			tp := listPartition{rt.Topic, rp.Partition}
			if seen == nil {
				seen = map[listPartition]bool{}
			}
			if seen[tp] {
				if dups == nil {
					dups = map[listPartition]bool{}
				}
				dups[tp] = true
			}
			seen[tp] = true
		}
	}
	return dups
}

// listTimestampSupported reports whether ListOffsets version knows
// timestamp ts (Kafka's ReplicaManager.isListOffsetsTimestampUnsupported,
// negated): any ts >= 0; -1 and -2 from v1; -3 from v7; -4 from v8; -5
// from v9.
func listTimestampSupported(ts int64, version int16) bool {
	switch ts {
	case listLatest, listEarliest:
		return true
	case listMaxTimestamp:
		return version >= 7
	case listEarliestLocal:
		return version >= 8
	case listLatestTiered:
		return version >= 9
	}
	return ts >= 0
}

func (s *Server) listOffset(version int16, isolation int8, topicName string, rp kmsg.ListOffsetsRequestTopicPartition) (offset, ts int64, epoch int32, err error) {
	p, err := s.lookup.leaderPartition(topicName, rp.Partition)
	if err != nil {
		return 0, 0, 0, err
	}
	if err := checkLeaderEpoch(p, rp.CurrentLeaderEpoch); err != nil {
		return 0, 0, 0, err
	}
	switch t := rp.Timestamp; {
	case t == listLatest:
		if isolation == 1 {
			return p.LastStableOffset(), -1, p.LeaderEpoch(), nil
		}
		return p.HighWatermark(), -1, p.LeaderEpoch(), nil
	case t == listEarliestLocal && version >= 8:
		local := p.LogStartOffset()
		return local, -1, s.epochAt(p, local), nil
	case t == listEarliest:
		start, _, err := s.remoteLogStart(p)
		if err != nil {
			return 0, 0, 0, err
		}
		return start, -1, s.epochAt(p, start), nil
	case t == listLatestTiered && version >= 9:
		off := s.latestTiered(p)
		if off < 0 {
			return -1, -1, -1, nil // Kafka: NO_PARTITION_LEADER_EPOCH
		}
		return off, -1, s.epochAt(p, off), nil
	case t == listMaxTimestamp && version >= 7, t >= 0:
		if t >= 0 && s.tiered != nil { // older records may be remote (tiered.go)
			if off, ts, ok, err := s.remoteOffsetForTimestamp(p, t); err != nil {
				return 0, 0, 0, err
			} else if ok {
				return off, ts, s.epochAt(p, off), nil
			}
		}
		off, ts, ok, err := p.OffsetForTimestamp(t)
		if err != nil {
			return 0, 0, 0, err
		}
		if !ok || (isolation == 1 && off >= p.LastStableOffset()) {
			// read_committed finds only offsets below the LSO (Kafka's
			// Partition.fetchOffsetForTimestamp lastFetchableOffset).
			return -1, -1, -1, nil
		}
		return off, ts, s.epochAt(p, off), nil
	default:
		return 0, 0, 0, fmt.Errorf("%w: timestamp %d at version %d", errInvalidRequest, t, version)
	}
}

// epochAt is the leader epoch ListOffsets answers with offset, as Kafka's
// UnifiedLog.fetchOffsetByTimestamp: the epoch offset was written in
// (LeaderEpochFileCache.epochForOffset), -1 when unknown. Kafka's cache
// covers the remote tier and gains an entry at the log end on every
// leader change; a Sluice log's history starts at the local log start
// and gains entries on appends, so an offset below the local log start
// takes its epoch from the remote segment metadata, and one at the log
// end (nothing written there yet) the current leader epoch.
func (s *Server) epochAt(p *replica.Partition, offset int64) int32 {
	if s.tiered != nil && offset < p.LogStartOffset() {
		if t := s.rm.Topic(p.Topic()); t != nil {
			if e, ok, err := s.tiered.RemoteEpochForOffset(t, p, offset); err == nil && ok {
				return e
			}
		}
		return -1
	}
	if offset >= p.LogEndOffset() {
		return p.LeaderEpoch()
	}
	if e, ok := p.EpochAt(offset); ok {
		return e
	}
	return -1
}

// listOffsetsV0 answers one partition of a v0 request as Kafka 3.9's
// handleListOffsetRequestV0 does: the partition's old_style_offsets from
// legacyOffsetsBefore, and for a consumer (replica id -1) none above the
// high watermark: the offsets above it are dropped and the high watermark
// put first (Partition.legacyFetchOffsetsForTimestamp). Timestamps below
// -2 are UNSUPPORTED_VERSION (v0 knows only -1 latest and -2 earliest). A
// negative max_num_offsets is UNKNOWN_SERVER_ERROR, the code Kafka's
// NegativeArraySizeException gives it.
func (s *Server) listOffsetsV0(replicaID int32, topic string, rp kmsg.ListOffsetsRequestTopicPartition, allowed bool) kmsg.ListOffsetsResponseTopicPartition {
	sp := kmsg.NewListOffsetsResponseTopicPartition()
	sp.Partition = rp.Partition
	switch {
	case !allowed:
		sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
		return sp
	case rp.Timestamp < listEarliest:
		sp.ErrorCode = kerr.UnsupportedVersion.Code
		return sp
	}
	p, err := s.lookup.leaderPartition(topic, rp.Partition)
	if replicaID == debuggingReplicaID && errors.Is(err, replication.ErrNotLeader) {
		// Kafka's fetchOnlyFromLeader is false for the debugging id: a
		// follower answers from its own log.
		if f := s.lookup.rm.Partition(topic, rp.Partition); f != nil {
			p, err = f, nil
		}
	}
	if err != nil {
		sp.ErrorCode = errorCode(err)
		return sp
	}
	if rp.MaxNumOffsets < 0 {
		sp.ErrorCode = kerr.UnknownServerError.Code
		return sp
	}
	offsets := legacyOffsetsBefore(p.SegmentTimes(time.Now().UnixMilli()), rp.Timestamp, rp.MaxNumOffsets)
	if replicaID == -1 {
		if hw := p.HighWatermark(); len(offsets) > 0 && offsets[0] > hw {
			i := 0
			for i < len(offsets) && offsets[i] > hw {
				i++
			}
			offsets = append([]int64{hw}, offsets[i:]...)
		}
	}
	sp.OldStyleOffsets = offsets
	return sp
}

// legacyOffsetsBefore is Kafka's UnifiedLog.legacyFetchOffsetsBefore over
// segs (oldest first): from the last entry (latest, -1), the first (earliest,
// -2) or the last whose time is <= ts, at most maxNum offsets going back,
// in descending order. maxNum must be >= 0.
func legacyOffsetsBefore(segs []replica.OffsetTime, ts int64, maxNum int32) []int64 {
	var from int
	switch ts {
	case listLatest:
		from = len(segs) - 1
	case listEarliest:
		from = 0
	default:
		from = len(segs) - 1
		for from >= 0 && segs[from].Ms > ts {
			from--
		}
	}
	n := min(int(maxNum), from+1)
	out := make([]int64, 0, max(n, 0))
	for j := 0; j < n; j++ {
		out = append(out, segs[from-j].Offset)
	}
	slices.SortFunc(out, func(a, b int64) int { return cmp.Compare(b, a) })
	return out
}
