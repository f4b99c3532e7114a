package server

// Fetch from a follower (cluster mode): a Fetch whose replica id (v0-v14
// ReplicaID, v15+ ReplicaState.ID) is a broker id. Each partition goes to
// replication.Partition.HandleReplicaFetch, which records the follower's
// progress (the leader's ISR and high watermark move with it) and reads up
// to the log end rather than the high watermark. With fewer than min_bytes
// to send and no error, the request parks, as a consumer's does, until
// enough bytes were appended (to the log end, not the high watermark) or
// max_wait_ms passes.

import (
	"math"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/replication"
	"github.com/sluice/sluice/server/fetchresp"
)

// fetchReplicaID returns the replica id of a Fetch (-1 for consumers).
func fetchReplicaID(r *kmsg.FetchRequest) int32 {
	if r.Version >= 15 {
		return r.ReplicaState.ID
	}
	return r.ReplicaID
}

// fetchPartition resolves partition i of t for a consumer fetch: in
// cluster mode only the leader serves it.
func (s *Server) fetchPartition(t *topic, i int32, currentLeaderEpoch int32) (*partition, error) {
	p := t.parts[i]
	if s.cm != nil && (p == nil || !p.IsLeader()) {
		return nil, replication.ErrNotLeader
	}
	return p, checkLeaderEpoch(p, currentLeaderEpoch)
}

func (cm *clusterMode) handleReplicaFetch(rc *reqCtx, r *kmsg.FetchRequest, replicaID int32) *response {
	s := cm.s
	out := &fetchresp.Response{}
	targets := make([][]fetchTarget, len(r.Topics))
	out.Topics = make([]fetchresp.Topic, len(r.Topics))
	for i, rt := range r.Topics {
		var tid [16]byte
		if r.Version >= 13 {
			tid = rt.TopicID
		}
		t, terr := s.resolveTopic(rt.Topic, tid)
		ot := &out.Topics[i]
		ot.Name, ot.ID = rt.Topic, rt.TopicID
		if t != nil {
			ot.Name, ot.ID = t.name, t.id
		}
		ot.Partitions = make([]fetchresp.Partition, len(rt.Partitions))
		targets[i] = make([]fetchTarget, len(rt.Partitions))
		for j, rp := range rt.Partitions {
			ft := &targets[i][j]
			ft.offset, ft.maxBytes, ft.leaderEpoch = rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch
			switch {
			case terr != nil:
				ft.err = terr
			case rp.Partition < 0 || int(rp.Partition) >= len(t.parts) || t.parts[rp.Partition] == nil:
				ft.err = replication.ErrNotLeader
			default:
				ft.p, ft.replica = t.parts[rp.Partition], true
			}
			ot.Partitions[j].Partition = rp.Partition
		}
	}
	maxBytes := int64(r.MaxBytes)
	if maxBytes <= 0 {
		maxBytes = math.MaxInt32
	}
	cm.s.longPoll(rc, targets, r.MaxWaitMillis, r.MinBytes, out, func() (int64, bool) {
		return cm.fillReplicaFetch(out, targets, maxBytes, replicaID)
	})
	return fetchResponse(r.Version, out)
}

// fillReplicaFetch reads every target for follower replicaID into out
// (releasing what out held) and returns the bytes gathered and whether a
// partition failed.
func (cm *clusterMode) fillReplicaFetch(out *fetchresp.Response, targets [][]fetchTarget, maxBytes int64, replicaID int32) (total int64, hasErr bool) {
	releaseFetch(out)
	remaining := maxBytes
	now := cm.s.now()
	for i := range targets {
		for j := range targets[i] {
			ft := &targets[i][j]
			op := &out.Topics[i].Partitions[j]
			*op = fetchresp.Partition{Partition: op.Partition, HighWatermark: -1, LastStableOffset: -1, LogStartOffset: -1, PreferredReadReplica: -1}
			err := ft.err
			if err == nil {
				// Past the response limit the follower's position is
				// still recorded; what was read is dropped.
				limit := max(min(int64(ft.maxBytes), remaining), 1)
				var res replication.ReplicaFetchResult
				res, err = ft.p.HandleReplicaFetch(replicaID, ft.leaderEpoch, ft.offset, int(limit), now)
				op.HighWatermark, op.LastStableOffset, op.LogStartOffset = res.HighWatermark, res.HighWatermark, res.LogStartOffset
				if err == nil {
					if n := res.Records.Len(); n > 0 && (n <= remaining || total == 0) {
						op.Records = res.Records
						remaining -= n
						total += n
					} else {
						res.Records.Release()
					}
				}
			}
			if err != nil {
				hasErr = true
				op.ErrorCode = errorCode(err)
			}
		}
	}
	return total, hasErr
}
