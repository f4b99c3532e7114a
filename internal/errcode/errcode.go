// Package errcode is where Go errors become Kafka error codes: Code is the
// one mapping, used by the server when it builds a response and by the
// group coordinator when it fills the per-partition codes of the responses
// it builds. Every other package returns Go errors, sentinels that callers
// classify with errors.Is, and never picks a code.
//
// The group coordinator's own errors are declared here (group.go), not in
// package group: group calls Code, so Code cannot import group. The
// transaction coordinator's are txn's (txn does not call Code).
package errcode

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice/sluice/cluster"
	"github.com/sluice/sluice/coordlog"
	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/group/share"
	"github.com/sluice/sluice/metastore"
	"github.com/sluice/sluice/record"
	"github.com/sluice/sluice/replication"
	"github.com/sluice/sluice/txn"
)

// Code returns the Kafka error code of err: 0 for nil, UNKNOWN_SERVER_ERROR
// for an error it does not know (which the caller should also log). The
// server's own sentinels are matched by the server first (server/errors.go),
// then it asks Code.
func Code(err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrAppend):
		return AppendCode(err)
	case errors.Is(err, ErrStore):
		return StoreCode(err)
	case errors.Is(err, coordlog.ErrNotCoordinator), errors.Is(err, txn.ErrNotCoordinator):
		return kerr.NotCoordinator.Code
	case errors.Is(err, coordlog.ErrLoadInProgress), errors.Is(err, txn.ErrLoadInProgress):
		return kerr.CoordinatorLoadInProgress.Code
	case errors.Is(err, coordlog.ErrCoordinatorNotAvailable), errors.Is(err, txn.ErrCoordinatorNotAvailable):
		return kerr.CoordinatorNotAvailable.Code
	}
	if code, ok := groupCode(err); ok {
		return code
	}
	if code, ok := txnCode(err); ok {
		return code
	}
	switch {
	case errors.Is(err, share.ErrInvalidRecordState):
		return kerr.InvalidRecordState.Code
	case errors.Is(err, share.ErrInvalidRequest):
		return kerr.InvalidRequest.Code
	case errors.Is(err, engine.ErrNoLog):
		return kerr.UnknownTopicOrPartition.Code
	case errors.Is(err, engine.ErrBatchTooLarge):
		return kerr.MessageTooLarge.Code
	case errors.Is(err, engine.ErrOffsetOutOfRange):
		return kerr.OffsetOutOfRange.Code
	case errors.Is(err, record.ErrCorrupt):
		return kerr.CorruptMessage.Code
	case errors.Is(err, record.ErrInvalid):
		return kerr.InvalidRecord.Code
	case errors.Is(err, record.ErrNoKey):
		return kerr.InvalidRecord.Code // Kafka: "Compacted topic cannot accept message without key"
	case errors.Is(err, record.ErrInvalidTimestamp):
		return kerr.InvalidTimestamp.Code
	case errors.Is(err, record.ErrTooLarge):
		return kerr.MessageTooLarge.Code
	case errors.Is(err, record.ErrUnsupported):
		return kerr.UnsupportedForMessageFormat.Code
	case errors.Is(err, replication.ErrTransactional):
		return kerr.InvalidRecord.Code
	case errors.Is(err, replication.ErrOutOfOrderSequence):
		return kerr.OutOfOrderSequenceNumber.Code
	case errors.Is(err, replication.ErrInvalidProducerEpoch):
		return kerr.InvalidProducerEpoch.Code
	case errors.Is(err, replication.ErrInvalidTxnState):
		return kerr.InvalidTxnState.Code
	case errors.Is(err, replication.ErrCoordinatorFenced):
		return kerr.TransactionCoordinatorFenced.Code
	case errors.Is(err, replication.ErrNotLeader), errors.Is(err, replication.ErrClosed), errors.Is(err, engine.ErrClosed):
		// The partition went away (deleted, broker stopping): the client
		// refreshes its metadata and retries.
		return kerr.NotLeaderForPartition.Code
	case errors.Is(err, replication.ErrNotEnoughReplicas):
		return kerr.NotEnoughReplicas.Code
	case errors.Is(err, replication.ErrNotEnoughReplicasAfterAppend):
		return kerr.NotEnoughReplicasAfterAppend.Code
	case errors.Is(err, replication.ErrFencedLeaderEpoch):
		return kerr.FencedLeaderEpoch.Code
	case errors.Is(err, replication.ErrUnknownLeaderEpoch):
		return kerr.UnknownLeaderEpoch.Code
	case errors.Is(err, cluster.ErrTopicExists):
		return kerr.TopicAlreadyExists.Code
	case errors.Is(err, cluster.ErrTopicNotFound):
		return kerr.UnknownTopicOrPartition.Code
	case errors.Is(err, cluster.ErrInvalidReplicationFactor):
		return kerr.InvalidReplicationFactor.Code
	case errors.Is(err, cluster.ErrInvalidReplicaAssignment):
		return kerr.InvalidReplicaAssignment.Code
	case errors.Is(err, cluster.ErrNoReassignmentInProgress):
		return kerr.NoReassignmentInProgress.Code
	case errors.Is(err, cluster.ErrReassignmentInProgress):
		return kerr.ReassignmentInProgress.Code
	case errors.Is(err, cluster.ErrInvalidPartitions):
		return kerr.InvalidPartitions.Code
	case errors.Is(err, cluster.ErrInvalidTopic):
		return kerr.InvalidTopicException.Code
	case errors.Is(err, cluster.ErrNotController), errors.Is(err, cluster.ErrControllerMoved):
		return kerr.NotController.Code
	case errors.Is(err, cluster.ErrElectionNotNeeded):
		return kerr.ElectionNotNeeded.Code
	case errors.Is(err, cluster.ErrPreferredLeaderNotAvailable):
		return kerr.PreferredLeaderNotAvailable.Code
	case errors.Is(err, cluster.ErrEligibleLeadersNotAvailable):
		return kerr.EligibleLeadersNotAvailable.Code
	case errors.Is(err, cluster.ErrStaleControllerEpoch):
		return kerr.StaleControllerEpoch.Code
	case errors.Is(err, cluster.ErrNotFromController):
		return kerr.ClusterAuthorizationFailed.Code
	case errors.Is(err, context.DeadlineExceeded):
		return kerr.RequestTimedOut.Code
	case errors.Is(err, cluster.ErrStaleBrokerEpoch):
		return kerr.StaleBrokerEpoch.Code
	case errors.Is(err, cluster.ErrBrokerNotAvailable), errors.Is(err, cluster.ErrClosed):
		return kerr.BrokerNotAvailable.Code
	case errors.Is(err, metastore.ErrClosed):
		return kerr.KafkaStorageError.Code
	case errors.Is(err, engine.ErrCorruptStore), errors.Is(err, engine.ErrStorage):
		return kerr.KafkaStorageError.Code
	default:
		return kerr.UnknownServerError.Code
	}
}

// txnCode maps the transaction coordinator's errors.
func txnCode(err error) (int16, bool) {
	switch {
	case errors.Is(err, txn.ErrInvalidRequest), errors.Is(err, txn.ErrTooLong):
		return kerr.InvalidRequest.Code, true
	case errors.Is(err, txn.ErrInvalidTimeout):
		return kerr.InvalidTransactionTimeout.Code, true
	case errors.Is(err, txn.ErrConcurrentTransactions):
		return kerr.ConcurrentTransactions.Code, true
	case errors.Is(err, txn.ErrProducerFenced):
		return kerr.ProducerFenced.Code, true
	case errors.Is(err, txn.ErrInvalidProducerIDMapping):
		return kerr.InvalidProducerIDMapping.Code, true
	case errors.Is(err, txn.ErrInvalidTxnState):
		return kerr.InvalidTxnState.Code, true
	case errors.Is(err, txn.ErrTransactionalIDNotFound):
		return kerr.TransactionalIDNotFound.Code, true
	}
	return 0, false
}

// TxnCode is Code for the answers of the transaction coordinator's APIs,
// with their two differences: before KIP-588 (fencedSince is the first
// version of the request that knows it: InitProducerId v4,
// AddPartitionsToTxn, AddOffsetsToTxn and EndTxn v2) clients know
// PRODUCER_FENCED as INVALID_PRODUCER_EPOCH; and too few brokers for
// __transaction_state (cluster.ErrInvalidReplicationFactor) means the
// coordinator is not available yet.
func TxnCode(err error, fencedSince, version int16) int16 {
	switch {
	case errors.Is(err, txn.ErrProducerFenced) && version < fencedSince:
		return kerr.InvalidProducerEpoch.Code
	case errors.Is(err, cluster.ErrInvalidReplicationFactor):
		return kerr.CoordinatorNotAvailable.Code
	}
	return Code(err)
}

// AppendCode is the code of a coordinator write to its log that failed
// (Kafka's GroupMetadataManager maps a failed append the same way): this
// broker no longer leads the partition (coordlog.ErrNotCoordinator):
// NOT_COORDINATOR; a producer the log knows a newer epoch of
// (replication.ErrInvalidProducerEpoch, a transactional offset commit of a
// fenced producer): INVALID_PRODUCER_EPOCH, at every version; anything else
// (too few in-sync replicas, a timeout, a closed log): retriable
// COORDINATOR_NOT_AVAILABLE.
func AppendCode(err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, coordlog.ErrNotCoordinator), errors.Is(err, txn.ErrNotCoordinator):
		return kerr.NotCoordinator.Code
	case errors.Is(err, replication.ErrInvalidProducerEpoch):
		return kerr.InvalidProducerEpoch.Code
	}
	return kerr.CoordinatorNotAvailable.Code
}

// StoreCode is the code of a coordinator's metastore write that failed (as
// Kafka maps failed appends to __consumer_offsets): a closed store means
// the coordinator is going away (retriable COORDINATOR_NOT_AVAILABLE), an
// append that failed first keeps its AppendCode, anything else is
// UNKNOWN_SERVER_ERROR.
func StoreCode(err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrAppend):
		return AppendCode(err)
	case errors.Is(err, metastore.ErrClosed):
		return kerr.CoordinatorNotAvailable.Code
	}
	return kerr.UnknownServerError.Code
}
