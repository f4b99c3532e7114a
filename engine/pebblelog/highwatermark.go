package pebblelog

import (
	"errors"
	"fmt"
	"math"

	"github.com/cockroachdb/pebble/v2"

	"github.com/sluice/sluice/engine"
)

// SaveHighWatermarks implements engine.HighWatermarkStore: hw replaces the
// store's high watermarks key (see format.go) with a synced write. An
// offset below 0, a negative partition or a topic name longer than 65535
// bytes is refused before anything is written.
func (s *Store) SaveHighWatermarks(hw map[engine.PartitionID]int64) error {
	for id, off := range hw {
		if len(id.Topic) > math.MaxUint16 || id.Partition < 0 || off < 0 {
			return fmt.Errorf("pebblelog: %s: high watermark %d for %.64q/%d: out of range", s.dir, off, id.Topic, id.Partition)
		}
	}
	v := encodeHighWatermarks(hw)
	s.life.RLock()
	defer s.life.RUnlock()
	if s.closed {
		return engine.ErrClosed
	}
	if err := s.db.Set([]byte{tagHighWM}, v, pebble.Sync); err != nil {
		return fmt.Errorf("pebblelog: %s: save high watermarks: %w", s.dir, err)
	}
	return nil
}

// HighWatermarks implements engine.HighWatermarkStore: it decodes the high
// watermarks key; a missing key is an empty set, a damaged value an error
// wrapping engine.ErrCorruptStore that names the key and the store.
func (s *Store) HighWatermarks() (map[engine.PartitionID]int64, error) {
	s.life.RLock()
	defer s.life.RUnlock()
	if s.closed {
		return nil, engine.ErrClosed
	}
	v, closer, err := s.db.Get([]byte{tagHighWM})
	if errors.Is(err, pebble.ErrNotFound) {
		return map[engine.PartitionID]int64{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("pebblelog: %s: read high watermarks: %w", s.dir, err)
	}
	defer closer.Close()
	hw, err := decodeHighWatermarks(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.dir, err)
	}
	return hw, nil
}

// The optional engine capabilities this backend has.
var (
	_ engine.FullTruncater      = (*Log)(nil)
	_ engine.HighWatermarkStore = (*Store)(nil)
)
