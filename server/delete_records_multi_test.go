package server

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// drTwoPartitions is a leader of two partitions of "t", replicas 1 (this
// broker), 2 and 3, with 4 records each.
func drTwoPartitions(t *testing.T) *Server {
	s, fp := newFakeClusterServer(t)
	id := fp.addTopic("t", 1, 1)
	for p := int32(0); p < 2; p++ {
		if c := mustCall(t, s, 5, leaderAndIsr("t", id, p, 1, 1, 5)).(*kmsg.LeaderAndISRResponse).Topics[0].Partitions[0].ErrorCode; c != 0 {
			t.Fatalf("LeaderAndIsr: %s", code(c))
		}
		for range 4 {
			if c := produceOne(t, s, "t", p, 1, 5000); c != 0 {
				t.Fatalf("produce: %s", code(c))
			}
		}
	}
	return s
}

// drFollowerFetch is a fetch of replica at offset 4 of part, sending logStart.
func drFollowerFetch(t *testing.T, s *Server, replica, part int32, logStart int64) {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxBytes, req.MaxWaitMillis = replica, 1<<20, 0
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = part, 4, 1<<20, -1, logStart
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	if _, err := call(t, s, 11, req); err != nil {
		t.Fatal(err)
	}
}

// drDelete sends a DeleteRecords of "t" offs with timeoutMs.
func drDelete(t *testing.T, s *Server, offs map[int32]int64, timeoutMs int32) *kmsg.DeleteRecordsResponse {
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.TimeoutMillis = timeoutMs
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = "t"
	for p := int32(0); p < 2; p++ {
		if o, ok := offs[p]; ok {
			rp := kmsg.NewDeleteRecordsRequestTopicPartition()
			rp.Partition, rp.Offset = p, o
			rt.Partitions = append(rt.Partitions, rp)
		}
	}
	req.Topics = append(req.Topics, rt)
	resp, err := call(t, s, 2, req)
	if err != nil {
		t.Fatal(err)
	}
	return resp.(*kmsg.DeleteRecordsResponse)
}

// TestDeleteRecordsSettlesEachPartition: partition 1's followers reach the
// new start while partition 0's never do. As Kafka's DelayedDeleteRecords,
// which checks every partition on each tryComplete, partition 1 is
// answered NONE with its low watermark and only partition 0 times out.
// Before, the wait woke only on partition 0's change and answered every
// partition still pending at the timeout REQUEST_TIMED_OUT.
func TestDeleteRecordsSettlesEachPartition(t *testing.T) {
	s := drTwoPartitions(t)
	for p := int32(0); p < 2; p++ {
		drFollowerFetch(t, s, 2, p, 0)
		drFollowerFetch(t, s, 3, p, 0)
	}
	waiting := make(chan struct{}, 16)
	deleteRecordsWaiting = func() { waiting <- struct{}{} }
	t.Cleanup(func() { deleteRecordsWaiting = nil })
	c := make(chan *kmsg.DeleteRecordsResponse, 1)
	go func() { c <- drDelete(t, s, map[int32]int64{0: 2, 1: 2}, 1000) }()
	<-waiting
	drFollowerFetch(t, s, 2, 1, 2)
	drFollowerFetch(t, s, 3, 1, 2)
	resp := <-c
	for _, p := range resp.Topics[0].Partitions {
		t.Logf("partition %d: %s low watermark %d", p.Partition, code(p.ErrorCode), p.LowWatermark)
	}
	if p := resp.Topics[0].Partitions[1]; p.ErrorCode != 0 || p.LowWatermark != 2 {
		t.Errorf("partition 1, whose followers all reached 2 within the timeout: %s, %d; Kafka: NONE, 2", code(p.ErrorCode), p.LowWatermark)
	}
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != kerr.RequestTimedOut.Code {
		t.Errorf("partition 0: %s", code(p.ErrorCode))
	}
}

// TestDeleteRecordsNegativeOffset: only -1 stands for the high watermark;
// as Kafka's Partition.deleteRecordsOnLeader, -2 is OFFSET_OUT_OF_RANGE
// and deletes nothing (before, any negative offset deleted up to the high
// watermark).
func TestDeleteRecordsNegativeOffset(t *testing.T) {
	s := drTwoPartitions(t)
	for p := int32(0); p < 2; p++ {
		drFollowerFetch(t, s, 2, p, 0)
		drFollowerFetch(t, s, 3, p, 0)
	}
	resp := drDelete(t, s, map[int32]int64{0: -2}, 50)
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != kerr.OffsetOutOfRange.Code {
		t.Errorf("offset -2: %s; Kafka: OFFSET_OUT_OF_RANGE", code(p.ErrorCode))
	}
	if start := s.rm.Partition("t", 0).LogStart(); start != 0 {
		t.Errorf("offset -2 moved the log start to %d", start)
	}
}

// TestDeleteRecordsWaitEndsAtShutdown: a DeleteRecords waiting for
// followers that never catch up ends when the server shuts down, answered
// REQUEST_TIMED_OUT, rather than holding Shutdown for its timeout_ms (an
// hour here).
func TestDeleteRecordsWaitEndsAtShutdown(t *testing.T) {
	s := drTwoPartitions(t)
	drFollowerFetch(t, s, 2, 0, 0)
	drFollowerFetch(t, s, 3, 0, 0)
	waiting := make(chan struct{}, 16)
	deleteRecordsWaiting = func() { waiting <- struct{}{} }
	t.Cleanup(func() { deleteRecordsWaiting = nil })
	c := make(chan *kmsg.DeleteRecordsResponse, 1)
	go func() { c <- drDelete(t, s, map[int32]int64{0: 2}, 3600_000) }()
	<-waiting
	s.Shutdown()
	if p := (<-c).Topics[0].Partitions[0]; p.ErrorCode != kerr.RequestTimedOut.Code {
		t.Errorf("answered %s at shutdown, want REQUEST_TIMED_OUT", code(p.ErrorCode))
	}
}
