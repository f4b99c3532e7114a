package memlog

import (
	"fmt"

	"github.com/sluice/sluice/engine"
)

// RestoreLeaderEpochs implements engine.EpochRestorer.
func (l *Log) RestoreLeaderEpochs(entries []engine.EpochEntry) error {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	if l.closed {
		return l.errClosed()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.start != l.end {
		return fmt.Errorf("%w: restore leader epochs of %s/%d, which holds [%d, %d)", engine.ErrOffsetOutOfRange, l.id.Topic, l.id.Partition, l.start, l.end)
	}
	l.epochs = engine.RestoredEpochs(entries, l.start)
	return nil
}
