package coordlog

import "errors"

// Errors every coordinator on this runtime answers with; package errcode
// gives their Kafka codes. Wrap them with %w to add detail.
var (
	// ErrNotCoordinator: this broker does not lead the key's partition of
	// the internal topic, or stopped leading it before a write committed
	// (NOT_COORDINATOR: the client looks the coordinator up again).
	ErrNotCoordinator = errors.New("coordlog: not the coordinator of this key")
	// ErrLoadInProgress: it leads the partition but is still loading it
	// (COORDINATOR_LOAD_IN_PROGRESS).
	ErrLoadInProgress = errors.New("coordlog: the coordinator is loading this key's partition")
	// ErrCoordinatorNotAvailable: the coordinator cannot serve now (closed,
	// or its load failed) (COORDINATOR_NOT_AVAILABLE, retriable).
	ErrCoordinatorNotAvailable = errors.New("coordlog: the coordinator is not available")
)
