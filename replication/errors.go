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
	// ErrUnknownProducerID: UNKNOWN_PRODUCER_ID. Not returned today: like
	// Kafka >= 2.5 (KIP-360), an unknown producer is accepted at any
	// sequence.
	ErrUnknownProducerID = errors.New("replication: unknown producer id")
	// ErrNotLeader: NOT_LEADER_OR_FOLLOWER.
	ErrNotLeader = errors.New("replication: not leader")
	// ErrClosed: the partition was closed (the broker answers
	// NOT_LEADER_OR_FOLLOWER so the client refreshes metadata).
	ErrClosed = errors.New("replication: partition closed")
	// ErrTransactional: a transactional or control batch from a client;
	// transactions are not supported (the server answers
	// UNSUPPORTED_FOR_MESSAGE_FORMAT or INVALID_RECORD).
	ErrTransactional = errors.New("replication: transactional batches are not supported")
)
