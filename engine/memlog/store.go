// Package memlog is the "memory" storage backend: every partition log lives
// in process memory. It is for tests and ephemeral brokers.
//
// Layout. A log is a list of chunks, each standing in for one segment of
// the segment backend, rolled at SegmentBytes or SegmentMs, so that
// retention deletes whole chunks, never the newest, exactly as segment
// deletion does. A chunk holds its batches back to back in blocks, byte
// slices that are never grown or copied (a batch that does not fit goes to
// a new block; see chunk.go), and keeps an index entry per batch (base
// offset, last offset, max timestamp, block and position) that reads and
// time lookups search by binary search.
//
// Immutability. Read returns a zerocopy.BytesSlice over a block's bytes
// without copying. Those bytes are never written again: appends only write
// into the room past the last published batch, and Truncate leaves a
// shortened chunk no room, so the next append takes a new block instead of
// overwriting what a reader may still hold. A read stops at the end of a
// block, as a segment read stops at the end of a segment.
//
// Lifetime. A Store opened with Options.Dir == "" is private and dies with
// its Close. A Store opened with a non-empty Dir creates that directory (it
// holds no files) and keeps its logs in a process-wide table keyed by Dir
// after Close, so Close followed by Open with the same Dir in the same
// process gives the same logs. Nothing survives the process. Entries whose
// directory has been removed (t.TempDir cleanup) are dropped at the next
// Open, so tests do not accumulate memory. Opening a Dir that is already
// open fails with ErrStoreOpen.
package memlog

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/sluice/sluice/engine"
)

// ErrStoreOpen is returned by Open for a Dir whose store is already open.
var ErrStoreOpen = errors.New("memlog: store already open")

func init() { engine.Register("memory", Backend{}) }

// Backend opens memory stores. The zero value is ready to use.
type Backend struct{}

// retained holds the logs of closed stores, keyed by their cleaned Dir.
var (
	retainedMu sync.Mutex
	retained   = map[string]*storeData{}
)

// storeData is what outlives a Store handle: the logs themselves.
type storeData struct {
	open bool // a Store handle is using it; REQUIRES: retainedMu
	logs map[engine.PartitionID]*Log
	hw   map[engine.PartitionID]int64 // saved high watermarks; nil: none
}

// Open opens the store for opts.Dir; see the package doc for what a Dir
// means to a memory store.
func (Backend) Open(opts engine.Options) (engine.Store, error) {
	s := &Store{opts: opts, now: opts.Now}
	if s.now == nil {
		s.now = time.Now
	}
	if opts.Dir == "" {
		s.data = &storeData{open: true, logs: map[engine.PartitionID]*Log{}}
		return s, nil
	}
	dir := filepath.Clean(opts.Dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("memlog: open %s: %w", dir, err)
	}
	retainedMu.Lock()
	defer retainedMu.Unlock()
	for d, sd := range retained {
		if _, err := os.Stat(d); errors.Is(err, os.ErrNotExist) && !sd.open {
			delete(retained, d)
		}
	}
	sd := retained[dir]
	if sd == nil {
		sd = &storeData{logs: map[engine.PartitionID]*Log{}}
		retained[dir] = sd
	}
	if sd.open {
		return nil, fmt.Errorf("%w: %s", ErrStoreOpen, dir)
	}
	sd.open = true
	s.dir = dir
	s.data = sd
	return s, nil
}

// Store is a set of in-memory logs. Safe for concurrent use.
type Store struct {
	opts engine.Options
	now  func() time.Time
	dir  string // cleaned Dir, "" for a private store

	mu     sync.Mutex
	closed bool       // REQUIRES: mu
	data   *storeData // logs and hw; the maps are guarded by mu
}

// CreateLog creates an empty log; engine.ErrLogExists if it exists.
func (s *Store) CreateLog(id engine.PartitionID, cfg engine.LogConfig) (engine.Log, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, engine.ErrClosed
	}
	if _, ok := s.data.logs[id]; ok {
		return nil, fmt.Errorf("%w: %s/%d", engine.ErrLogExists, id.Topic, id.Partition)
	}
	l := newLog(id, cfg, s.now)
	s.data.logs[id] = l
	return l, nil
}

// OpenLog opens an existing log; engine.ErrNoLog if there is none. An open
// log is returned as is; a closed one is reopened with cfg.
func (s *Store) OpenLog(id engine.PartitionID, cfg engine.LogConfig) (engine.Log, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, engine.ErrClosed
	}
	l, ok := s.data.logs[id]
	if !ok {
		return nil, fmt.Errorf("%w: %s/%d", engine.ErrNoLog, id.Topic, id.Partition)
	}
	l.reopen(cfg)
	return l, nil
}

// ListLogs lists the logs in the store, in no particular order.
func (s *Store) ListLogs() ([]engine.PartitionID, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, engine.ErrClosed
	}
	ids := make([]engine.PartitionID, 0, len(s.data.logs))
	for id := range s.data.logs {
		ids = append(ids, id)
	}
	return ids, nil
}

// DeleteLog closes and forgets a log. Slices already handed out stay
// readable: they reference bytes the garbage collector keeps alive.
func (s *Store) DeleteLog(id engine.PartitionID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return engine.ErrClosed
	}
	l, ok := s.data.logs[id]
	if !ok {
		return fmt.Errorf("%w: %s/%d", engine.ErrNoLog, id.Topic, id.Partition)
	}
	delete(s.data.logs, id)
	l.drop()
	return nil
}

// Close closes every log. With a Dir, the logs stay in the process-wide
// table for the next Open of that Dir.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	for _, l := range s.data.logs {
		_ = l.Close() // never fails for a memory log
	}
	if s.dir != "" {
		retainedMu.Lock()
		s.data.open = false
		retainedMu.Unlock()
	}
	return nil
}

// SaveHighWatermarks implements engine.HighWatermarkStore: it keeps a copy
// of hw, which lives as long as the store's logs do (see the package doc).
// Offsets or partitions below 0 are refused.
func (s *Store) SaveHighWatermarks(hw map[engine.PartitionID]int64) error {
	for id, off := range hw {
		if off < 0 || id.Partition < 0 {
			return fmt.Errorf("memlog: high watermark %d for %s/%d: out of range", off, id.Topic, id.Partition)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return engine.ErrClosed
	}
	s.data.hw = maps.Clone(hw)
	return nil
}

// HighWatermarks implements engine.HighWatermarkStore: a copy of the last
// saved set. Memory is never damaged, so it never fails but after Close.
func (s *Store) HighWatermarks() (map[engine.PartitionID]int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, engine.ErrClosed
	}
	hw := maps.Clone(s.data.hw)
	if hw == nil {
		hw = map[engine.PartitionID]int64{}
	}
	return hw, nil
}

// The optional engine capabilities this backend has.
var (
	_ engine.FullTruncater      = (*Log)(nil)
	_ engine.HighWatermarkStore = (*Store)(nil)
)
