package server

import (
	"context"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/offsets"
	"github.com/sluice/sluice/record"
)

// startTxnServer starts a listening single-node server on a memory store.
func startTxnServer(t *testing.T) (*Server, string) {
	t.Helper()
	s := newTestServer(t, nil, Options{ClusterID: "txn", AdvertisedHost: "127.0.0.1"})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.advPort = int32(ln.Addr().(*net.TCPAddr).Port)
	s.self.Port = s.advPort
	go s.Serve(ln)
	return s, ln.Addr().String()
}

// txnProduce sends one batch of values to topic-0 with acks=all, as a
// transactional producer (pid >= 0 and txn) or a plain one, and returns
// the partition's error code and base offset.
func txnProduce(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, pid int64, epoch int16, seq int32, txn bool, values ...string) (int16, int64) {
	t.Helper()
	return txnProduceID(t, ctx, cl, topic, pid, epoch, seq, txn, txn, values...)
}

// txnProduceID is txnProduce choosing whether the request carries a
// transactional id.
func txnProduceID(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, pid int64, epoch int16, seq int32, txn, withID bool, values ...string) (int16, int64) {
	t.Helper()
	recs := make([]record.BuildRecord, len(values))
	for i, v := range values {
		recs[i] = record.BuildRecord{Value: []byte(v), Timestamp: time.Now().UnixMilli()}
	}
	opts := record.BatchOptions{ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq}
	if txn {
		opts.Attributes = record.TransactionalBit
	}
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks, req.TimeoutMillis = -1, 10_000
	if withID {
		req.TransactionID = kmsg.StringPtr("tx")
	}
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = record.AppendBatch(nil, opts, recs)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	return p.ErrorCode, p.BaseOffset
}

// marker ends producer pid's transaction in topic-0 (and the given
// __consumer_offsets partitions) through txnMarkerWriter.writeLocal and returns
// the error codes, topic partition first.
func marker(s *Server, topic string, pid int64, epoch int16, commit bool, offsetsParts ...int32) []int16 {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = pid, epoch, commit, 0
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = topic, []int32{0}
	m.Topics = append(m.Topics, mt)
	if len(offsetsParts) > 0 {
		ot := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		ot.Topic, ot.Partitions = offsets.Topic, offsetsParts
		m.Topics = append(m.Topics, ot)
	}
	req.Markers = append(req.Markers, m)
	var codes []int16
	for _, t := range s.txnMarkers.writeLocal(req).Markers[0].Topics {
		for _, p := range t.Partitions {
			codes = append(codes, p.ErrorCode)
		}
	}
	return codes
}

// consume reads values from topic-0 from the start until want values came
// (or, with want 0, for a short while), with the isolation level given.
func consume(t *testing.T, ctx context.Context, addr, topic string, committed bool, want int) []string {
	t.Helper()
	iso := kgo.ReadUncommitted()
	if committed {
		iso = kgo.ReadCommitted()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(iso), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []string
	deadline := time.Now().Add(2 * time.Second) // how long to look for more than want
	for len(got) < want || time.Now().Before(deadline) {
		pctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		fs := cl.PollFetches(pctx)
		cancel()
		if ctx.Err() != nil {
			t.Fatalf("consumed %v, want %d records", got, want)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}

// TestTxnLogEndToEnd: a transactional sequence without the coordinator:
// transactional batches, an ABORT and a COMMIT marker written through
// txnMarkerWriter.writeLocal; a read_committed franz-go consumer sees the
// committed records only and stops at an open transaction (the LSO), a
// read_uncommitted one every data record; no consumer sees a marker as a
// record. ListOffsets, DescribeProducers and epoch fencing on the way.
func TestTxnLogEndToEnd(t *testing.T) {
	t.Parallel() // waits on session and request timers, not the CPU
	s, addr := startTxnServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "txn"); err != nil {
		t.Fatal(err)
	}
	must := func(what string, code int16) {
		t.Helper()
		if code != 0 {
			t.Fatalf("%s: %v", what, kerr.ErrorForCode(code))
		}
	}
	c, _ := txnProduce(t, ctx, cl, "txn", -1, -1, -1, false, "p0", "p1")
	must("plain produce", c)
	if c, _ := txnProduceID(t, ctx, cl, "txn", 1000, 0, 0, true, false, "x"); c != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Fatalf("transactional batch without a transactional id: %v", kerr.ErrorForCode(c))
	}
	c, _ = txnProduce(t, ctx, cl, "txn", 1000, 0, 0, true, "a0", "a1", "a2")
	must("transactional produce", c)
	if codes := marker(s, "txn", 1000, 0, false); !slices.Equal(codes, []int16{0}) {
		t.Fatalf("abort marker: %v", codes)
	}
	c, _ = txnProduce(t, ctx, cl, "txn", 1000, 0, 3, true, "c0", "c1")
	must("second transaction", c)
	// A __consumer_offsets partition in single-node mode goes to the
	// group layer only.
	if codes := marker(s, "txn", 1000, 0, true, 7); !slices.Equal(codes, []int16{0, 0}) {
		t.Fatalf("commit marker: %v", codes)
	}
	c, open := txnProduce(t, ctx, cl, "txn", 2000, 0, 0, true, "o0")
	must("open transaction", c)
	c, _ = txnProduce(t, ctx, cl, "txn", -1, -1, -1, false, "p2")
	must("plain produce after the open transaction", c)

	if got := consume(t, ctx, addr, "txn", false, 9); !slices.Equal(got, []string{"p0", "p1", "a0", "a1", "a2", "c0", "c1", "o0", "p2"}) {
		t.Fatalf("read_uncommitted: %v", got)
	}
	if got := consume(t, ctx, addr, "txn", true, 4); !slices.Equal(got, []string{"p0", "p1", "c0", "c1"}) {
		t.Fatalf("read_committed with a transaction open: %v", got)
	}

	// ListOffsets: latest is the LSO for read_committed, the HW otherwise.
	listLatest := func(iso int8) int64 {
		req := kmsg.NewPtrListOffsetsRequest()
		req.SetVersion(5)
		req.IsolationLevel = iso
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "txn"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp = -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0].Offset
	}
	if lso, hw := listLatest(1), listLatest(0); lso != open || hw != open+2 {
		t.Fatalf("ListOffsets latest: read_committed %d (want %d), read_uncommitted %d (want %d)", lso, open, hw, open+2)
	}

	// DescribeProducers shows the open transaction.
	dreq := kmsg.NewPtrDescribeProducersRequest()
	dt := kmsg.NewDescribeProducersRequestTopic()
	dt.Topic, dt.Partitions = "txn", []int32{0}
	dreq.Topics = append(dreq.Topics, dt)
	dresp, err := dreq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	dp := dresp.Topics[0].Partitions[0]
	must("DescribeProducers", dp.ErrorCode)
	var found bool
	for _, ap := range dp.ActiveProducers {
		if ap.ProducerID == 2000 {
			found = ap.CurrentTxnStartOffset == open && ap.LastSequence == 0
		}
		if ap.ProducerID == 1000 && (ap.CurrentTxnStartOffset != -1 || ap.LastSequence != 4) {
			t.Fatalf("producer 1000: %+v", ap)
		}
	}
	if !found {
		t.Fatalf("DescribeProducers: %+v", dp.ActiveProducers)
	}

	// Ending it with a bumped epoch (an abort after a timeout, KIP-360)
	// fences the old epoch: a late batch is INVALID_PRODUCER_EPOCH.
	if codes := marker(s, "txn", 2000, 1, true); !slices.Equal(codes, []int16{0}) {
		t.Fatalf("commit of the open transaction: %v", codes)
	}
	if c, _ := txnProduce(t, ctx, cl, "txn", 2000, 0, 1, true, "late"); c != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("batch of a fenced epoch: %v", kerr.ErrorForCode(c))
	}
	if codes := marker(s, "txn", 2000, 0, false); !slices.Equal(codes, []int16{kerr.InvalidProducerEpoch.Code}) {
		t.Fatalf("marker of a fenced epoch: %v", codes)
	}
	if got := consume(t, ctx, addr, "txn", true, 6); !slices.Equal(got, []string{"p0", "p1", "c0", "c1", "o0", "p2"}) {
		t.Fatalf("read_committed after the commit: %v", got)
	}

	// Over the network a single-node broker serves WriteTxnMarkers to a
	// client allowed ClusterAction (all, without an authorizer), with the
	// same epoch checks: this marker's epoch 0 is fenced.
	wreq := kmsg.NewPtrWriteTxnMarkersRequest()
	wm := kmsg.NewWriteTxnMarkersRequestMarker()
	wm.ProducerID = 2000
	wmt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	wmt.Topic, wmt.Partitions = "txn", []int32{0}
	wm.Topics = append(wm.Topics, wmt)
	wreq.Markers = append(wreq.Markers, wm)
	wresp, err := wreq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if ec := wresp.Markers[0].Topics[0].Partitions[0].ErrorCode; ec != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("WriteTxnMarkers from a client: %v", kerr.ErrorForCode(ec))
	}
}

// TestTxnReadCommittedLongPollWakes: a read_committed fetch parked on an
// open transaction (min bytes not met) answers as soon as the marker moves
// the LSO, well before its max wait.
func TestTxnReadCommittedLongPollWakes(t *testing.T) {
	s, addr := startTxnServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ct, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "lp")
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := txnProduce(t, ctx, cl, "lp", 5, 0, 0, true, "x", "y"); c != 0 {
		t.Fatal(kerr.ErrorForCode(c))
	}
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(11)
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.IsolationLevel = -1, 50_000, 1, 1<<20, 1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = "lp", ct.ID // the client may send v13+
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	done := make(chan *kmsg.FetchResponse, 1)
	go func() {
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Error(err)
		}
		done <- resp
	}()
	// The fetch parks (nothing below the LSO); the marker wakes it.
	for s.parked.Load() == 0 {
		select {
		case resp := <-done:
			t.Fatalf("the fetch answered before the marker: %+v", resp.Topics[0].Partitions[0])
		case <-time.After(5 * time.Millisecond):
		}
	}
	if codes := marker(s, "lp", 5, 0, false); !slices.Equal(codes, []int16{0}) {
		t.Fatalf("abort: %v", codes)
	}
	select {
	case resp := <-done:
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.LastStableOffset != 3 || len(p.RecordBatches) == 0 ||
			len(p.AbortedTransactions) != 1 || p.AbortedTransactions[0].ProducerID != 5 || p.AbortedTransactions[0].FirstOffset != 0 {
			t.Fatalf("woken fetch: %+v", p)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the parked read_committed fetch was not woken by the marker")
	}
}
