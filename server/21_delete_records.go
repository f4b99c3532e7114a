package server

// DeleteRecords (key 21), served v0-v2.
//
//	v0: per partition, delete every record below an offset
//	v1: no changes
//	v2: flexible
//
// Offset -1 means the high watermark. An offset above the high watermark,
// or negative other than -1, is OFFSET_OUT_OF_RANGE. The answer's low watermark is the new log start
// offset; the space below it is reclaimed by the backend when it can. Only
// the partition's leader serves it (NOT_LEADER_OR_FOLLOWER elsewhere); in
// cluster mode the followers' logs follow the leader's start offset. On a
// tiered topic the offset may lie below the local log start, in the remote
// tier (deleteRecordsRemote, tiered.go): the log start is then kept below
// the local one, in log-start-offset-checkpoint on every replica (the
// followers take it from their fetch answers), so a restart or a leader
// change keeps the records deleted, and the remote log manager deletes the
// remote segments below it.
//
// As Kafka's DelayedDeleteRecords, a partition's answer waits until its
// low watermark (replication.Partition.LowWatermark: the least log start
// offset of the leader and its followers on live brokers, each follower's
// as it sent it in its last fetch) reaches the offset asked for, and its
// low_watermark is that low watermark. A partition still short of it when
// the request's timeout_ms has passed is REQUEST_TIMED_OUT (the records
// are deleted on the leader all the same); one whose leadership moves
// meanwhile is NOT_LEADER_OR_FOLLOWER. The request's goroutine waits on
// the partitions' Changed, which a follower's new log start closes; the
// server or the connection going away ends the wait as a timeout does
// (requests of one connection run one at a time, so a client holds at
// most one waiting DeleteRecords per connection).
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
	"reflect"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/replica"
)

func handleDeleteRecords(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.DeleteRecordsRequest)
	resp := r.ResponseKind().(*kmsg.DeleteRecordsResponse)
	var pending []pendingDelete
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
			if err == nil && rp.Offset < -1 {
				// Only -1 stands for the high watermark; Kafka's
				// deleteRecordsOnLeader refuses any other negative offset.
				err = fmt.Errorf("%w: delete before offset %d", engine.ErrOffsetOutOfRange, rp.Offset)
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
				// Kafka's requestedOffset: the offset asked for, the high
				// watermark for -1 (which low is then).
				required := rp.Offset
				if required < 0 {
					required = low
				}
				sp.LowWatermark = low
				pending = append(pending, pendingDelete{topic: len(resp.Topics), part: len(st.Partitions), p: p, required: required})
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	s.awaitLowWatermarks(rc, resp, pending, time.Duration(r.TimeoutMillis)*time.Millisecond)
	return kresp(resp), nil
}

// deleteRecordsWaiting, when set (by tests, before any request), is
// called each time a DeleteRecords starts waiting for a low watermark.
var deleteRecordsWaiting func()

// pendingDelete is one partition of a DeleteRecords waiting for its low
// watermark to reach required (Kafka's DeleteRecordsPartitionStatus);
// topic and part index its answer.
type pendingDelete struct {
	topic, part int
	p           *replica.Partition
	required    int64
}

// awaitLowWatermarks settles every pending partition of resp once its
// low watermark reaches the offset asked for, or with REQUEST_TIMED_OUT
// (low_watermark: the one at the deletion) when timeout passes first
// (Kafka's DelayedDeleteRecords, tryComplete and onExpiration). Any
// pending partition's change wakes it, every pass takes the live brokers
// anew (Kafka checks hasAliveBroker on each tryComplete), and a server or
// connection going away ends the wait as a timeout does.
func (s *Server) awaitLowWatermarks(rc *reqCtx, resp *kmsg.DeleteRecordsResponse, pending []pendingDelete, timeout time.Duration) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	srvClosing, connDone := rc.closing(s)
	var cases []reflect.SelectCase
	for pass := 0; ; pass++ {
		// The channels before the look: a change after it wakes the wait.
		cases = cases[:0]
		for _, d := range pending {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(d.p.Changed())})
		}
		pending = s.settleLowWatermarks(resp, pending, pass == 0)
		if len(pending) == 0 {
			return
		}
		if timer == nil {
			timer = time.NewTimer(max(timeout, 0))
		}
		if deleteRecordsWaiting != nil {
			deleteRecordsWaiting()
		}
		ends := len(cases)
		cases = append(cases,
			reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(timer.C)},
			reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(srvClosing)})
		if connDone != nil {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(connDone)})
		}
		if chosen, _, _ := reflect.Select(cases); chosen >= ends {
			// Expired: what reached its low watermark meanwhile is
			// answered, the rest timed out.
			for _, d := range s.settleLowWatermarks(resp, pending, false) {
				resp.Topics[d.topic].Partitions[d.part].ErrorCode = kerr.RequestTimedOut.Code
			}
			return
		}
	}
}

// settleLowWatermarks answers the partitions of pending whose low
// watermark reached the offset asked for (or failed) and returns the
// others; first records their low watermark now, answered if they time out.
func (s *Server) settleLowWatermarks(resp *kmsg.DeleteRecordsResponse, pending []pendingDelete, first bool) []pendingDelete {
	live := map[int32]bool{}
	for _, b := range s.md.brokers() {
		live[b.ID] = true
	}
	alive := func(id int32) bool { return live[id] }
	left := pending[:0]
	for _, d := range pending {
		sp := &resp.Topics[d.topic].Partitions[d.part]
		lw, err := d.p.LowWatermark(alive)
		switch {
		case err != nil:
			sp.ErrorCode, sp.LowWatermark = errorCode(err), -1
		case lw >= d.required:
			sp.LowWatermark = lw
		default:
			if first {
				sp.LowWatermark = lw
			}
			left = append(left, d)
		}
	}
	return left
}
