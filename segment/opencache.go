package segment

import (
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/internal/clockring"
	"github.com/sluice/sluice/mmapindex"
	"github.com/sluice/sluice/zerocopy"
)

// DefaultOpenSegmentsMax is the default of log.segment.open.files.max: how
// many segments of a Store (a broker has one) may have their files open and their
// indexes mapped at once. Each open segment holds 3 descriptors (.log,
// .index, .timeindex; a .txnindex only while it is written) and 2
// mappings, so 1,000 segments are about 3,000 descriptors and 2,000
// mappings, well inside `ulimit -n` 20000 and vm.max_map_count 65530
// whatever the number of partitions.
const DefaultOpenSegmentsMax = engine.DefaultOpenFilesMax

// openSegmentsMax is the bound of a Store opened without
// engine.Options.OpenSegmentsMax; tests lower it (setOpenSegmentsMax). One
// cache per Store, not one per process: a test that simulates a crash
// abandons a Store and opens another on the same files, and the abandoned
// one must never touch them again, as a dead process would not.
var openSegmentsMax atomic.Int64

func init() { openSegmentsMax.Store(DefaultOpenSegmentsMax) }

// setOpenSegmentsMax sets the default bound for the Stores opened from now
// on (tests); n < 1 means 1.
func setOpenSegmentsMax(n int) { openSegmentsMax.Store(int64(max(n, 1))) }

// defaultOpenSegmentsMax returns the bound of a Store opened without one.
func defaultOpenSegmentsMax() int { return int(openSegmentsMax.Load()) }

// OpenSegments returns how many of the store's segments have their files
// open now, and how many were reopened and evicted since it opened.
func (s *Store) OpenSegments() (open int, reopens, evictions int64) {
	c := s.cache
	return c.ring.Len(), c.reopens.Load(), c.evictions.Load()
}

// openCache bounds the segments whose files are open. Every segment of an
// open Log is managed by it, the active segment included, so that 20,000
// mostly idle partitions do not hold 20,000 descriptors: a segment whose
// files are closed reopens them (and remaps its indexes) on the next pin.
//
// Replacement is CLOCK (internal/clockring): pin sets the segment's ref
// bit; the sweep skips a segment whose bit was set (clearing it) or that
// somebody pins, and evicts the first other. A pinned segment is never
// closed, so the bound can be exceeded by the segments pinned at one time
// (one per reader or appender in flight).
//
// Locking: the ring's lock guards every managed segment's slot. A
// segment's hmu is never taken while holding it (the evictor takes a
// victim out of the ring, then takes the victim's hmu).
type openCache struct {
	ring *clockring.Ring[*segment]

	log *slog.Logger

	reopens   atomic.Int64
	evictions atomic.Int64
}

func newOpenCache(max int, log *slog.Logger) *openCache {
	return &openCache{ring: clockring.New[*segment](max), log: log}
}

// ClockSlot implements clockring.Entry.
func (s *segment) ClockSlot() *int { return &s.slot }

// ClockSkip implements clockring.Entry: used since the sweep last looked,
// or pinned.
func (s *segment) ClockSkip() bool { return s.ref.Swap(false) || s.pinned.Load() > 0 }

// add puts s, just opened, in the ring, then evicts while over the bound.
func (c *openCache) add(s *segment) {
	if c.ring.Add(s) {
		c.evict()
	}
}

// remove takes s out of the ring, if it is there.
func (c *openCache) remove(s *segment) { c.ring.Remove(s) }

// evict closes unpinned segments, least recently used first (CLOCK),
// until the ring is within the bound or every segment left is pinned.
func (c *openCache) evict() {
	for {
		v, ok := c.ring.Victim()
		if !ok {
			return
		}
		v.hmu.Lock()
		if v.pins > 0 {
			// Pinned since the sweep looked: it stays open.
			v.hmu.Unlock()
			c.add(v)
			continue
		}
		if v.open {
			if err := v.closeHandlesLocked(); err != nil {
				// The indexes are hints and the .log's bytes were
				// written (write(2) returned): nothing acknowledged is
				// lost, and the next fsync of the file reports any
				// writeback error.
				c.log.Warn("segment: closing an evicted segment", "file", v.path, "err", err)
			}
			c.evictions.Add(1)
		}
		v.hmu.Unlock()
	}
}

// manage hands s, whose files are open, to the cache. From now on its
// handles (f, zf, idx, tidx) may be used only while pinned.
func (s *segment) manage(c *openCache) {
	s.hmu.Lock()
	if s.cache != nil || s.dead {
		s.hmu.Unlock()
		return
	}
	s.cache = c
	s.open = true
	s.ref.Store(true)
	s.hmu.Unlock()
	c.add(s)
}

// pin makes sure the segment's files are open and its indexes mapped, and
// keeps them so until unpin: reopening a segment the cache closed. An
// unmanaged segment (being loaded, or a cleaner's output) is always open.
// The error (a failed open or mmap) leaves the segment closed and unpinned.
func (s *segment) pin() error {
	if s.cache == nil {
		return nil
	}
	s.hmu.Lock()
	if s.dead {
		s.hmu.Unlock()
		return errClosedLog
	}
	reopened := false
	if !s.open {
		if err := s.openHandlesLocked(); err != nil {
			s.hmu.Unlock()
			return err
		}
		s.open, reopened = true, true
	}
	s.pins++
	s.pinned.Store(s.pins)
	s.ref.Store(true)
	s.hmu.Unlock()
	if reopened {
		s.cache.reopens.Add(1)
		s.cache.add(s)
	}
	return nil
}

// unpin releases a pin taken by pin.
func (s *segment) unpin() {
	if s.cache == nil {
		return
	}
	s.hmu.Lock()
	s.pins--
	s.pinned.Store(s.pins)
	s.hmu.Unlock()
}

// setIndexBytes records the index room a reopen maps: the active
// segment's preallocation, or 0 (the file as it is) for an inactive one.
func (s *segment) setIndexBytes(n int) {
	s.hmu.Lock()
	s.indexBytes = n
	s.hmu.Unlock()
}

// openHandlesLocked reopens the .log and maps the indexes. The segment's
// size and writer state stay what they were: they are the truth, and the
// files hold what was written. REQUIRES: s.hmu held, !s.open.
func (s *segment) openHandlesLocked() error {
	f, err := s.fs.OpenFile(s.path)
	if err != nil {
		return fmt.Errorf("segment: reopen %s: %w", s.path, err)
	}
	idx, err := mmapindex.OpenOffset(segmentPath(s.dir, s.base, indexSuffix), s.base, s.indexBytes)
	if err != nil {
		f.OS().Close()
		return fmt.Errorf("segment: reopen %s: %w", s.path, err)
	}
	tidx, err := mmapindex.OpenTime(segmentPath(s.dir, s.base, timeIndexSuffix), s.base, s.indexBytes)
	if err != nil {
		idx.Close()
		f.OS().Close()
		return fmt.Errorf("segment: reopen %s: %w", s.path, err)
	}
	s.f, s.zf, s.idx, s.tidx = f, zerocopy.NewFile(f.OS()), idx, tidx
	return nil
}

// closeHandlesLocked does what close does to the files (final time index
// entry, indexes trimmed and unmapped, descriptors dropped; slices keep
// the .log open), keeping the writer state and the aborted-transaction
// entries in memory for the next pin. REQUIRES: s.hmu held, s.open, no
// pins.
func (s *segment) closeHandlesLocked() error {
	err := s.closeFiles()
	s.f, s.zf, s.idx, s.tidx = nil, nil, nil, nil
	s.open = false
	return err
}
