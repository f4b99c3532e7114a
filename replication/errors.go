package replication

import "errors"

// Errors. Callers classify with errors.Is; the Kafka error code is chosen in
// package server. Batch validation errors come from package record
// (record.ErrCorrupt, record.ErrInvalid, record.ErrUnsupported) and engine
// errors (engine.ErrBatchTooLarge, engine.ErrOffsetOutOfRange) pass through
// wrapped.
var (
	// ErrOutOfOrderSequence: OUT_OF_ORDER_SEQUENCE_NUMBER.
	ErrOutOfOrderSequence = errors.New("replication: out of order sequence number")
	// ErrInvalidProducerEpoch: INVALID_PRODUCER_EPOCH (the batch's epoch is
	// older than the producer's known epoch).
	ErrInvalidProducerEpoch = errors.New("replication: invalid producer epoch")
	// ErrNotLeader: NOT_LEADER_OR_FOLLOWER.
	ErrNotLeader = errors.New("replication: not leader")
	// ErrClosed: the partition was closed (the broker answers
	// NOT_LEADER_OR_FOLLOWER so the client refreshes metadata).
	ErrClosed = errors.New("replication: partition closed")
	// ErrTransactional: a control batch from a client, or a
	// transactional batch without a producer id (only a partition leader
	// writes control batches, for WriteTxnMarkers; the server answers
	// INVALID_RECORD).
	ErrTransactional = errors.New("replication: clients may not write control batches")
	// ErrInvalidTxnState: INVALID_TXN_STATE (a non-transactional batch
	// from a producer whose transaction is open in the partition).
	ErrInvalidTxnState = errors.New("replication: invalid transaction state")
	// ErrCoordinatorFenced: TRANSACTION_COORDINATOR_FENCED (a marker
	// whose coordinator epoch is older than the producer's last
	// marker's).
	ErrCoordinatorFenced = errors.New("replication: transaction coordinator fenced")
	// ErrNotEnoughReplicas: NOT_ENOUGH_REPLICAS (acks=-1 and the ISR is
	// smaller than min.insync.replicas; nothing was appended).
	ErrNotEnoughReplicas = errors.New("replication: not enough in-sync replicas")
	// ErrNotEnoughReplicasAfterAppend: NOT_ENOUGH_REPLICAS_AFTER_APPEND
	// (the records were appended, then the ISR shrank below
	// min.insync.replicas before they were committed).
	ErrNotEnoughReplicasAfterAppend = errors.New("replication: not enough in-sync replicas after append")
	// ErrStaleLeaderEpoch: MakeLeader/MakeFollower with an epoch older
	// than the partition's (the server answers STALE_CONTROLLER_EPOCH or
	// ignores the partition, as Kafka does).
	ErrStaleLeaderEpoch = errors.New("replication: stale leader epoch")
	// ErrFencedLeaderEpoch: FENCED_LEADER_EPOCH (the request's current
	// leader epoch is older than the partition's).
	ErrFencedLeaderEpoch = errors.New("replication: fenced leader epoch")
	// ErrUnknownLeaderEpoch: UNKNOWN_LEADER_EPOCH (the request's current
	// leader epoch is newer than the partition's).
	ErrUnknownLeaderEpoch = errors.New("replication: unknown leader epoch")
	// ErrNotFollower: a follower operation (AppendAsFollower, TruncateTo)
	// on a replica that leads or is still becoming a follower.
	ErrNotFollower = errors.New("replication: not a follower")
)
