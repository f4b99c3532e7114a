package errcode

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The group coordinator's errors (package group answers with them, through
// Code). The coordinator-runtime ones (not the coordinator, loading, not
// available) are coordlog's.
var (
	ErrInvalidGroupID         = errors.New("group: invalid group id")
	ErrUnknownMemberID        = errors.New("group: unknown member id")
	ErrMemberIDRequired       = errors.New("group: member id required")
	ErrIllegalGeneration      = errors.New("group: illegal generation")
	ErrRebalanceInProgress    = errors.New("group: rebalance in progress")
	ErrFencedInstanceID       = errors.New("group: fenced group instance id")
	ErrInconsistentProtocol   = errors.New("group: inconsistent group protocol")
	ErrInvalidSessionTimeout  = errors.New("group: invalid session timeout")
	ErrGroupMaxSizeReached    = errors.New("group: group max size reached")
	ErrGroupIDNotFound        = errors.New("group: group id not found")
	ErrNonEmptyGroup          = errors.New("group: group not empty")
	ErrGroupSubscribedToTopic = errors.New("group: group subscribed to topic")
	ErrOffsetMetadataTooLarge = errors.New("group: offset metadata too large")
	ErrInvalidRequest         = errors.New("group: invalid request")
	ErrUnstableOffsetCommit   = errors.New("group: unstable offset commit")
	// The consumer group protocol's (KIP-848; package group/consumer and
	// the coordinator's consumer groups).
	ErrFencedMemberEpoch        = errors.New("consumer: fenced member epoch")
	ErrStaleMemberEpoch         = errors.New("consumer: stale member epoch")
	ErrUnreleasedInstanceID     = errors.New("consumer: unreleased instance id")
	ErrUnsupportedAssignor      = errors.New("consumer: unsupported assignor")
	ErrInvalidRegularExpression = errors.New("consumer: invalid regular expression")
	ErrTopicAuthorization       = errors.New("consumer: topic authorization failed")
	ErrUnsupportedCommitVersion = errors.New("consumer: offset commit version too old for the consumer group protocol")
	// ErrAppend marks a failed write of a coordinator to its log: Code
	// answers AppendCode for the error it wraps.
	ErrAppend = errors.New("coordinator: write to the log failed")
	// ErrStore marks a failed write of a coordinator to the metastore:
	// Code answers StoreCode for the error it wraps.
	ErrStore = errors.New("coordinator: write to the metastore failed")
)

// groupCode maps the group coordinator's errors.
func groupCode(err error) (int16, bool) {
	for _, c := range groupCodes {
		if errors.Is(err, c.err) {
			return c.code, true
		}
	}
	return 0, false
}

var groupCodes = []struct {
	err  error
	code int16
}{
	{ErrInvalidGroupID, kerr.InvalidGroupID.Code},
	{ErrUnknownMemberID, kerr.UnknownMemberID.Code},
	{ErrMemberIDRequired, kerr.MemberIDRequired.Code},
	{ErrIllegalGeneration, kerr.IllegalGeneration.Code},
	{ErrRebalanceInProgress, kerr.RebalanceInProgress.Code},
	{ErrFencedInstanceID, kerr.FencedInstanceID.Code},
	{ErrInconsistentProtocol, kerr.InconsistentGroupProtocol.Code},
	{ErrInvalidSessionTimeout, kerr.InvalidSessionTimeout.Code},
	{ErrGroupMaxSizeReached, kerr.GroupMaxSizeReached.Code},
	{ErrGroupIDNotFound, kerr.GroupIDNotFound.Code},
	{ErrNonEmptyGroup, kerr.NonEmptyGroup.Code},
	{ErrGroupSubscribedToTopic, kerr.GroupSubscribedToTopic.Code},
	{ErrOffsetMetadataTooLarge, kerr.OffsetMetadataTooLarge.Code},
	{ErrInvalidRequest, kerr.InvalidRequest.Code},
	{ErrUnstableOffsetCommit, kerr.UnstableOffsetCommit.Code},
	{ErrFencedMemberEpoch, kerr.FencedMemberEpoch.Code},
	{ErrStaleMemberEpoch, kerr.StaleMemberEpoch.Code},
	{ErrUnreleasedInstanceID, kerr.UnreleasedInstanceID.Code},
	{ErrUnsupportedAssignor, kerr.UnsupportedAssignor.Code},
	{ErrInvalidRegularExpression, kerr.InvalidRegularExpression.Code},
	{ErrTopicAuthorization, kerr.TopicAuthorizationFailed.Code},
	{ErrUnsupportedCommitVersion, kerr.UnsupportedVersion.Code},
}
