package server

import (
	"context"
	"errors"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice/sluice/cluster"
	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/metastore"
	"github.com/sluice/sluice/record"
	"github.com/sluice/sluice/replica"
	"github.com/sluice/sluice/replication"
)

// Errors raised by the handlers. Each maps to one Kafka error code in
// errorCode; wrap them with %w to add the detail that goes into a response's
// error message (CreateTopics and friends carry one from v1).
var (
	// errTopicAuthorization: clients may not do this to the topic (an
	// internal topic: delete, alter configs).
	errTopicAuthorization = errors.New("server: not allowed on this topic")
	// errUnsupportedSASLMechanism, errUnacceptableCredential: SCRAM
	// credential changes Kafka refuses with those codes.
	errUnsupportedSASLMechanism = errors.New("server: unsupported SASL mechanism")
	errUnacceptableCredential   = errors.New("server: unacceptable credential")
	// errClusterAuthorization, errGroupAuthorization: the principal may not
	// do this (CLUSTER_ / GROUP_AUTHORIZATION_FAILED).
	errClusterAuthorization = errors.New("server: not allowed on the cluster")
	// errTransactionalIDAuthorization: TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
	errTransactionalIDAuthorization = errors.New("server: not allowed on the transactional id")
	errGroupAuthorization           = errors.New("server: not allowed on this group")
	errUnknownTopicOrPartition      = errors.New("server: unknown topic or partition")
	errUnknownTopicID               = errors.New("server: unknown topic id")
	errInvalidTopic                 = errors.New("server: invalid topic")
	errTopicExists                  = errors.New("server: topic already exists")
	errInvalidPartitions            = errors.New("server: invalid partitions")
	errInvalidReplicationFactor     = errors.New("server: invalid replication factor")
	errInvalidReplicaAssignment     = errors.New("server: invalid replica assignment")
	errInvalidConfig                = errors.New("server: invalid config")
	errInvalidRequest               = errors.New("server: invalid request")
	errTopicDeletionDisabled        = errors.New("server: topic deletion is disabled (delete.topic.enable=false)")
	errMessageTooLarge              = errors.New("server: message too large")
	errRecordListTooLarge           = errors.New("server: record list larger than the segment size")
	errInvalidRequiredAcks          = errors.New("server: acks must be -1, 0 or 1")
	errFencedLeaderEpoch            = errors.New("server: fenced leader epoch")
	errUnknownLeaderEpoch           = errors.New("server: unknown leader epoch")
	errTransactionsUnsupported      = errors.New("server: transactions are not supported")
	errResourceNotFound             = errors.New("server: resource not found")
)

// errorCode is the one place where Go errors become Kafka error codes. An
// error it does not know is UNKNOWN_SERVER_ERROR, which the caller should
// also log.
func errorCode(err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errUnknownTopicOrPartition), errors.Is(err, engine.ErrNoLog), errors.Is(err, replica.ErrUnknownPartition):
		return kerr.UnknownTopicOrPartition.Code
	case errors.Is(err, errUnknownTopicID):
		return kerr.UnknownTopicID.Code
	case errors.Is(err, errInvalidTopic):
		return kerr.InvalidTopicException.Code
	case errors.Is(err, errTopicExists):
		return kerr.TopicAlreadyExists.Code
	case errors.Is(err, errInvalidPartitions):
		return kerr.InvalidPartitions.Code
	case errors.Is(err, errInvalidReplicationFactor):
		return kerr.InvalidReplicationFactor.Code
	case errors.Is(err, errInvalidReplicaAssignment):
		return kerr.InvalidReplicaAssignment.Code
	case errors.Is(err, errInvalidConfig):
		return kerr.InvalidConfig.Code
	case errors.Is(err, errInvalidRequest), errors.Is(err, errTransactionsUnsupported):
		return kerr.InvalidRequest.Code
	case errors.Is(err, errTopicDeletionDisabled):
		return kerr.TopicDeletionDisabled.Code
	case errors.Is(err, errMessageTooLarge), errors.Is(err, engine.ErrBatchTooLarge):
		return kerr.MessageTooLarge.Code
	case errors.Is(err, errRecordListTooLarge):
		return kerr.RecordListTooLarge.Code
	case errors.Is(err, errInvalidRequiredAcks):
		return kerr.InvalidRequiredAcks.Code
	case errors.Is(err, errFencedLeaderEpoch):
		return kerr.FencedLeaderEpoch.Code
	case errors.Is(err, errUnknownLeaderEpoch):
		return kerr.UnknownLeaderEpoch.Code
	case errors.Is(err, errResourceNotFound):
		return kerr.ResourceNotFound.Code
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
	case errors.Is(err, errLeaderNotAvailable):
		return kerr.LeaderNotAvailable.Code
	case errors.Is(err, cluster.ErrTopicExists):
		return kerr.TopicAlreadyExists.Code
	case errors.Is(err, cluster.ErrTopicNotFound):
		return kerr.UnknownTopicOrPartition.Code
	case errors.Is(err, cluster.ErrInvalidReplicationFactor):
		return kerr.InvalidReplicationFactor.Code
	case errors.Is(err, cluster.ErrInvalidReplicaAssignment):
		return kerr.InvalidReplicaAssignment.Code
	case errors.Is(err, cluster.ErrInvalidPartitions):
		return kerr.InvalidPartitions.Code
	case errors.Is(err, cluster.ErrInvalidTopic):
		return kerr.InvalidTopicException.Code
	case errors.Is(err, cluster.ErrNotController), errors.Is(err, cluster.ErrControllerMoved):
		return kerr.NotController.Code
	case errors.Is(err, errElectionTimedOut):
		return kerr.RequestTimedOut.Code
	case errors.Is(err, cluster.ErrElectionNotNeeded):
		return kerr.ElectionNotNeeded.Code
	case errors.Is(err, cluster.ErrPreferredLeaderNotAvailable):
		return kerr.PreferredLeaderNotAvailable.Code
	case errors.Is(err, cluster.ErrEligibleLeadersNotAvailable):
		return kerr.EligibleLeadersNotAvailable.Code
	case errors.Is(err, errStaleControllerEpoch), errors.Is(err, cluster.ErrStaleControllerEpoch):
		return kerr.StaleControllerEpoch.Code
	case errors.Is(err, errClusterOnly), errors.Is(err, cluster.ErrNotFromController), errors.Is(err, errNotControlPlaneListener):
		return kerr.ClusterAuthorizationFailed.Code
	case errors.Is(err, errSASLState):
		return kerr.IllegalSaslState.Code
	case errors.Is(err, errSASLMechanism):
		return kerr.UnsupportedSaslMechanism.Code
	case errors.Is(err, errSASLFailed):
		return kerr.SaslAuthenticationFailed.Code
	case errors.Is(err, errUnsupportedSASLMechanism):
		return kerr.UnsupportedSaslMechanism.Code
	case errors.Is(err, errUnacceptableCredential):
		return kerr.UnacceptableCredential.Code
	case errors.Is(err, errSecurityDisabled):
		return kerr.SecurityDisabled.Code
	case errors.Is(err, errTransactionalIDAuthorization):
		return kerr.TransactionalIDAuthorizationFailed.Code
	case errors.Is(err, errClusterAuthorization):
		return kerr.ClusterAuthorizationFailed.Code
	case errors.Is(err, errGroupAuthorization):
		return kerr.GroupAuthorizationFailed.Code
	case errors.Is(err, errTopicAuthorization):
		return kerr.TopicAuthorizationFailed.Code
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

// errorMessage is the response error message for err: nil when err is nil.
// Clients print it after the error code's name, so a leading sentinel that
// only repeats the code ("server: topic already exists: topic "t" already
// exists") is dropped, leaving the detail.
func errorMessage(err error) *string {
	if err == nil {
		return nil
	}
	m := err.Error()
	for inner := errors.Unwrap(err); inner != nil; inner = errors.Unwrap(inner) {
		if p := inner.Error() + ": "; strings.HasPrefix(m, p) && errors.Unwrap(inner) == nil {
			m = m[len(p):]
			break
		}
	}
	return &m
}
