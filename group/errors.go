package group

import (
	"errors"

	"github.com/sluice/sluice/coordlog"
	"github.com/sluice/sluice/internal/errcode"
)

// The codes the coordinator puts in the responses it builds: each is the
// code package errcode's one mapping gives the coordinator's error (the
// coordinator's protocol errors are declared in errcode, the runtime ones
// in coordlog), so no code is chosen here.
var (
	errCoordinatorNotAvailable = errcode.Code(coordlog.ErrCoordinatorNotAvailable)
	errLoadInProgress          = errcode.Code(coordlog.ErrLoadInProgress)
	errNotCoordinator          = errcode.Code(coordlog.ErrNotCoordinator)
	errInvalidGroupID          = errcode.Code(errcode.ErrInvalidGroupID)
	errUnknownMemberID         = errcode.Code(errcode.ErrUnknownMemberID)
	errMemberIDRequired        = errcode.Code(errcode.ErrMemberIDRequired)
	errIllegalGeneration       = errcode.Code(errcode.ErrIllegalGeneration)
	errRebalanceInProgress     = errcode.Code(errcode.ErrRebalanceInProgress)
	errFencedInstanceID        = errcode.Code(errcode.ErrFencedInstanceID)
	errInconsistentProtocol    = errcode.Code(errcode.ErrInconsistentProtocol)
	errInvalidSessionTimeout   = errcode.Code(errcode.ErrInvalidSessionTimeout)
	errGroupMaxSizeReached     = errcode.Code(errcode.ErrGroupMaxSizeReached)
	errGroupIDNotFound         = errcode.Code(errcode.ErrGroupIDNotFound)
	errNonEmptyGroup           = errcode.Code(errcode.ErrNonEmptyGroup)
	errGroupSubscribedToTopic  = errcode.Code(errcode.ErrGroupSubscribedToTopic)
	errOffsetMetadataTooLarge  = errcode.Code(errcode.ErrOffsetMetadataTooLarge)
	errInvalidRequest          = errcode.Code(errcode.ErrInvalidRequest)
	errUnknownServerError      = errcode.Code(errcode.ErrUnknown)
	errUnstableOffsetCommit    = errcode.Code(errcode.ErrUnstableOffsetCommit)
	errInvalidProducerEpoch    = errcode.Code(errcode.ErrInvalidProducerEpoch)
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

// storeErrorCode is the code a client sees for a failed save of group
// state (putGroup): errcode.StoreCode.
func storeErrorCode(err error) int16 { return errcode.StoreCode(err) }
