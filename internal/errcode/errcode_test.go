package errcode

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice/sluice/cluster"
	"github.com/sluice/sluice/coordlog"
	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/metastore"
	"github.com/sluice/sluice/record"
	"github.com/sluice/sluice/replication"
	"github.com/sluice/sluice/txn"
)

// TestCode pins the code of every error a coordinator returns, and of the
// errors of the packages below the server, as clients have seen them:
// directly and wrapped with detail.
func TestCode(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want *kerr.Error // nil: 0
	}{
		{nil, nil},
		{coordlog.ErrNotCoordinator, kerr.NotCoordinator},
		{coordlog.ErrLoadInProgress, kerr.CoordinatorLoadInProgress},
		{coordlog.ErrCoordinatorNotAvailable, kerr.CoordinatorNotAvailable},

		{ErrInvalidGroupID, kerr.InvalidGroupID},
		{ErrUnknownMemberID, kerr.UnknownMemberID},
		{ErrMemberIDRequired, kerr.MemberIDRequired},
		{ErrIllegalGeneration, kerr.IllegalGeneration},
		{ErrRebalanceInProgress, kerr.RebalanceInProgress},
		{ErrFencedInstanceID, kerr.FencedInstanceID},
		{ErrInconsistentProtocol, kerr.InconsistentGroupProtocol},
		{ErrInvalidSessionTimeout, kerr.InvalidSessionTimeout},
		{ErrGroupMaxSizeReached, kerr.GroupMaxSizeReached},
		{ErrGroupIDNotFound, kerr.GroupIDNotFound},
		{ErrNonEmptyGroup, kerr.NonEmptyGroup},
		{ErrGroupSubscribedToTopic, kerr.GroupSubscribedToTopic},
		{ErrOffsetMetadataTooLarge, kerr.OffsetMetadataTooLarge},
		{ErrInvalidRequest, kerr.InvalidRequest},
		{ErrUnstableOffsetCommit, kerr.UnstableOffsetCommit},
		{fmt.Errorf("%w: %w", ErrAppend, replication.ErrNotEnoughReplicas), kerr.CoordinatorNotAvailable},
		{fmt.Errorf("%w: %w", ErrStore, metastore.ErrClosed), kerr.CoordinatorNotAvailable},
		{fmt.Errorf("%w: %w", ErrStore, errors.New("disk")), kerr.UnknownServerError},

		{txn.ErrNotCoordinator, kerr.NotCoordinator},
		{txn.ErrLoadInProgress, kerr.CoordinatorLoadInProgress},
		{txn.ErrCoordinatorNotAvailable, kerr.CoordinatorNotAvailable},
		{txn.ErrInvalidRequest, kerr.InvalidRequest},
		{txn.ErrTooLong, kerr.InvalidRequest},
		{txn.ErrInvalidTimeout, kerr.InvalidTransactionTimeout},
		{txn.ErrConcurrentTransactions, kerr.ConcurrentTransactions},
		{txn.ErrProducerFenced, kerr.ProducerFenced},
		{txn.ErrInvalidProducerIDMapping, kerr.InvalidProducerIDMapping},
		{txn.ErrInvalidTxnState, kerr.InvalidTxnState},
		{txn.ErrTransactionalIDNotFound, kerr.TransactionalIDNotFound},

		{engine.ErrNoLog, kerr.UnknownTopicOrPartition},
		{engine.ErrBatchTooLarge, kerr.MessageTooLarge},
		{engine.ErrOffsetOutOfRange, kerr.OffsetOutOfRange},
		{engine.ErrClosed, kerr.NotLeaderForPartition},
		{engine.ErrStorage, kerr.KafkaStorageError},
		{engine.ErrCorruptStore, kerr.KafkaStorageError},
		{record.ErrCorrupt, kerr.CorruptMessage},
		{record.ErrInvalid, kerr.InvalidRecord},
		{record.ErrNoKey, kerr.InvalidRecord},
		{record.ErrInvalidTimestamp, kerr.InvalidTimestamp},
		{record.ErrTooLarge, kerr.MessageTooLarge},
		{record.ErrUnsupported, kerr.UnsupportedForMessageFormat},
		{replication.ErrTransactional, kerr.InvalidRecord},
		{replication.ErrOutOfOrderSequence, kerr.OutOfOrderSequenceNumber},
		{replication.ErrInvalidProducerEpoch, kerr.InvalidProducerEpoch},
		{replication.ErrInvalidTxnState, kerr.InvalidTxnState},
		{replication.ErrCoordinatorFenced, kerr.TransactionCoordinatorFenced},
		{replication.ErrNotLeader, kerr.NotLeaderForPartition},
		{replication.ErrClosed, kerr.NotLeaderForPartition},
		{replication.ErrNotEnoughReplicas, kerr.NotEnoughReplicas},
		{replication.ErrNotEnoughReplicasAfterAppend, kerr.NotEnoughReplicasAfterAppend},
		{replication.ErrFencedLeaderEpoch, kerr.FencedLeaderEpoch},
		{replication.ErrUnknownLeaderEpoch, kerr.UnknownLeaderEpoch},
		{cluster.ErrTopicExists, kerr.TopicAlreadyExists},
		{cluster.ErrTopicNotFound, kerr.UnknownTopicOrPartition},
		{cluster.ErrInvalidReplicationFactor, kerr.InvalidReplicationFactor},
		{cluster.ErrInvalidReplicaAssignment, kerr.InvalidReplicaAssignment},
		{cluster.ErrNoReassignmentInProgress, kerr.NoReassignmentInProgress},
		{cluster.ErrReassignmentInProgress, kerr.ReassignmentInProgress},
		{cluster.ErrInvalidPartitions, kerr.InvalidPartitions},
		{cluster.ErrInvalidTopic, kerr.InvalidTopicException},
		{cluster.ErrNotController, kerr.NotController},
		{cluster.ErrControllerMoved, kerr.NotController},
		{cluster.ErrElectionNotNeeded, kerr.ElectionNotNeeded},
		{cluster.ErrPreferredLeaderNotAvailable, kerr.PreferredLeaderNotAvailable},
		{cluster.ErrEligibleLeadersNotAvailable, kerr.EligibleLeadersNotAvailable},
		{cluster.ErrStaleControllerEpoch, kerr.StaleControllerEpoch},
		{cluster.ErrNotFromController, kerr.ClusterAuthorizationFailed},
		{cluster.ErrStaleBrokerEpoch, kerr.StaleBrokerEpoch},
		{cluster.ErrBrokerNotAvailable, kerr.BrokerNotAvailable},
		{cluster.ErrClosed, kerr.BrokerNotAvailable},
		{metastore.ErrClosed, kerr.KafkaStorageError},
		{context.DeadlineExceeded, kerr.RequestTimedOut},
		{errors.New("something else"), kerr.UnknownServerError},
	} {
		name := "nil"
		if tt.err != nil {
			name = tt.err.Error()
		}
		t.Run(name, func(t *testing.T) {
			var want int16
			if tt.want != nil {
				want = tt.want.Code
			}
			if got := Code(tt.err); got != want {
				t.Errorf("Code = %d, want %d (%v)", got, want, tt.want)
			}
			if tt.err != nil {
				if got := Code(fmt.Errorf("somewhere: %w", tt.err)); got != want {
					t.Errorf("Code of the wrapped error = %d, want %d", got, want)
				}
			}
		})
	}
}

// TestTxnCode: PRODUCER_FENCED becomes INVALID_PRODUCER_EPOCH for request
// versions before fencedSince, and too few brokers for
// __transaction_state is COORDINATOR_NOT_AVAILABLE; the rest is Code's.
func TestTxnCode(t *testing.T) {
	for _, tt := range []struct {
		name                 string
		err                  error
		fencedSince, version int16
		want                 *kerr.Error
	}{
		{"fenced/old", txn.ErrProducerFenced, 2, 1, kerr.InvalidProducerEpoch},
		{"fenced/new", txn.ErrProducerFenced, 2, 2, kerr.ProducerFenced},
		{"too-few-brokers", cluster.ErrInvalidReplicationFactor, 2, 2, kerr.CoordinatorNotAvailable},
		{"not-coordinator", txn.ErrNotCoordinator, 2, 0, kerr.NotCoordinator},
		{"invalid-mapping", fmt.Errorf("id x: %w", txn.ErrInvalidProducerIDMapping), 2, 3, kerr.InvalidProducerIDMapping},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := TxnCode(tt.err, tt.fencedSince, tt.version); got != tt.want.Code {
				t.Errorf("TxnCode = %d, want %v", got, tt.want)
			}
		})
	}
}

// TestAppendAndStoreCode: a coordinator's failed log write is
// NOT_COORDINATOR when leadership moved, INVALID_PRODUCER_EPOCH for a
// fenced producer, else retriable COORDINATOR_NOT_AVAILABLE; a failed
// metastore write keeps the code of the log write that failed before it,
// is COORDINATOR_NOT_AVAILABLE for a closed store and UNKNOWN_SERVER_ERROR
// otherwise.
func TestAppendAndStoreCode(t *testing.T) {
	appendFailed := func(err error) error { return fmt.Errorf("%w: %w", ErrAppend, err) }
	for _, tt := range []struct {
		name string
		fn   func(error) int16
		err  error
		want int16
	}{
		{"append/nil", AppendCode, nil, 0},
		{"append/not-leader", AppendCode, fmt.Errorf("%w: lost", coordlog.ErrNotCoordinator), kerr.NotCoordinator.Code},
		{"append/txn-not-leader", AppendCode, txn.ErrNotCoordinator, kerr.NotCoordinator.Code},
		{"append/fenced", AppendCode, fmt.Errorf("offsets: append: %w", replication.ErrInvalidProducerEpoch), kerr.InvalidProducerEpoch.Code},
		{"append/too-few-isr", AppendCode, replication.ErrNotEnoughReplicas, kerr.CoordinatorNotAvailable.Code},
		{"append/timeout", AppendCode, context.DeadlineExceeded, kerr.CoordinatorNotAvailable.Code},
		{"store/nil", StoreCode, nil, 0},
		{"store/closed", StoreCode, metastore.ErrClosed, kerr.CoordinatorNotAvailable.Code},
		{"store/other", StoreCode, errors.New("disk"), kerr.UnknownServerError.Code},
		{"store/append-not-leader", StoreCode, appendFailed(coordlog.ErrNotCoordinator), kerr.NotCoordinator.Code},
		{"store/append-timeout", StoreCode, appendFailed(context.DeadlineExceeded), kerr.CoordinatorNotAvailable.Code},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.fn(tt.err); got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
}
