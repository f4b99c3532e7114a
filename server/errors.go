package server

import (
	"cmp"
	"errors"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice/sluice/internal/errcode"
	"github.com/sluice/sluice/metadata"
	"github.com/sluice/sluice/quota"
	"github.com/sluice/sluice/replica"
)

// Errors raised by the handlers. Each maps to one Kafka error code in
// errorCode; wrap them with %w to add the detail that goes into a response's
// error message (CreateTopics and friends carry one from v1).
// errRemoteStorage: a read of the remote tier failed (tiered storage):
// KAFKA_STORAGE_ERROR, which clients retry; it never takes a local log
// dir offline.
var errRemoteStorage = errors.New("server: remote storage")

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
	errUnsupportedVersion           = errors.New("server: unsupported version")
)

// errorCode is the code of err in a response: the server's own sentinels
// here, everything else (the logs, replication, the cluster, the
// metastore, the coordinators) through errcode.Code, the one mapping the
// coordinators use too. An error neither knows is UNKNOWN_SERVER_ERROR,
// which the caller should also log.
func errorCode(err error) int16 {
	if code, ok := serverCode(err); ok {
		return code
	}
	return errcode.Code(err)
}

// serverCode maps the server's own sentinels (declared in this package).
func serverCode(err error) (int16, bool) {
	switch {
	case err == nil:
		return 0, true
	case errors.Is(err, errUnknownTopicOrPartition), errors.Is(err, replica.ErrUnknownPartition):
		return kerr.UnknownTopicOrPartition.Code, true
	case errors.Is(err, errUnknownTopicID):
		return kerr.UnknownTopicID.Code, true
	case errors.Is(err, errInvalidTopic):
		return kerr.InvalidTopicException.Code, true
	case errors.Is(err, errTopicExists):
		return kerr.TopicAlreadyExists.Code, true
	case errors.Is(err, errInvalidPartitions):
		return kerr.InvalidPartitions.Code, true
	case errors.Is(err, errInvalidReplicationFactor):
		return kerr.InvalidReplicationFactor.Code, true
	case errors.Is(err, errInvalidReplicaAssignment):
		return kerr.InvalidReplicaAssignment.Code, true
	case errors.Is(err, errInvalidConfig):
		return kerr.InvalidConfig.Code, true
	case errors.Is(err, errRemoteStorage):
		return kerr.KafkaStorageError.Code, true
	case errors.Is(err, errOffsetMovedToTieredStorage):
		return kerr.OffsetMovedToTieredStorage.Code, true
	case errors.Is(err, errInvalidRequest), errors.Is(err, errTransactionsUnsupported):
		return kerr.InvalidRequest.Code, true
	case errors.Is(err, errTopicDeletionDisabled):
		return kerr.TopicDeletionDisabled.Code, true
	case errors.Is(err, errMessageTooLarge):
		return kerr.MessageTooLarge.Code, true
	case errors.Is(err, errRecordListTooLarge):
		return kerr.RecordListTooLarge.Code, true
	case errors.Is(err, errInvalidRequiredAcks):
		return kerr.InvalidRequiredAcks.Code, true
	case errors.Is(err, errFencedLeaderEpoch):
		return kerr.FencedLeaderEpoch.Code, true
	case errors.Is(err, errUnknownLeaderEpoch):
		return kerr.UnknownLeaderEpoch.Code, true
	case errors.Is(err, errResourceNotFound):
		return kerr.ResourceNotFound.Code, true
	case errors.Is(err, errUnsupportedVersion):
		return kerr.UnsupportedVersion.Code, true
	case errors.Is(err, quota.ErrThrottled):
		return kerr.ThrottlingQuotaExceeded.Code, true
	case errors.Is(err, quota.ErrInvalid):
		return kerr.InvalidRequest.Code, true
	case errors.Is(err, errLeaderNotAvailable):
		return kerr.LeaderNotAvailable.Code, true
	case errors.Is(err, errElectionTimedOut):
		return kerr.RequestTimedOut.Code, true
	case errors.Is(err, errStaleControllerEpoch):
		return kerr.StaleControllerEpoch.Code, true
	case errors.Is(err, errClusterOnly), errors.Is(err, errNotControlPlaneListener):
		return kerr.ClusterAuthorizationFailed.Code, true
	case errors.Is(err, errSASLState):
		return kerr.IllegalSaslState.Code, true
	case errors.Is(err, errSASLMechanism):
		return kerr.UnsupportedSaslMechanism.Code, true
	case errors.Is(err, errSASLFailed):
		return kerr.SaslAuthenticationFailed.Code, true
	case errors.Is(err, errUnsupportedSASLMechanism):
		return kerr.UnsupportedSaslMechanism.Code, true
	case errors.Is(err, errUnacceptableCredential):
		return kerr.UnacceptableCredential.Code, true
	case errors.Is(err, errSecurityDisabled):
		return kerr.SecurityDisabled.Code, true
	case errors.Is(err, errTransactionalIDAuthorization):
		return kerr.TransactionalIDAuthorizationFailed.Code, true
	case errors.Is(err, errClusterAuthorization):
		return kerr.ClusterAuthorizationFailed.Code, true
	case errors.Is(err, errGroupAuthorization):
		return kerr.GroupAuthorizationFailed.Code, true
	case errors.Is(err, errTopicAuthorization):
		return kerr.TopicAuthorizationFailed.Code, true
	}
	return 0, false
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

// topicResults lists per-partition outcomes as a response's topics, sorted
// by name, each with its partitions sorted by number: newPart makes a
// partition's entry from its number, error code and message (0 and nil
// when its error is nil), newTopic a topic's entry from its name and
// partitions. ElectLeaders and AlterPartitionReassignments answer so.
func topicResults[T, P any](results map[metadata.TopicPartition]error,
	newPart func(partition int32, code int16, msg *string) P, newTopic func(topic string, parts []P) T) []T {
	tps := slices.SortedFunc(maps.Keys(results), func(a, b metadata.TopicPartition) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	var out []T
	for i := 0; i < len(tps); {
		j := i
		var parts []P
		for ; j < len(tps) && tps[j].Topic == tps[i].Topic; j++ {
			err := results[tps[j]]
			parts = append(parts, newPart(tps[j].Partition, errorCode(err), errorMessage(err)))
		}
		out = append(out, newTopic(tps[i].Topic, parts))
		i = j
	}
	return out
}
