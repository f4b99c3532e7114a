package server

// The transaction coordinator's marker writer (txn.MarkerWriter, Kafka's
// TransactionMarkerChannelManager): the markers of one transaction are
// grouped by the leader of each partition; partitions led here are written
// through txnMarkerWriter.writeLocal (the log side's WriteTxnMarkers path), the
// others are sent as WriteTxnMarkers (key 27, v1) to their leaders over
// the inter-broker listener, one connection per broker. The coordinator
// retries what failed until it is written or it loses the transaction's
// partition.
//
// Answers per partition, as Kafka's TransactionMarkerRequestCompletionHandler
// reads them: none is written; INVALID_PRODUCER_EPOCH and
// TRANSACTION_COORDINATOR_FENCED stop the completion (txn.ErrMarkerFenced:
// a newer producer or coordinator took over); a partition of a topic that
// no longer exists needs no marker (also when the leader answers
// UNKNOWN_TOPIC_OR_PARTITION for it); UNSUPPORTED_FOR_MESSAGE_FORMAT is
// skipped; every other answer is retried.
//
// __consumer_offsets may not exist yet when AddOffsetsToTxn adds its
// partition to a transaction (it is created by the first group request):
// such markers go to txnMarkerWriter.writeLocal, which completes the
// transactional offsets of the group layer (none: TxnOffsetCommit needs
// the topic).

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/internal/kconn"
	"github.com/sluice/sluice/offsets"
	"github.com/sluice/sluice/txn"
)

// txnMarkerRequestTimeout bounds one WriteTxnMarkers round trip (Kafka's
// request.timeout.ms for the marker channel).
const txnMarkerRequestTimeout = 30 * time.Second

// txnMarkerWriter is the server's txn.MarkerWriter. Safe for concurrent
// use.
type txnMarkerWriter struct {
	s  *Server
	mu sync.Mutex
	// conns: one connection per broker address.
	conns map[string]*kconn.Conn
}

func newTxnMarkerWriter(s *Server) *txnMarkerWriter {
	return &txnMarkerWriter{s: s, conns: map[string]*kconn.Conn{}}
}

// close closes the connections to other brokers.
func (w *txnMarkerWriter) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for a, c := range w.conns {
		c.Close()
		delete(w.conns, a)
	}
}

// WriteMarkers is txn.MarkerWriter.WriteMarkers.
func (w *txnMarkerWriter) WriteMarkers(ctx context.Context, m txn.Markers) map[txn.TopicPartition]error {
	s := w.s
	failed := map[txn.TopicPartition]error{}
	byLeader := map[int32][]txn.TopicPartition{}
	for _, tp := range m.Partitions {
		parts := s.md.partitions(tp.Topic)
		switch {
		case len(parts) == 0 && tp.Topic == offsets.Topic:
			byLeader[s.nodeID] = append(byLeader[s.nodeID], tp)
		case int(tp.Partition) >= len(parts):
			// Deleted (or shrunk, which Kafka cannot): no marker needed.
			s.log.Info("server: no marker for a partition that no longer exists", "topic", tp.Topic, "partition", tp.Partition, "transactional_id", m.TransactionalID)
		case parts[tp.Partition].Leader < 0:
			failed[tp] = fmt.Errorf("%w: %s-%d", errLeaderNotAvailable, tp.Topic, tp.Partition)
		default:
			l := parts[tp.Partition].Leader
			byLeader[l] = append(byLeader[l], tp)
		}
	}
	for leader, tps := range byLeader {
		req := markersRequest(m, tps)
		var resp *kmsg.WriteTxnMarkersResponse
		var err error
		if leader == s.nodeID {
			resp = w.writeLocal(req)
		} else {
			resp, err = w.send(ctx, leader, req)
		}
		if err != nil {
			for _, tp := range tps {
				failed[tp] = err
			}
			continue
		}
		w.readAnswer(m, tps, resp, failed)
	}
	return failed
}

// markersRequest is the WriteTxnMarkers request of m for tps.
func markersRequest(m txn.Markers, tps []txn.TopicPartition) *kmsg.WriteTxnMarkersRequest {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.Version = 1
	mk := kmsg.NewWriteTxnMarkersRequestMarker()
	mk.ProducerID, mk.ProducerEpoch, mk.Committed, mk.CoordinatorEpoch = m.ProducerID, m.ProducerEpoch, m.Commit, m.CoordinatorEpoch
	for _, tp := range tps {
		if n := len(mk.Topics); n == 0 || mk.Topics[n-1].Topic != tp.Topic {
			t := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			t.Topic = tp.Topic
			mk.Topics = append(mk.Topics, t)
		}
		t := &mk.Topics[len(mk.Topics)-1]
		t.Partitions = append(t.Partitions, tp.Partition)
	}
	req.Markers = append(req.Markers, mk)
	return req
}

// readAnswer records in failed what resp says went wrong for tps (a
// partition resp does not mention failed too).
func (w *txnMarkerWriter) readAnswer(m txn.Markers, tps []txn.TopicPartition, resp *kmsg.WriteTxnMarkersResponse, failed map[txn.TopicPartition]error) {
	answered := make(map[txn.TopicPartition]bool, len(tps))
	for _, rm := range resp.Markers {
		if rm.ProducerID != m.ProducerID {
			continue
		}
		for _, rt := range rm.Topics {
			for _, rp := range rt.Partitions {
				tp := txn.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}
				answered[tp] = true
				if err := w.markerError(tp, rp.ErrorCode); err != nil {
					failed[tp] = err
				}
			}
		}
	}
	for _, tp := range tps {
		if !answered[tp] {
			failed[tp] = fmt.Errorf("server: no WriteTxnMarkers answer for %s-%d", tp.Topic, tp.Partition)
		}
	}
}

// markerError classifies a partition's WriteTxnMarkers error code: nil
// when no marker is (any longer) needed.
func (w *txnMarkerWriter) markerError(tp txn.TopicPartition, code int16) error {
	switch code {
	case 0, kerr.UnsupportedForMessageFormat.Code:
		return nil
	case kerr.InvalidProducerEpoch.Code, kerr.TransactionCoordinatorFenced.Code:
		return fmt.Errorf("%w: %s-%d: %v", txn.ErrMarkerFenced, tp.Topic, tp.Partition, kerr.ErrorForCode(code))
	case kerr.UnknownTopicOrPartition.Code:
		if tp.Topic != offsets.Topic && len(w.s.md.partitions(tp.Topic)) == 0 {
			return nil // deleted meanwhile
		}
	case kerr.CorruptMessage.Code, kerr.MessageTooLarge.Code, kerr.RecordListTooLarge.Code, kerr.InvalidRequiredAcks.Code:
		// Kafka treats these as impossible; retried, loudly.
		w.s.log.Error("server: transaction marker refused", "topic", tp.Topic, "partition", tp.Partition, "err", kerr.ErrorForCode(code))
	}
	return fmt.Errorf("server: marker for %s-%d: %w", tp.Topic, tp.Partition, kerr.ErrorForCode(code))
}

// send sends req to broker id over the inter-broker listener. A network
// error drops the connection (the next send redials).
func (w *txnMarkerWriter) send(ctx context.Context, id int32, req *kmsg.WriteTxnMarkersRequest) (*kmsg.WriteTxnMarkersResponse, error) {
	s := w.s
	addr := ""
	for _, b := range s.md.brokers() {
		if b.ID == id {
			addr = b.AddrFor(s.cfg.InterBrokerListenerName)
		}
	}
	if addr == "" {
		return nil, fmt.Errorf("%w: broker %d is not live", errLeaderNotAvailable, id)
	}
	w.mu.Lock()
	c := w.conns[addr]
	if c == nil {
		c = kconn.NewSecure(addr, "sluice-txn-coordinator-"+strconv.Itoa(int(s.nodeID)), txnMarkerRequestTimeout, s.interBroker)
		w.conns[addr] = c
	}
	w.mu.Unlock()
	resp, err := c.Request(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("server: WriteTxnMarkers to broker %d (%s): %w", id, addr, err)
	}
	return resp.(*kmsg.WriteTxnMarkersResponse), nil
}
