package server

// WriteTxnMarkers (key 27), served v0-v1, inter-broker: a transaction
// coordinator asks the leaders of a transaction's partitions to end it.
//
//	v1: flexible
//	(v2, KIP-890's transaction version, is not served: its markers carry a
//	bumped epoch with other fencing rules)
//
// Sender: the request must be allowed ClusterAction on the cluster
// (CLUSTER_AUTHORIZATION_FAILED for every partition otherwise, as Kafka's
// KafkaApis.handleWriteTxnMarkersRequest). A single-node broker, whose own
// coordinator writes its markers in-process (txnMarkerWriter.writeLocal), serves
// it to clients with that permission (every client when no authorizer is
// configured): Kafka's Admin.abortTransaction (kafka-transactions.sh abort)
// sends it to the partition leader to end a hanging transaction.
//
// Each partition gets the marker through
// replication.Partition.WriteTxnMarker (leader only, waits as acks=all):
// NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, INVALID_PRODUCER_EPOCH
// (a marker older than the producer's epoch there),
// TRANSACTION_COORDINATOR_FENCED, NOT_ENOUGH_REPLICAS(_AFTER_APPEND),
// REQUEST_TIMED_OUT after 30 s; COORDINATOR_LOAD_IN_PROGRESS, not
// appended, for a __consumer_offsets partition still loading (the
// coordinator retries it: a marker past the end the load replays would
// leave the offsets it installs pending for ever). The partitions of __consumer_offsets that
// took the marker are then handed to the group layer
// (completeTxnOffsets), which commits or drops the producer's pending
// offsets; in single-node mode, where offsets live in the metastore and
// there is no __consumer_offsets topic, the group layer is all there is.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/offsets"
	"github.com/sluice/sluice/replication"
)

// txnMarkerTimeout bounds the acks=all wait of one marker (Kafka uses
// request.timeout.ms, 30 s).
const txnMarkerTimeout = 30 * time.Second

func handleWriteTxnMarkers(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.WriteTxnMarkersRequest)
	var refuse error
	if !s.az.allowedCluster(rc, acl.OpClusterAction) {
		refuse = errClusterAuthorization
	}
	if refuse != nil {
		rc.logRefused(s.log, r, -1, -1, refuse)
		resp := r.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
		code := errorCode(refuse)
		for _, m := range r.Markers {
			rm := kmsg.NewWriteTxnMarkersResponseMarker()
			rm.ProducerID = m.ProducerID
			for _, t := range m.Topics {
				rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
					rp.Partition, rp.ErrorCode = p, code
					rt.Partitions = append(rt.Partitions, rp)
				}
				rm.Topics = append(rm.Topics, rt)
			}
			resp.Markers = append(resp.Markers, rm)
		}
		return kresp(resp), nil
	}
	return kresp(s.txnMarkers.writeLocal(r)), nil
}

// writeLocal writes the markers of r to the partitions this
// broker leads and answers as WriteTxnMarkers does (see the top of this
// file); the transaction coordinator calls it directly for the partitions
// it finds local. Every marker and partition is written concurrently; it
// returns once each is written, refused or timed out. Safe for concurrent
// use.
func (w *txnMarkerWriter) writeLocal(r *kmsg.WriteTxnMarkersRequest) *kmsg.WriteTxnMarkersResponse {
	resp := r.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	resp.Markers = make([]kmsg.WriteTxnMarkersResponseMarker, len(r.Markers))
	var wg sync.WaitGroup
	for i := range r.Markers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp.Markers[i] = w.writeMarker(&r.Markers[i])
		}()
	}
	wg.Wait()
	return resp
}

// writeMarker writes one marker to its partitions, then completes the
// producer's transactional offsets for the __consumer_offsets partitions
// that took it.
func (w *txnMarkerWriter) writeMarker(m *kmsg.WriteTxnMarkersRequestMarker) kmsg.WriteTxnMarkersResponseMarker {
	s := w.s
	rm := kmsg.NewWriteTxnMarkersResponseMarker()
	rm.ProducerID = m.ProducerID
	rm.Topics = make([]kmsg.WriteTxnMarkersResponseMarkerTopic, len(m.Topics))
	marker := replication.TxnMarker{ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch, Commit: m.Committed, CoordinatorEpoch: m.CoordinatorEpoch}
	ctx, cancel := context.WithTimeout(context.Background(), txnMarkerTimeout)
	defer cancel()

	// hookOnly: __consumer_offsets does not exist yet (no group request
	// created it); no partition of it takes a marker.
	hookOnly := s.rm.Topic(offsets.Topic) == nil
	var wg sync.WaitGroup
	for i, t := range m.Topics {
		rt := &rm.Topics[i]
		rt.Topic = t.Topic
		rt.Partitions = make([]kmsg.WriteTxnMarkersResponseMarkerTopicPartition, len(t.Partitions))
		for j, part := range t.Partitions {
			rp := &rt.Partitions[j]
			*rp = kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
			rp.Partition = part
			if t.Topic == offsets.Topic && hookOnly {
				continue // answered with the hook's result below
			}
			p, err := s.lookup.leaderPartition(t.Topic, part)
			if err != nil {
				rp.ErrorCode = errorCode(err)
				continue
			}
			if t.Topic == offsets.Topic && s.offsetsPartitionLoading(part) {
				// Not appended: the load would miss it (offsets.Coordinator.PartitionState).
				rp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := p.WriteTxnMarker(ctx, marker); err != nil {
					rp.ErrorCode = w.localMarkerError(t.Topic, part, marker, err)
				}
			}()
		}
	}
	wg.Wait()

	// The group layer commits or drops the producer's pending offsets of
	// the __consumer_offsets partitions that took the marker (Kafka's
	// GroupCoordinator.onTransactionCompleted).
	var done []int32
	var parts []*kmsg.WriteTxnMarkersResponseMarkerTopicPartition
	for i := range rm.Topics {
		if rm.Topics[i].Topic != offsets.Topic {
			continue
		}
		for j := range rm.Topics[i].Partitions {
			if rp := &rm.Topics[i].Partitions[j]; rp.ErrorCode == 0 {
				done = append(done, rp.Partition)
				parts = append(parts, rp)
			}
		}
	}
	if len(done) > 0 {
		if err := s.completeTxnOffsets(m.ProducerID, m.ProducerEpoch, done, m.Committed); err != nil {
			s.log.Error("server: completing transactional offsets", "producer_id", m.ProducerID, "commit", m.Committed, "partitions", done, "err", err)
			code := errorCode(err)
			for _, rp := range parts {
				rp.ErrorCode = code
			}
		}
	}
	return rm
}

// localMarkerError maps a marker write's failure to its error code (and
// logs the unexpected ones).
func (w *txnMarkerWriter) localMarkerError(topic string, part int32, m replication.TxnMarker, err error) int16 {
	s := w.s
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return kerr.RequestTimedOut.Code
	}
	code := errorCode(err)
	if code == kerr.UnknownServerError.Code || code == kerr.KafkaStorageError.Code {
		s.log.Error("server: write transaction marker", "topic", topic, "partition", part, "marker", fmt.Sprintf("%+v", m), "err", err)
	}
	return code
}
