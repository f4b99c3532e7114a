package group

import (
	"errors"
	"fmt"

	"github.com/sluice/sluice/coordlog"
	"github.com/sluice/sluice/internal/errcode"
)

// The errors the coordinator answers with, by their short names here: its
// protocol errors are declared in package errcode, the runtime ones in
// coordlog. The coordinator decides with these errors; errcode.Code, the
// one mapping, turns each into the code of the response it builds, so no
// code is chosen here.
var (
	errCoordinatorNotAvailable = coordlog.ErrCoordinatorNotAvailable
	errLoadInProgress          = coordlog.ErrLoadInProgress
	errNotCoordinator          = coordlog.ErrNotCoordinator
	errInvalidGroupID          = errcode.ErrInvalidGroupID
	errUnknownMemberID         = errcode.ErrUnknownMemberID
	errMemberIDRequired        = errcode.ErrMemberIDRequired
	errIllegalGeneration       = errcode.ErrIllegalGeneration
	errRebalanceInProgress     = errcode.ErrRebalanceInProgress
	errFencedInstanceID        = errcode.ErrFencedInstanceID
	errInconsistentProtocol    = errcode.ErrInconsistentProtocol
	errInvalidSessionTimeout   = errcode.ErrInvalidSessionTimeout
	errGroupMaxSizeReached     = errcode.ErrGroupMaxSizeReached
	errGroupIDNotFound         = errcode.ErrGroupIDNotFound
	errNonEmptyGroup           = errcode.ErrNonEmptyGroup
	errGroupSubscribedToTopic  = errcode.ErrGroupSubscribedToTopic
	errOffsetMetadataTooLarge  = errcode.ErrOffsetMetadataTooLarge
	errInvalidRequest          = errcode.ErrInvalidRequest
	errUnstableOffsetCommit    = errcode.ErrUnstableOffsetCommit
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

// storeErr marks err, a failed metastore write (or the failed log write
// before it, already marked errcode.ErrAppend), for errcode.Code.
func storeErr(err error) error {
	if errors.Is(err, errcode.ErrAppend) {
		return err
	}
	return fmt.Errorf("%w: %w", errcode.ErrStore, err)
}

// appendErr marks err, a failed write to __consumer_offsets through a
// hook, for errcode.Code.
func appendErr(err error) error { return fmt.Errorf("%w: %w", errcode.ErrAppend, err) }
