package segment

import (
	"errors"
	"fmt"
	"os"

	"github.com/sluice/sluice/engine"
)

// RenameLog implements engine.LogRenamer: the log's directory is renamed
// and the log dir fsynced; its checkpointed offsets follow it.
func (s *Store) RenameLog(from, to engine.PartitionID) error {
	if err := checkID(from); err != nil {
		return fmt.Errorf("%w: %v", engine.ErrNoLog, err)
	}
	if err := checkID(to); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return engine.ErrClosed
	}
	if _, open := s.logs[from]; open {
		return fmt.Errorf("segment: rename %s: log is open", s.logDir(from))
	}
	if _, open := s.logs[to]; open {
		return fmt.Errorf("%w: %s", engine.ErrLogExists, s.logDir(to))
	}
	if _, err := os.Stat(s.logDir(to)); err == nil {
		return fmt.Errorf("%w: %s", engine.ErrLogExists, s.logDir(to))
	}
	if err := os.Rename(s.logDir(from), s.logDir(to)); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%w: %s", engine.ErrNoLog, s.logDir(from))
		}
		return fmt.Errorf("segment: rename %s: %w", s.logDir(from), err)
	}
	if err := syncDir(s.dir); err != nil {
		return fmt.Errorf("segment: fsync %s: %w", s.dir, err)
	}
	move := func(m map[engine.PartitionID]int64) {
		if v, ok := m[from]; ok {
			m[to] = v
			delete(m, from)
		}
	}
	move(s.recoveryPoints)
	move(s.startOffsets)
	move(s.unsynced)
	if s.unrecovered[from] {
		s.unrecovered[to] = true
		delete(s.unrecovered, from)
	}
	s.cleanMu.Lock()
	move(s.cleanerPoints)
	s.cleanMu.Unlock()
	return nil
}
