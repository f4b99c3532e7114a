package segment

import (
	"fmt"

	"github.com/sluice/sluice/engine"
)

// RestoreLeaderEpochs implements engine.EpochRestorer: the history of an
// empty log is replaced and written to leader-epoch-checkpoint before it
// returns.
func (l *Log) RestoreLeaderEpochs(entries []engine.EpochEntry) error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.closed.Load() {
		return errClosedLog
	}
	if err := l.failure(); err != nil {
		return err
	}
	start, end := l.start.Load(), l.end.Load()
	if start != end {
		return fmt.Errorf("%w: restore leader epochs of %s, which holds [%d, %d)", engine.ErrOffsetOutOfRange, l.dir, start, end)
	}
	c := engine.RestoredEpochs(entries, start)
	l.epochMu.Lock()
	l.epochs = c
	l.epochMu.Unlock()
	if err := l.writeEpochs(true); err != nil { // a rebuild from the remote tier: durable at once, as a truncation
		return l.fail(err)
	}
	return nil
}
