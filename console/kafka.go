package console

// The console's view of the cluster: a Kafka client inside the broker
// (Backend.Client), and how Kafka's errors become HTTP answers.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/internal/topicname"
)

var (
	// errNotAttached: the broker has not handed over its client yet.
	errNotAttached = errors.New("console: the broker is starting")
	// errNoClient: the broker's client could not be made (503).
	errNoClient = errors.New("console: no Kafka client")
)

// clients returns the broker's Kafka client and an admin client over it.
func (q *request) clients() (*kgo.Client, *kadm.Client, error) {
	if q.backend == nil || q.backend.Client == nil {
		return nil, nil, errNotAttached
	}
	cl, err := q.backend.Client()
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", errNoClient, err)
	}
	return cl, kadm.NewClient(cl), nil
}

// kafka returns what a handler needs for its Kafka work: the broker's
// client, an admin client over it, and a context bounding all of the
// request's round trips (KafkaTimeout together), released by done, which
// the caller defers. Without a client it has answered w and ok is false.
func (q *request) kafka(w http.ResponseWriter, r *http.Request) (cl *kgo.Client, adm *kadm.Client, ctx context.Context, done func(), ok bool) {
	cl, adm, err := q.clients()
	if err != nil {
		writeKafkaError(w, err)
		return nil, nil, nil, nil, false
	}
	ctx, done = kafkaCtx(r)
	return cl, adm, ctx, done, true
}

// kafkaCtx bounds one Kafka round trip of r.
func kafkaCtx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), KafkaTimeout)
}

// writeKafkaError answers err, from a Kafka round trip, with the status its
// Kafka error code means: 404 unknown topic or group, 409 topic exists,
// 403 not authorized, 400 invalid input, 503 unreachable or not ready.
func writeKafkaError(w http.ResponseWriter, err error) {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		code := http.StatusInternalServerError
		switch ke {
		case kerr.UnknownTopicOrPartition, kerr.UnknownTopicID, kerr.GroupIDNotFound:
			code = http.StatusNotFound
		case kerr.TopicAlreadyExists:
			code = http.StatusConflict
		case kerr.TopicAuthorizationFailed, kerr.GroupAuthorizationFailed, kerr.ClusterAuthorizationFailed,
			kerr.TransactionalIDAuthorizationFailed:
			code = http.StatusForbidden
		case kerr.InvalidTopicException, kerr.InvalidPartitions, kerr.InvalidReplicationFactor,
			kerr.InvalidReplicaAssignment, kerr.InvalidConfig, kerr.PolicyViolation, kerr.InvalidRequest,
			kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidRecord, kerr.CorruptMessage,
			kerr.UnsupportedForMessageFormat, kerr.InvalidTimestamp, kerr.OffsetOutOfRange:
			code = http.StatusBadRequest
		case kerr.LeaderNotAvailable, kerr.NotLeaderForPartition, kerr.CoordinatorNotAvailable,
			kerr.CoordinatorLoadInProgress, kerr.NotCoordinator, kerr.BrokerNotAvailable,
			kerr.RequestTimedOut, kerr.NotEnoughReplicas, kerr.NotEnoughReplicasAfterAppend,
			kerr.KafkaStorageError, kerr.NotController, kerr.FencedLeaderEpoch, kerr.UnknownLeaderEpoch,
			// The broker's own client could not log in: to the user, the
			// cluster is unreachable.
			kerr.SaslAuthenticationFailed, kerr.UnsupportedSaslMechanism, kerr.IllegalSaslState:
			code = http.StatusServiceUnavailable
		}
		writeError(w, code, err.Error(), ke.Message)
		return
	}
	var ne net.Error
	switch {
	case errors.Is(err, errNotAttached), errors.Is(err, errNoClient):
		writeError(w, http.StatusServiceUnavailable, err.Error(), "")
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled), errors.As(err, &ne),
		errors.Is(err, kgo.ErrClientClosed):
		writeError(w, http.StatusServiceUnavailable, "cluster unreachable: "+err.Error(), "")
	default:
		writeError(w, http.StatusInternalServerError, err.Error(), "")
	}
}

// validTopic reports whether name is a legal Kafka topic name
// (topicname.Validate).
func validTopic(name string) bool { return topicname.Validate(name) == nil }

// validGroup reports whether name can be a group id: non-empty, valid
// UTF-8 without control characters, at most 1024 bytes (Kafka takes any
// string; the bound keeps a URL from costing a cluster round trip).
func validGroup(name string) bool {
	if name == "" || len(name) > 1024 || !utf8.ValidString(name) {
		return false
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}
