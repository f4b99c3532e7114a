package replica

// The periodic flush (log.flush.interval.ms) and the recovery-point
// checkpoints (log.flush.offset.checkpoint.interval.ms; Kafka's
// LogManager.flushDirtyLogs and checkpointLogRecoveryOffsets), run by
// Start on the Manager's timers through the store's optional
// engine.Maintainer. The broker opens its store with the store's own
// timers off, so these are the only ones. A store without Maintainer (the
// memory backend) has nothing to make durable. Store.Close still flushes
// everything and writes the last checkpoint itself.

import (
	"errors"

	"github.com/sluice/sluice/engine"
)

// flushLogs makes every open log's appends durable and then checkpoints
// the recovery points the flush moved, as log.flush.interval.ms asks.
// Errors are logged (a log whose flush failed stays failed and refuses
// appends on its own); a store closing under it is not an error.
func (m *Manager) flushLogs(mt engine.Maintainer) {
	if err := mt.FlushAll(); err != nil && !errors.Is(err, engine.ErrClosed) {
		m.log.Error("replica: periodic flush failed", "err", err)
	}
	m.checkpointRecoveryPoints(mt)
}

// checkpointRecoveryPoints writes the store's recovery-point checkpoint,
// so that recovery after a crash re-validates only what lies past it.
func (m *Manager) checkpointRecoveryPoints(mt engine.Maintainer) {
	if err := mt.CheckpointRecoveryPoints(); err != nil && !errors.Is(err, engine.ErrClosed) {
		m.log.Error("replica: recovery point checkpoint failed", "err", err)
	}
}
