package txn

import "errors"

// Errors of the coordinator's requests. Each stands for one Kafka error
// code, which package internal/errcode (TxnCode) gives it when the server
// builds the response; wrap them with %w to add detail.
var (
	// ErrNotCoordinator: this broker does not lead the transactional id's
	// __transaction_state partition (NOT_COORDINATOR).
	ErrNotCoordinator = errors.New("txn: not the coordinator of this transactional id")
	// ErrLoadInProgress: it does, but is still loading it
	// (COORDINATOR_LOAD_IN_PROGRESS).
	ErrLoadInProgress = errors.New("txn: the coordinator is loading this transactional id's partition")
	// ErrCoordinatorNotAvailable: a state write failed for a reason a
	// retry may cure (too few in-sync replicas, a timeout)
	// (COORDINATOR_NOT_AVAILABLE).
	ErrCoordinatorNotAvailable = errors.New("txn: the coordinator could not write the transaction state")
	// ErrInvalidRequest: an empty transactional id, or only one of
	// producer id and epoch (INVALID_REQUEST).
	ErrInvalidRequest = errors.New("txn: invalid request")
	// ErrInvalidTimeout: transaction.timeout.ms not in 1..
	// transaction.max.timeout.ms (INVALID_TRANSACTION_TIMEOUT).
	ErrInvalidTimeout = errors.New("txn: invalid transaction timeout")
	// ErrConcurrentTransactions: the previous transaction is still being
	// completed, or another request is changing this id's state; retry
	// (CONCURRENT_TRANSACTIONS).
	ErrConcurrentTransactions = errors.New("txn: a previous transaction is still completing")
	// ErrProducerFenced: the producer's epoch is not the current one: a
	// newer producer with this transactional id exists (PRODUCER_FENCED;
	// INVALID_PRODUCER_EPOCH for the request versions before KIP-588).
	ErrProducerFenced = errors.New("txn: producer fenced by a newer epoch")
	// ErrInvalidProducerIDMapping: the transactional id is unknown, or
	// uses another producer id (INVALID_PRODUCER_ID_MAPPING).
	ErrInvalidProducerIDMapping = errors.New("txn: producer id does not match the transactional id")
	// ErrInvalidTxnState: the request does not fit the transaction's state,
	// as committing an aborted one (INVALID_TXN_STATE).
	ErrInvalidTxnState = errors.New("txn: invalid transaction state")
	// ErrTransactionalIDNotFound: DescribeTransactions of an unknown id
	// (TRANSACTIONAL_ID_NOT_FOUND).
	ErrTransactionalIDNotFound = errors.New("txn: transactional id not found")
	// ErrTooLong: a transactional id longer than a record string can be
	// (INVALID_REQUEST).
	ErrTooLong = errors.New("txn: transactional id too long for a __transaction_state record")
	// ErrMarkerFenced is what a MarkerWriter returns for a partition that
	// refused a marker because its producer epoch or coordinator epoch is
	// stale (INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED): a
	// newer coordinator or producer has taken over, and this coordinator
	// stops completing the transaction, as Kafka's does.
	ErrMarkerFenced = errors.New("txn: marker refused: stale producer or coordinator epoch")
)
