package group

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice/sluice/metastore"
)

// Kafka error codes the coordinator answers with. The coordinator builds
// complete protocol responses, so it is the one place these are chosen for
// the group APIs.
var (
	errCoordinatorNotAvailable = kerr.CoordinatorNotAvailable.Code
	errLoadInProgress          = kerr.CoordinatorLoadInProgress.Code
	errNotCoordinator          = kerr.NotCoordinator.Code
	errInvalidGroupID          = kerr.InvalidGroupID.Code
	errUnknownMemberID         = kerr.UnknownMemberID.Code
	errMemberIDRequired        = kerr.MemberIDRequired.Code
	errIllegalGeneration       = kerr.IllegalGeneration.Code
	errRebalanceInProgress     = kerr.RebalanceInProgress.Code
	errFencedInstanceID        = kerr.FencedInstanceID.Code
	errInconsistentProtocol    = kerr.InconsistentGroupProtocol.Code
	errInvalidSessionTimeout   = kerr.InvalidSessionTimeout.Code
	errGroupMaxSizeReached     = kerr.GroupMaxSizeReached.Code
	errGroupIDNotFound         = kerr.GroupIDNotFound.Code
	errNonEmptyGroup           = kerr.NonEmptyGroup.Code
	errGroupSubscribedToTopic  = kerr.GroupSubscribedToTopic.Code
	errOffsetMetadataTooLarge  = kerr.OffsetMetadataTooLarge.Code
	errInvalidRequest          = kerr.InvalidRequest.Code
	errUnknownServerError      = kerr.UnknownServerError.Code
	errUnstableOffsetCommit    = kerr.UnstableOffsetCommit.Code
	errInvalidProducerEpoch    = kerr.InvalidProducerEpoch.Code
)

var (
	// ErrUnsupportedVersion is returned by Handle for a request whose version
	// the coordinator does not serve (see APIs); the server answers
	// UNSUPPORTED_VERSION.
	ErrUnsupportedVersion = errors.New("group: unsupported request version")
	// ErrUnhandled is returned by Handle for a request key it does not serve
	// (APIs does not list it).
	ErrUnhandled = errors.New("group: request not handled by the group coordinator")
)

// storeErrorCode maps a metastore failure to the code a client sees, as
// Kafka maps failed appends to __consumer_offsets: a closed store means the
// coordinator is going away (retriable), anything else is unknown.
func storeErrorCode(err error) int16 {
	var pe persistError
	if errors.As(err, &pe) {
		return pe.code
	}
	if errors.Is(err, metastore.ErrClosed) {
		return errCoordinatorNotAvailable
	}
	return errUnknownServerError
}
