package replica

// The periodic flush (log.flush.interval.ms) and the recovery-point
// checkpoints (log.flush.offset.checkpoint.interval.ms; Kafka's
// LogManager.flushDirtyLogs and checkpointLogRecoveryOffsets), run by
// Start on the Manager's timers through each live log dir's store's
// optional engine.Maintainer. The broker opens its stores with their own
// timers off, so these are the only ones. A store without Maintainer (the
// memory backend) has nothing to make durable. Store.Close still flushes
// everything and writes the last checkpoint itself.

import (
	"errors"

	"github.com/sluice/sluice/engine"
)

// anyMaintainer reports whether some dir's store is an engine.Maintainer.
func (m *Manager) anyMaintainer() bool {
	for _, d := range m.dirs {
		if d.store != nil && d.store.maintained() {
			return true
		}
	}
	return false
}

// flushLogs makes every open log's appends durable, dir by dir, and then
// checkpoints the recovery points the flush moved, as
// log.flush.interval.ms asks. Errors are logged (a log whose flush failed
// stays failed and refuses appends on its own) and an I/O error takes its
// dir offline; a store closing under it is not an error.
func (m *Manager) flushLogs() {
	m.eachLiveStore(func(d *logDir) {
		mt := d.store
		if !mt.maintained() {
			return
		}
		if err := mt.FlushAll(); err != nil && !errors.Is(err, engine.ErrClosed) {
			m.log.Error("replica: periodic flush failed", "dir", d.path, "err", err)
			if isIOError(err) {
				m.failDir(d, err)
				return
			}
		}
		m.checkpointDir(d, mt)
	})
}

// checkpointRecoveryPoints writes each live dir's recovery-point
// checkpoint, so that recovery after a crash re-validates only what lies
// past it.
func (m *Manager) checkpointRecoveryPoints() {
	m.eachLiveStore(func(d *logDir) {
		if d.store.maintained() {
			m.checkpointDir(d, d.store)
		}
	})
}

func (m *Manager) checkpointDir(d *logDir, mt engine.Maintainer) {
	if err := mt.CheckpointRecoveryPoints(); err != nil && !errors.Is(err, engine.ErrClosed) {
		m.log.Error("replica: recovery point checkpoint failed", "dir", d.path, "err", err)
		if isIOError(err) {
			m.failDir(d, err)
		}
	}
}
