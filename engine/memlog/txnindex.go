package memlog

import (
	"fmt"

	"github.com/sluice/sluice/engine"
)

var _ engine.TxnIndex = (*Log)(nil)

// AppendAbortedTxn implements engine.TxnIndex.
func (l *Log) AppendAbortedTxn(t engine.AbortedTxn) error {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	if l.closed {
		return l.errClosed()
	}
	if t.LastOffset < l.start || t.LastOffset >= l.end {
		return fmt.Errorf("%w: %s/%d: aborted transaction marker at %d, log holds [%d, %d)",
			engine.ErrOffsetOutOfRange, l.id.Topic, l.id.Partition, t.LastOffset, l.start, l.end)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	// Readers copy what they need under mu.RLock; a cut builds a new
	// slice.
	l.aborted = append(l.aborted, t)
	return nil
}

// AbortedTxns implements engine.TxnIndex.
func (l *Log) AbortedTxns(from, upTo int64) ([]engine.AbortedTxn, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return nil, l.errClosed()
	}
	var out []engine.AbortedTxn
	for _, t := range l.aborted {
		overlaps, done := engine.OverlapsAbortedTxn(t, from, upTo)
		if overlaps {
			out = append(out, t)
		}
		if done {
			break
		}
	}
	return out, nil
}

// keepAbortedLocked keeps the entries for which keep is true.
// REQUIRES: l.writeMu and l.mu held.
func (l *Log) keepAbortedLocked(keep func(engine.AbortedTxn) bool) {
	var kept []engine.AbortedTxn
	for _, t := range l.aborted {
		if keep(t) {
			kept = append(kept, t)
		}
	}
	l.aborted = kept
}
