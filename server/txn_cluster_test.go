package server

// The transaction coordinator in cluster mode against the fake control
// plane: __transaction_state is created in the cluster's shape, and the
// markers of partitions led by other brokers go to them as WriteTxnMarkers
// (here a fake broker that answers them).

import (
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/txn"
)

// fakeMarkerBroker answers WriteTxnMarkers on a local listener with the
// code answer gives each partition, and records the markers it got.
type fakeMarkerBroker struct {
	ln     net.Listener
	mu     sync.Mutex
	got    []kmsg.WriteTxnMarkersRequestMarker
	answer func(topic string, partition int32) int16
}

func startFakeMarkerBroker(t *testing.T, answer func(string, int32) int16) *fakeMarkerBroker {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeMarkerBroker{ln: ln, answer: answer}
	var wg sync.WaitGroup
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		f.mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		f.mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			f.mu.Lock()
			conns = append(conns, c)
			f.mu.Unlock()
			wg.Add(1)
			go func() { defer wg.Done(); f.serve(c) }()
		}
	}()
	return f
}

func (f *fakeMarkerBroker) port() int32 { return int32(f.ln.Addr().(*net.TCPAddr).Port) }

func (f *fakeMarkerBroker) markers() []kmsg.WriteTxnMarkersRequestMarker {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]kmsg.WriteTxnMarkersRequestMarker(nil), f.got...)
}

// serve answers the WriteTxnMarkers requests of one connection (request
// header v2 without tagged fields, as kconn writes it).
func (f *fakeMarkerBroker) serve(c net.Conn) {
	defer c.Close()
	for {
		var size [4]byte
		if _, err := io.ReadFull(c, size[:]); err != nil {
			return
		}
		b := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(c, b); err != nil {
			return
		}
		key, ver, corr := int16(binary.BigEndian.Uint16(b)), int16(binary.BigEndian.Uint16(b[2:])), b[4:8]
		off := 10 + int(int16(binary.BigEndian.Uint16(b[8:])))
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		if key != req.Key() {
			return
		}
		req.SetVersion(ver)
		if req.IsFlexible() {
			off++
		}
		if err := req.ReadFrom(b[off:]); err != nil {
			return
		}
		resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
		resp.SetVersion(ver)
		f.mu.Lock()
		for _, m := range req.Markers {
			f.got = append(f.got, m)
			rm := kmsg.NewWriteTxnMarkersResponseMarker()
			rm.ProducerID = m.ProducerID
			for _, t := range m.Topics {
				rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rt.Partitions = append(rt.Partitions, kmsg.WriteTxnMarkersResponseMarkerTopicPartition{Partition: p, ErrorCode: f.answer(t.Topic, p)})
				}
				rm.Topics = append(rm.Topics, rt)
			}
			resp.Markers = append(resp.Markers, rm)
		}
		f.mu.Unlock()
		out := append([]byte{0, 0, 0, 0}, corr...)
		if resp.IsFlexible() {
			out = append(out, 0)
		}
		out = resp.AppendTo(out)
		binary.BigEndian.PutUint32(out, uint32(len(out)-4))
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

// TestClusterTxnTopicCreated: the first FindCoordinator of a transactional
// id creates __transaction_state in Kafka's shape through the control
// plane, and names the leader of the id's partition.
func TestClusterTxnTopicCreated(t *testing.T) {
	s, fp := newFakeClusterServer(t)
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorType, fc.CoordinatorKey = 1, "my-txn"
	resp := mustCall(t, s, 3, fc).(*kmsg.FindCoordinatorResponse)
	if len(fp.created) != 1 {
		t.Fatalf("created %+v", fp.created)
	}
	got := fp.created[0]
	if got.name != txn.Topic || got.partitions != 50 || got.rf != 3 || got.configs["cleanup.policy"] != "compact" ||
		got.configs["min.insync.replicas"] != "2" || got.configs["segment.bytes"] != "104857600" {
		t.Fatalf("created %+v", got)
	}
	// The fake controller brings the topic online at once: partition 45
	// ("my-txn") is led by broker 45%3+1 = 1.
	if resp.ErrorCode != 0 || resp.NodeID != 1 || resp.Port != 9092 {
		t.Fatalf("find coordinator: %s %+v", code(resp.ErrorCode), resp)
	}
	// v4, batched; a Describe-less empty key is refused.
	fc.CoordinatorKeys = []string{"my-txn", ""}
	r4 := mustCall(t, s, 4, fc).(*kmsg.FindCoordinatorResponse)
	if len(r4.Coordinators) != 2 || r4.Coordinators[0].NodeID != 1 || r4.Coordinators[1].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("v4: %+v", r4.Coordinators)
	}
	if len(fp.created) != 1 {
		t.Fatalf("created again: %+v", fp.created)
	}
}

// TestClusterTxnMarkersToRemoteLeaders: a transaction over partitions led
// by two other brokers is completed by WriteTxnMarkers sent to each, with
// the producer's id and epoch and the coordinator epoch; a leader that
// answers NOT_LEADER_OR_FOLLOWER first is asked again.
func TestClusterTxnMarkersToRemoteLeaders(t *testing.T) {
	s, fp := newFakeClusterServer(t)
	var mu sync.Mutex
	refused := 0
	b2 := startFakeMarkerBroker(t, func(string, int32) int16 { return 0 })
	b3 := startFakeMarkerBroker(t, func(string, int32) int16 {
		mu.Lock()
		defer mu.Unlock()
		if refused < 2 {
			refused++
			return kerr.NotLeaderForPartition.Code
		}
		return 0
	})
	fp.mu.Lock()
	fp.live[1].Port, fp.live[2].Port = b2.port(), b3.port()
	fp.mu.Unlock()

	// One partition of __transaction_state, led here with this broker
	// alone in the ISR (acks=all needs no follower).
	id := fp.addTopic(txn.Topic, 1)
	lai := leaderAndIsr(txn.Topic, id, 0, 1, 3, 5)
	lai.TopicStates[0].PartitionStates[0].ISR = []int32{1}
	mustCall(t, s, 5, lai)
	s.txn.OnRole(0, true) // the fake plane does not route roles
	fp.addTopic("out", 2, 3)

	ctxID := "tx-remote"
	var pe txn.ProducerIDEpoch
	deadline := time.Now().Add(10 * time.Second)
	for {
		ip := kmsg.NewPtrInitProducerIDRequest()
		ip.TransactionalID, ip.TransactionTimeoutMillis = &ctxID, 10000
		r := mustCall(t, s, 4, ip).(*kmsg.InitProducerIDResponse)
		if r.ErrorCode == 0 {
			pe = txn.ProducerIDEpoch{ID: r.ProducerID, Epoch: r.ProducerEpoch}
			break
		}
		if r.ErrorCode != kerr.CoordinatorLoadInProgress.Code || time.Now().After(deadline) {
			t.Fatalf("init: %s", code(r.ErrorCode))
		}
		time.Sleep(5 * time.Millisecond)
	}
	ap := kmsg.NewPtrAddPartitionsToTxnRequest()
	ap.TransactionalID, ap.ProducerID, ap.ProducerEpoch = ctxID, pe.ID, pe.Epoch
	at := kmsg.NewAddPartitionsToTxnRequestTopic()
	at.Topic, at.Partitions = "out", []int32{0, 1}
	ap.Topics = append(ap.Topics, at)
	for _, p := range mustCall(t, s, 3, ap).(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions {
		if p.ErrorCode != 0 {
			t.Fatalf("add partition %d: %s", p.Partition, code(p.ErrorCode))
		}
	}
	et := kmsg.NewPtrEndTxnRequest()
	et.TransactionalID, et.ProducerID, et.ProducerEpoch, et.Commit = ctxID, pe.ID, pe.Epoch, true
	if c := mustCall(t, s, 3, et).(*kmsg.EndTxnResponse).ErrorCode; c != 0 {
		t.Fatalf("end: %s", code(c))
	}
	for {
		d, err := s.txn.Describe(ctxID)
		if err != nil {
			t.Fatal(err)
		}
		if d.State == txn.CompleteCommit {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never completed: %+v", d)
		}
		time.Sleep(5 * time.Millisecond)
	}
	check := func(name string, f *fakeMarkerBroker, partition int32, atLeast int) {
		ms := f.markers()
		if len(ms) < atLeast {
			t.Fatalf("%s got %d WriteTxnMarkers, want at least %d", name, len(ms), atLeast)
		}
		for _, m := range ms {
			if m.ProducerID != pe.ID || m.ProducerEpoch != pe.Epoch || !m.Committed || m.CoordinatorEpoch != 3 ||
				len(m.Topics) != 1 || m.Topics[0].Topic != "out" || len(m.Topics[0].Partitions) != 1 || m.Topics[0].Partitions[0] != partition {
				t.Fatalf("%s got %+v", name, m)
			}
		}
	}
	check("broker 2", b2, 0, 1)
	check("broker 3", b3, 1, 3)
}
