package memlog

import (
	"fmt"

	"github.com/sluice/sluice/engine"
)

// RenameLog implements engine.LogRenamer.
func (s *Store) RenameLog(from, to engine.PartitionID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return engine.ErrClosed
	}
	l, ok := s.data.logs[from]
	if !ok {
		return fmt.Errorf("%w: %s/%d", engine.ErrNoLog, from.Topic, from.Partition)
	}
	if _, ok := s.data.logs[to]; ok {
		return fmt.Errorf("%w: %s/%d", engine.ErrLogExists, to.Topic, to.Partition)
	}
	l.writeMu.Lock()
	l.id = to
	l.writeMu.Unlock()
	s.data.logs[to] = l
	delete(s.data.logs, from)
	return nil
}
