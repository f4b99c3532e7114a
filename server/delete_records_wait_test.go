package server

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/metadata"
)

// TestDeleteRecordsWaitsForFollowers: as Kafka's DelayedDeleteRecords, a
// DeleteRecords on a leader with followers is answered once the
// partition's low watermark (the least log start offset of the leader and
// its followers on live brokers, a follower's as it sent it in its fetch)
// reaches the offset asked for, with that low watermark; until the
// request's timeout_ms, after which it is REQUEST_TIMED_OUT with the low
// watermark at the deletion. A follower on a broker that is not alive is
// not waited for. Before, the answer came at once with the leader's new
// log start, whatever the followers held.
func TestDeleteRecordsWaitsForFollowers(t *testing.T) {
	s, fp := newFakeClusterServer(t)
	id := fp.addTopic("t", 1)
	if c := mustCall(t, s, 5, leaderAndIsr("t", id, 0, 1, 1, 5)).(*kmsg.LeaderAndISRResponse).Topics[0].Partitions[0].ErrorCode; c != 0 {
		t.Fatalf("LeaderAndIsr: %s", code(c))
	}
	for range 4 {
		if c := produceOne(t, s, "t", 0, 1, 5000); c != 0 {
			t.Fatalf("produce: %s", code(c))
		}
	}
	// fetch is follower replica's fetch from offset 4 (the log end),
	// sending its log start.
	fetch := func(replica int32, logStart int64) { drFollowerFetch(t, s, replica, 0, logStart) }
	fetch(2, 0)
	fetch(3, 0)
	if hw := s.rm.Partition("t", 0).HighWatermark(); hw != 4 {
		t.Fatalf("high watermark %d after both followers fetched to 4", hw)
	}
	type answer struct {
		code int16
		low  int64
	}
	deleteRecords := func(offset int64, timeoutMs int32) answer {
		req := kmsg.NewPtrDeleteRecordsRequest()
		req.TimeoutMillis = timeoutMs
		rt := kmsg.NewDeleteRecordsRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewDeleteRecordsRequestTopicPartition()
		rp.Partition, rp.Offset = 0, offset
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := call(t, s, 2, req)
		if err != nil {
			t.Error(err)
			return answer{-1, -1}
		}
		p := resp.(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0]
		return answer{p.ErrorCode, p.LowWatermark}
	}
	waiting := make(chan struct{}, 16)
	deleteRecordsWaiting = func() { waiting <- struct{}{} }
	t.Cleanup(func() { deleteRecordsWaiting = nil })
	// goDelete starts a delete and returns once it waits for the
	// followers.
	goDelete := func(offset int64) <-chan answer {
		c := make(chan answer, 1)
		go func() { c <- deleteRecords(offset, 60_000) }()
		<-waiting
		return c
	}

	// No follower has the new start: timed out, the records deleted on
	// the leader all the same.
	if got := deleteRecords(2, 50); got != (answer{kerr.RequestTimedOut.Code, 0}) {
		t.Fatalf("delete with no follower at the new start: %s, low watermark %d; want REQUEST_TIMED_OUT, 0", code(got.code), got.low)
	}
	<-waiting // it waited once
	if start := s.rm.Partition("t", 0).LogStart(); start != 2 {
		t.Fatalf("leader's log start %d after the timed out delete, want 2", start)
	}
	fetch(2, 2)
	if got := deleteRecords(2, 50); got != (answer{kerr.RequestTimedOut.Code, 0}) {
		t.Fatalf("delete with one follower of two at the new start: %s, low watermark %d; want REQUEST_TIMED_OUT, 0", code(got.code), got.low)
	}
	<-waiting
	// A waiting delete is answered when the last follower reports it.
	c := goDelete(2)
	fetch(3, 2)
	if got := <-c; got != (answer{0, 2}) {
		t.Fatalf("delete once every follower is at the new start: %s, low watermark %d; want 2", code(got.code), got.low)
	}

	// Broker 3 is not alive any more: only broker 2 is waited for.
	fp.mu.Lock()
	fp.live = slices.DeleteFunc(fp.live, func(b metadata.Broker) bool { return b.ID == 3 })
	fp.mu.Unlock()
	c = goDelete(3)
	fetch(2, 3)
	if got := <-c; got != (answer{0, 3}) {
		t.Fatalf("delete with the live follower at the new start: %s, low watermark %d; want 3", code(got.code), got.low)
	}
}
