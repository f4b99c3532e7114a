package pebblelog

import (
	"fmt"

	"github.com/sluice/sluice/engine"
)

// RenameLog implements engine.LogRenamer: the catalog entry of the log
// moves to the new name in one synced batch; its data (keyed by the log's
// numeric id) stays where it is.
func (s *Store) RenameLog(from, to engine.PartitionID) error {
	s.life.RLock()
	defer s.life.RUnlock()
	if s.closed {
		return engine.ErrClosed
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.catalog[from]
	if !ok {
		return fmt.Errorf("%w: %s/%d", engine.ErrNoLog, from.Topic, from.Partition)
	}
	if s.open[from] != nil {
		return fmt.Errorf("pebblelog: %s: rename %s/%d: log is open", s.dir, from.Topic, from.Partition)
	}
	if _, ok := s.catalog[to]; ok {
		return fmt.Errorf("%w: %s/%d", engine.ErrLogExists, to.Topic, to.Partition)
	}
	b := s.db.NewBatch()
	defer b.Close()
	_ = b.Delete(catalogKey(from), nil)
	_ = b.Set(catalogKey(to), appendU64(nil, n), nil)
	if err := s.commitSynced(b); err != nil {
		return fmt.Errorf("pebblelog: %s: rename %s/%d: %w", s.dir, from.Topic, from.Partition, err)
	}
	delete(s.catalog, from)
	s.catalog[to] = n
	return nil
}
