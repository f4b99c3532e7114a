package segment

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/sluice/sluice/engine"
)

// SaveHighWatermarks implements engine.HighWatermarkStore: hw replaces
// replication-offset-checkpoint in the log dir (Kafka's file and format;
// written to a temp file, fsynced, renamed, directory fsynced). A topic
// name the text format cannot hold (empty, or with whitespace) or an
// offset below 0 is refused before anything is written.
func (s *Store) SaveHighWatermarks(hw map[engine.PartitionID]int64) error {
	for id, off := range hw {
		if id.Topic == "" || strings.ContainsAny(id.Topic, " \t\r\n") || id.Partition < 0 || off < 0 {
			return fmt.Errorf("segment: high watermark %d for %q/%d: not writable to %s", off, id.Topic, id.Partition, replicationOffsetFile)
		}
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return engine.ErrClosed
	}
	s.ckptMu.Lock()
	defer s.ckptMu.Unlock()
	return writeOffsetCheckpoint(filepath.Join(s.dir, replicationOffsetFile), hw)
}

// HighWatermarks implements engine.HighWatermarkStore: it reads
// replication-offset-checkpoint. A missing file is an empty set. A damaged
// one is an error wrapping engine.ErrCorruptStore that names it; unlike
// the recovery-point and log-start checkpoints, which the store itself
// falls back from (recovering the whole log, taking the first segment's
// base), it is not ignored here, because the fallback is the caller's, as
// in Kafka, which fails to read a malformed checkpoint file.
func (s *Store) HighWatermarks() (map[engine.PartitionID]int64, error) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil, engine.ErrClosed
	}
	s.ckptMu.Lock()
	defer s.ckptMu.Unlock()
	m, err := readOffsetCheckpoint(filepath.Join(s.dir, replicationOffsetFile))
	if errors.Is(err, errBadCheckpoint) {
		return nil, fmt.Errorf("%w: %w", engine.ErrCorruptStore, err)
	}
	return m, err
}

// The optional engine capabilities this backend has.
var (
	_ engine.FullTruncater      = (*Log)(nil)
	_ engine.HighWatermarkStore = (*Store)(nil)
)
