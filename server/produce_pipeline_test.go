package server

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/internal/kraw"
	"github.com/sluice/sluice/metrics"
	"github.com/sluice/sluice/record"
	"github.com/sluice/sluice/replication"
)

// serveFake serves s on a loopback listener and returns a raw connection to
// it.
func serveFake(t *testing.T, s *Server) *kraw.Conn {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.ServeListener(ln, "PLAINTEXT")
	return kraw.Dial(t, ln.Addr().String())
}

// pipelineAB starts a fake-cluster server leading topics a and b (one
// partition each; ISR 1, 2, 3, so acks=all waits for followers that never
// fetch unless the test fetches for them) and a raw connection to it.
func pipelineAB(t *testing.T) (*Server, *metrics.Metrics, *kraw.Conn) {
	t.Helper()
	s, fp, m := newFakeClusterMetricsServer(t, nil)
	ida := fp.addTopic("a", 1)
	idb := fp.addTopic("b", 1)
	mustCall(t, s, 5, leaderAndIsr("a", ida, 0, 1, 1, 5))
	mustCall(t, s, 5, leaderAndIsr("b", idb, 0, 1, 1, 5))
	return s, m, serveFake(t, s)
}

// waitLogEnd waits up to 10 s for p's log to reach end, failing with what.
func waitLogEnd(t *testing.T, p interface{ Log() engine.Log }, end int64, what string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); p.Log().EndOffset() < end; {
		if time.Now().After(deadline) {
			t.Fatalf("%s (log end %d, want %d)", what, p.Log().EndOffset(), end)
		}
		time.Sleep(time.Millisecond)
	}
}

// followersFetch has followers 2 and 3 fetch p (leader epoch 1) from
// offset, as their fetchers would, which moves the high watermark to it.
func followersFetch(t *testing.T, p *replication.Partition, offset int64) {
	t.Helper()
	for _, r := range []int32{2, 3} {
		res, err := p.HandleReplicaFetch(r, 1, offset, 1<<20, time.Now())
		if err != nil {
			t.Fatalf("replica %d fetch: %v", r, err)
		}
		res.Records.Release()
	}
}

func produceReq(topic string, p int32, acks int16, timeoutMs int32) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version = 9
	req.Acks, req.TimeoutMillis = acks, timeoutMs
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = p
	rp.Records = record.AppendBatch(nil, record.BatchOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
		[]record.BuildRecord{{Key: []byte("k"), Value: []byte("v"), Timestamp: 1}})
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// TestProducePipelinedAcksAll: on one connection, acks=all produce requests
// are appended as they arrive, without waiting for the ISR of the ones
// before (00_produce.go, pipelined acks=all), but each is answered only
// once the ISR has its records, and every response, another API's
// included, leaves in request order.
func TestProducePipelinedAcksAll(t *testing.T) {
	s, fp, m := newFakeClusterMetricsServer(t, nil)
	id := fp.addTopic("t", 1)
	mustCall(t, s, 5, leaderAndIsr("t", id, 0, 1, 1, 5)) // ISR {1,2,3}
	rc := serveFake(t, s)
	a := rc.Send(produceReq("t", 0, -1, 30000))
	b := rc.Send(produceReq("t", 0, -1, 30000))
	mreq := kmsg.NewPtrApiVersionsRequest()
	c := rc.Send(mreq)

	p := s.rm.Partition("t", 0)
	waitLogEnd(t, p, 2, "the second request was not appended while the first waited for the ISR")
	if hw := p.HighWatermark(); hw != 0 {
		t.Fatalf("high watermark %d before any follower fetched", hw)
	}
	if body, err := rc.ReadFrame(50 * time.Millisecond); err == nil {
		t.Fatalf("a %d-byte response arrived before the ISR had the first request's records", len(body))
	} else if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Fatalf("read: %v", err)
	}

	// Followers 2 and 3 fetch from offset 1: the first request is
	// committed, the second is not.
	followersFetch(t, p.Partition, 1)
	ra := kmsg.NewPtrProduceResponse()
	ra.Version = 9
	rc.Recv(a, ra)
	if sp := ra.Topics[0].Partitions[0]; sp.ErrorCode != 0 || sp.BaseOffset != 0 {
		t.Fatalf("first produce: %s base offset %d, want no error at 0", code(sp.ErrorCode), sp.BaseOffset)
	}
	if body, err := rc.ReadFrame(50 * time.Millisecond); err == nil {
		t.Fatalf("a %d-byte response arrived before the ISR had the second request's records", len(body))
	}
	for _, r := range []int32{2, 3} {
		res, err := p.HandleReplicaFetch(r, 1, 2, 1<<20, time.Now())
		if err != nil {
			t.Fatalf("replica %d fetch: %v", r, err)
		}
		res.Records.Release()
	}
	rb := kmsg.NewPtrProduceResponse()
	rb.Version = 9
	rc.Recv(b, rb)
	if sp := rb.Topics[0].Partitions[0]; sp.ErrorCode != 0 || sp.BaseOffset != 1 {
		t.Fatalf("second produce: %s base offset %d, want no error at 1", code(sp.ErrorCode), sp.BaseOffset)
	}
	rc.Recv(c, kmsg.NewPtrApiVersionsResponse())

	// Request metrics count the produce requests once they are answered.
	fams := gather(t, m)
	if v, _ := series(fams, "kafka_network_requestmetrics_requests_total", map[string]string{"request": "Produce"}); v != 2 {
		t.Errorf("Produce requests counted: %v, want 2", v)
	}
}

// TestProducePipelinedAcksAllTimeout: a pipelined acks=all produce whose
// ISR never catches up is answered REQUEST_TIMED_OUT after its timeout,
// its records stay in the log, and the error is counted.
func TestProducePipelinedAcksAllTimeout(t *testing.T) {
	s, fp, m := newFakeClusterMetricsServer(t, nil)
	id := fp.addTopic("t", 1)
	mustCall(t, s, 5, leaderAndIsr("t", id, 0, 1, 1, 5)) // ISR {1,2,3}: nobody fetches
	rc := serveFake(t, s)
	resp := rc.Do(produceReq("t", 0, -1, 50)).(*kmsg.ProduceResponse)
	if sp := resp.Topics[0].Partitions[0]; !errors.Is(kerr.ErrorForCode(sp.ErrorCode), kerr.RequestTimedOut) || sp.BaseOffset != -1 {
		t.Fatalf("produce: %s base offset %d, want REQUEST_TIMED_OUT, -1", code(sp.ErrorCode), sp.BaseOffset)
	}
	if end := s.rm.Partition("t", 0).Log().EndOffset(); end != 1 {
		t.Fatalf("log end %d: the record was not appended", end)
	}
	fams := gather(t, m)
	if v, _ := series(fams, "kafka_network_requestmetrics_errors_total", map[string]string{"request": "Produce", "error": "REQUEST_TIMED_OUT"}); v != 1 {
		t.Errorf("REQUEST_TIMED_OUT errors counted: %v, want 1", v)
	}
}
