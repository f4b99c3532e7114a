package server

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/record"
	"github.com/sluice/sluice/replication"
)

// TestProducePipelineAckAfterTruncation: request N (topic a, ISR never catches
// up) holds the writer until its timeout; meanwhile request N+1 (topic b)
// was appended, b's leadership moved to broker 2, which never had the
// record: this broker truncated it and replicated broker 2's records, and
// its HW passed N+1's offset. N+1 must not be acknowledged.
func TestProducePipelineAckAfterTruncation(t *testing.T) {
	t.Parallel()
	s, _, rc := pipelineAB(t)
	n := rc.Send(produceReq("a", 0, -1, 1500))
	n1 := rc.Send(produceReq("b", 0, -1, 30000))
	pb := s.rm.Partition("b", 0)
	takeOverAndTruncate(t, pb.Partition)

	ra := kmsg.NewPtrProduceResponse()
	ra.Version = 9
	rc.Recv(n, ra)
	t.Logf("N: %s", code(ra.Topics[0].Partitions[0].ErrorCode))
	rb := kmsg.NewPtrProduceResponse()
	rb.Version = 9
	rc.Recv(n1, rb)
	sp := rb.Topics[0].Partitions[0]
	if sp.ErrorCode == 0 {
		t.Errorf("N+1 acknowledged at base offset %d, but its record was truncated (log end %d, HW %d, leader now 2)", sp.BaseOffset, pb.Log().EndOffset(), pb.HighWatermark())
	}
}

// TestProducePipelineLocalTime: N+1 waits in the writer behind N's ISR wait;
// that head-of-line time is not work of the broker on N+1 but its response
// queue time, and N's wait is N's remote time. The test orders the events
// itself, so both bounds below follow from the order whatever the
// machine's load: N+2 (to b, after N+1) is appended only once the handler
// is done with N+1, then b's ISR catches up (deciding N+1 and N+2), then a
// gap the test measures passes, then a's ISR catches up (deciding N). N+1
// was handled and decided before the gap began and can be written only
// after N, decided after it ended.
func TestProducePipelineLocalTime(t *testing.T) {
	s, m, rc := pipelineAB(t)
	n := rc.Send(produceReq("a", 0, -1, 60000))
	n1 := rc.Send(produceReq("b", 0, -1, 60000))
	n2 := rc.Send(produceReq("b", 0, -1, 60000))
	pa, pb := s.rm.Partition("a", 0), s.rm.Partition("b", 0)
	waitLogEnd(t, pa, 1, "a not appended")
	waitLogEnd(t, pb, 2, "b not appended twice")
	followersFetch(t, pb.Partition, 2) // decides N+1 and N+2; N still waits
	gapStart := time.Now()
	time.Sleep(300 * time.Millisecond)
	gap := float64(time.Since(gapStart)) / float64(time.Millisecond)
	followersFetch(t, pa.Partition, 1) // decides N
	for _, corr := range []int32{n, n1, n2} {
		r := kmsg.NewPtrProduceResponse()
		r.Version = 9
		rc.Recv(corr, r)
		if c := r.Topics[0].Partitions[0].ErrorCode; c != 0 {
			t.Fatalf("request %d: %s", corr, code(c))
		}
	}
	fams := gather(t, m)
	sum := func(ph string) float64 {
		for _, mt := range fams["kafka_network_requestmetrics_"+ph].GetMetric() {
			for _, l := range mt.Label {
				if l.GetName() == "request" && l.GetValue() == "Produce" {
					return mt.GetHistogram().GetSampleSum()
				}
			}
		}
		t.Fatalf("no %s series for Produce", ph)
		return 0
	}
	local, remote, queue := sum("localtimems"), sum("remotetimems"), sum("responsequeuetimems")
	t.Logf("gap %.1f ms; Produce local %.1f ms, remote %.1f ms, response queue %.1f ms", gap, local, remote, queue)
	if queue < gap {
		t.Errorf("response queue time %.1f ms: N+1's wait behind N (at least the %.1f ms gap) is missing", queue, gap)
	}
	if remote < gap {
		t.Errorf("remote time %.1f ms: N's wait for its ISR (at least the %.1f ms gap) is missing", remote, gap)
	}
	if local >= queue {
		t.Errorf("local time %.1f ms is not below the response queue time %.1f ms: N+1's wait behind N counted as handling", local, queue)
	}
}

// TestProducePipelineReadYourWrites: Kafka handles a connection's requests one
// after the other, so a ListOffsets(latest) sent after an acks=all produce
// on the same connection sees the produced records once the produce was
// answered without error. Pipelined, it is handled before the produce
// commits.
func TestProducePipelineReadYourWrites(t *testing.T) {
	s, fp, _ := newFakeClusterMetricsServer(t, nil)
	id := fp.addTopic("t", 1)
	mustCall(t, s, 5, leaderAndIsr("t", id, 0, 1, 1, 5))
	rc := serveFake(t, s)
	a := rc.Send(produceReq("t", 0, -1, 30000))
	lo := kmsg.NewPtrListOffsetsRequest()
	lo.Version = 4
	lo.ReplicaID = -1
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "t"
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Partition, lp.Timestamp, lp.CurrentLeaderEpoch = 0, -1, -1
	lt.Partitions = append(lt.Partitions, lp)
	lo.Topics = append(lo.Topics, lt)
	b := rc.Send(lo)
	p := s.rm.Partition("t", 0)
	waitLogEnd(t, p, 1, "not appended")
	time.Sleep(200 * time.Millisecond) // let the ListOffsets be handled (as it would be, pipelined)
	followersFetch(t, p.Partition, 1)
	ra := kmsg.NewPtrProduceResponse()
	ra.Version = 9
	rc.Recv(a, ra)
	if c := ra.Topics[0].Partitions[0].ErrorCode; c != 0 {
		t.Fatalf("produce: %s", code(c))
	}
	rb := kmsg.NewPtrListOffsetsResponse()
	rb.Version = 4
	rc.Recv(b, rb)
	if off := rb.Topics[0].Partitions[0].Offset; off != 1 {
		t.Errorf("ListOffsets(latest) sent after the produce, answered after its success: %d, want 1 (Kafka: requests handled in order)", off)
	}
}

// TestProducePipelineMultiPartitionAckAfterTruncation: one request (no pipelining by
// the client) with partitions a-0 (ISR never catches up) and b-0: b's wait
// now runs after a's, and acknowledges b's truncated record.
func TestProducePipelineMultiPartitionAckAfterTruncation(t *testing.T) {
	t.Parallel()
	s, _, rc := pipelineAB(t)
	req := produceReq("a", 0, -1, 1500)
	req.Topics = append(req.Topics, produceReq("b", 0, -1, 1500).Topics[0])
	n := rc.Send(req)
	pb := s.rm.Partition("b", 0)
	takeOverAndTruncate(t, pb.Partition)
	ra := kmsg.NewPtrProduceResponse()
	ra.Version = 9
	rc.Recv(n, ra)
	t.Logf("a: %s b: %s", code(ra.Topics[0].Partitions[0].ErrorCode), code(ra.Topics[1].Partitions[0].ErrorCode))
	if sp := ra.Topics[1].Partitions[0]; sp.ErrorCode == 0 {
		t.Errorf("b acknowledged at base offset %d, but its record was truncated", sp.BaseOffset)
	}
}

// TestProducePipelineCloseWithWaitsPending: the client goes away with pipelined waits
// pending (and a fetch queued behind them); the connection ends (after
// the waits' timeout), nothing panics, and shutdown completes.
func TestProducePipelineCloseWithWaitsPending(t *testing.T) {
	t.Parallel() // waits on session and request timers, not the CPU
	s, fp, _ := newFakeClusterMetricsServer(t, nil)
	id := fp.addTopic("t", 1)
	mustCall(t, s, 5, leaderAndIsr("t", id, 0, 1, 1, 5))
	rc := serveFake(t, s)
	for i := 0; i < 40; i++ { // more than the response queue
		rc.Send(produceReq("t", 0, -1, 800))
		rc.Send(kmsg.NewPtrMetadataRequest())
	}
	p := s.rm.Partition("t", 0)
	waitLogEnd(t, p, 10, "not appended")
	time.Sleep(100 * time.Millisecond)
	before := p.Log().EndOffset()
	t.Logf("appended before the first answer: %d", before)
	rc.Close()
	nconns := func() int { s.mu.Lock(); defer s.mu.Unlock(); return len(s.conns) }
	t.Logf("connections right after the client closed: %d", nconns())
	start := time.Now()
	for nconns() > 0 {
		if time.Since(start) > 60*time.Second {
			t.Fatalf("connection still open after the client left: %d", nconns())
		}
		time.Sleep(10 * time.Millisecond)
	}
	after := p.Log().EndOffset()
	t.Logf("connection gone after %v; log end %d", time.Since(start), after)
	// Once the client is gone, only what was already taken in may still
	// be appended (the queued requests and the one being handled): the
	// acks=-1 produce requests read after that are dropped, not appended.
	if after-before > maxQueuedRequests+1 {
		t.Errorf("%d records appended after the client left (log end %d -> %d), more than the %d requests already taken in",
			after-before, before, after, maxQueuedRequests+1)
	}
	if n := p.AckWatchers(); n != 0 {
		t.Errorf("%d acks=-1 watches left on the partition", n)
	}
}

// TestProducePipelinePartitionClosedWhileQueued: b's partition is closed (deleted)
// while its pipelined wait is queued behind a's.
func TestProducePipelinePartitionClosedWhileQueued(t *testing.T) {
	s, _, rc := pipelineAB(t)
	n := rc.Send(produceReq("a", 0, -1, 800))
	n1 := rc.Send(produceReq("b", 0, -1, 30000))
	pb := s.rm.Partition("b", 0)
	waitLogEnd(t, pb, 1, "b not appended")
	if err := pb.Close(); err != nil {
		t.Fatal(err)
	}
	ra := kmsg.NewPtrProduceResponse()
	ra.Version = 9
	rc.Recv(n, ra)
	rb := kmsg.NewPtrProduceResponse()
	rb.Version = 9
	rc.Recv(n1, rb)
	t.Logf("a: %s b: %s", code(ra.Topics[0].Partitions[0].ErrorCode), code(rb.Topics[0].Partitions[0].ErrorCode))
	if rb.Topics[0].Partitions[0].ErrorCode == 0 {
		t.Error("b acknowledged after its partition closed")
	}
}

// takeOverAndTruncate waits until pb has the record a pipelined produce
// appended, then does to pb what LeaderAndIsr and the fetcher do when
// broker 2 takes it over: follower of epoch 2, truncated to 0, two records
// of another producer copied from the new leader, and a follower HW of 2
// that passes the offsets the produce had.
func takeOverAndTruncate(t *testing.T, pb *replication.Partition) {
	t.Helper()
	waitLogEnd(t, pb, 1, "not appended")
	if err := pb.MakeFollower(replication.LeaderAndIsr{Leader: 2, LeaderEpoch: 2, ISR: []int32{2, 3}, Replicas: []int32{1, 2, 3}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the fetcher's round trip to the new leader
	if err := pb.TruncateTo(0); err != nil {
		t.Fatal(err)
	}
	other := record.AppendBatch(nil, record.BatchOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
		[]record.BuildRecord{{Key: []byte("x"), Value: []byte("other producer"), Timestamp: 2}, {Key: []byte("y"), Value: []byte("z"), Timestamp: 2}})
	if err := pb.AppendAsFollower(other); err != nil {
		t.Fatal(err)
	}
	pb.UpdateFollowerHW(2)
}
