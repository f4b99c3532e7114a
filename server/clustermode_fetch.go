package server

// Fetch from a follower (cluster mode): a Fetch whose replica id (v0-v14
// ReplicaID, v15+ ReplicaState.ID) is a broker id. Each partition goes to
// replication.Partition.HandleReplicaFetch, which records the follower's
// progress (the leader's ISR and high watermark move with it) and reads up
// to the log end rather than the high watermark. With fewer than min_bytes
// to send and no error, the request waits, as a consumer's does, on the
// partitions' Changed channels until max_wait_ms, then asks again.

import (
	"math"
	"reflect"
	"time"

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

type replicaTarget struct {
	p           *partition
	offset      int64
	maxBytes    int32
	leaderEpoch int32
	err         error
}

func (cm *clusterMode) handleReplicaFetch(rc *reqCtx, r *kmsg.FetchRequest, replicaID int32) *response {
	s := cm.s
	out := &fetchresp.Response{}
	targets := make([][]replicaTarget, len(r.Topics))
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
		targets[i] = make([]replicaTarget, len(rt.Partitions))
		for j, rp := range rt.Partitions {
			ft := &targets[i][j]
			ft.offset, ft.maxBytes, ft.leaderEpoch = rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch
			switch {
			case terr != nil:
				ft.err = terr
			case rp.Partition < 0 || int(rp.Partition) >= len(t.parts) || t.parts[rp.Partition] == nil:
				ft.err = replication.ErrNotLeader
			default:
				ft.p = t.parts[rp.Partition]
			}
			ot.Partitions[j].Partition = rp.Partition
		}
	}
	maxBytes := int64(r.MaxBytes)
	if maxBytes <= 0 {
		maxBytes = math.MaxInt32
	}
	var deadline time.Time
	if r.MaxWaitMillis > 0 {
		deadline = time.Now().Add(time.Duration(r.MaxWaitMillis) * time.Millisecond)
	}
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	srvClosing, connDone := rc.closing(s)
	var cases []reflect.SelectCase
	for {
		cases = cases[:0]
		for i := range targets {
			for j := range targets[i] {
				if ft := &targets[i][j]; ft.p != nil && ft.err == nil {
					cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ft.p.Changed())})
				}
			}
		}
		total, hasErr := cm.fillReplicaFetch(out, targets, maxBytes, replicaID)
		if total >= int64(r.MinBytes) || hasErr || deadline.IsZero() || len(cases) == 0 {
			break
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			break
		}
		releaseFetch(out)
		if timer == nil {
			timer = time.NewTimer(wait)
		} else {
			timer.Reset(wait)
		}
		nParts := len(cases)
		cases = append(cases,
			reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(timer.C)},
			reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(srvClosing)})
		if connDone != nil {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(connDone)})
		}
		chosen, _, _ := reflect.Select(cases)
		if chosen >= nParts {
			cm.fillReplicaFetch(out, targets, maxBytes, replicaID)
			break
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
	return fetchResponse(r.Version, out)
}

// fillReplicaFetch reads every target for follower replicaID into out
// (releasing what out held) and returns the bytes gathered and whether a
// partition failed.
func (cm *clusterMode) fillReplicaFetch(out *fetchresp.Response, targets [][]replicaTarget, maxBytes int64, replicaID int32) (total int64, hasErr bool) {
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
