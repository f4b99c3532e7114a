package server

// The wiring of the transaction coordinator (package txn) in both modes.
//
//   - The coordinator lives on the Server (s.txn). Its state is in the
//     internal topic __transaction_state, in cluster mode and on a single
//     node alike: the topic is created the first time a transactional
//     client looks for its coordinator (FindCoordinator key type 1) or
//     initializes (ensureTxnTopic), through the control plane, with
//     transaction.state.log.num.partitions partitions and Kafka's configs.
//   - In cluster mode LeaderAndIsr and StopReplica load and unload its
//     partitions (clustermode.go). On a single node this broker leads
//     every partition from the moment it is opened (created, or loaded at
//     start), so openLocalTxnPartitions loads them all then.
//   - Errors of the coordinator become Kafka codes in txnErrorCode.

import (
	"context"
	"errors"

	"github.com/sluice/sluice/cluster"
	"github.com/sluice/sluice/internal/errcode"
	"github.com/sluice/sluice/replication"
	"github.com/sluice/sluice/txn"
)

// newTxnCoord returns the transaction coordinator of s, fed from the topic
// registry.
func newTxnCoord(s *Server) *txn.Coordinator {
	c := s.cfg
	s.txnMarkers = newTxnMarkerWriter(s)
	return txn.New(txn.Options{
		NumPartitions: func() int32 {
			if t := s.rm.Topic(txn.Topic); t != nil {
				return int32(len(t.Parts))
			}
			return 0
		},
		Partition: func(i int32) *replication.Partition {
			if p := s.rm.Partition(txn.Topic, i); p != nil {
				return p.Partition
			}
			return nil
		},
		Markers:            s.txnMarkers,
		AllocateProducerID: s.pids.allocate,
		MaxTimeout:         c.TransactionMaxTimeout,
		IDExpiration:       c.TransactionalIDExpiration,
		AbortInterval:      c.TransactionAbortTimedOutInterval,
		RemoveInterval:     c.TransactionRemoveExpiredInterval,
		Now:                s.now,
		Logger:             s.log,
		OnComplete:         s.metrics.TxnCompleted,
	})
}

// singleNode reports whether s is a single-node broker, which leads every
// partition of its own topics (no LeaderAndIsr tells it so).
func (s *Server) singleNode() bool { return s.ib == nil }

// openLocalTxnPartitions loads every partition of a local
// __transaction_state on a single node, where this broker leads them all.
// In cluster mode LeaderAndIsr says who leads, and this does nothing.
func (s *Server) openLocalTxnPartitions() {
	if !s.singleNode() {
		return
	}
	if t := s.rm.Topic(txn.Topic); t != nil {
		for i := range t.Parts {
			s.txn.OnRole(int32(i), true)
		}
	}
}

// txnTopicSpec is the shape of __transaction_state: Kafka's settings; on a
// single node one replica (and so min.insync.replicas 1).
func (s *Server) txnTopicSpec() topicSpec {
	c := s.cfg
	rf, minISR := c.TransactionStateReplication, c.TransactionStateMinISR
	if s.singleNode() {
		rf, minISR = 1, 1
	}
	return topicSpec{
		name:       txn.Topic,
		partitions: c.TransactionStatePartitions,
		rf:         rf,
		configs:    txn.TopicConfigs(c.TransactionStateSegmentBytes, minISR),
	}
}

// ensureTxnTopic creates __transaction_state when the cluster has none
// yet. It returns nil when the topic exists (its leaders may still be
// coming); cluster.ErrInvalidReplicationFactor while fewer brokers are live
// than transaction.state.log.replication.factor (as Kafka, the topic is
// not created smaller).
func (s *Server) ensureTxnTopic(ctx context.Context) error {
	if len(s.md.partitions(txn.Topic)) > 0 {
		return nil
	}
	spec := s.txnTopicSpec()
	if live := len(s.md.brokers()); int(spec.rf) > live {
		return cluster.ErrInvalidReplicationFactor
	}
	_, err := s.admin.createTopic(ctx, spec)
	if errors.Is(err, errTopicExists) || errors.Is(err, cluster.ErrTopicExists) {
		err = nil
	}
	if err != nil {
		return err
	}
	s.openLocalTxnPartitions()
	return nil
}

// txnErrorCode is the code of an error of the transaction coordinator's
// APIs (errcode.TxnCode); version is the request's, fencedSince the first
// version that knows PRODUCER_FENCED. The server's own sentinels go
// through errorCode.
func txnErrorCode(err error, fencedSince, version int16) int16 {
	if code, ok := serverCode(err); ok {
		return code
	}
	return errcode.TxnCode(err, fencedSince, version)
}

// txnCoordReady makes sure __transaction_state exists before a request
// that needs its coordinator: a client that skipped FindCoordinator (or a
// single node, where nothing else creates it) gets the topic created and
// COORDINATOR_LOAD_IN_PROGRESS / NOT_COORDINATOR from the coordinator
// until it is loaded.
func (s *Server) txnCoordReady(ctx context.Context) {
	if len(s.md.partitions(txn.Topic)) > 0 {
		return
	}
	if err := s.ensureTxnTopic(ctx); err != nil {
		s.log.Info("server: cannot create "+txn.Topic+" yet", "err", err)
	}
}
