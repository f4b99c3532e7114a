package segment

import (
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/internal/clockring"
	"github.com/sluice/sluice/mmapindex"
	"github.com/sluice/sluice/record"
	"github.com/sluice/sluice/zerocopy"
)

// DefaultOpenSegmentsMax is how many segments of a Store opened without
// engine.Options.OpenSegmentsMax may have their files open and their
// indexes mapped at once (the broker passes log.segment.open.files.max, by
// default sized from its limits: broker/limits.go). Each open segment
// holds 1 descriptor, its .log (the index files are closed once mapped,
// as Kafka's are; a .txnindex is open only while it is written), and 2
// mappings, so 1,000 segments are about 1,000 descriptors and 2,000
// mappings whatever the number of partitions.
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

// TailCache returns how many reads the tail cache served
// (engine/tailcache), how many reads of an active segment it held bytes
// for but not the ones asked for, and how many bytes its buffers hold now.
func (s *Store) TailCache() (hits, misses, held int64) { return s.tails.Stats() }

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
	indexMaps atomic.Int64 // index pairs mapped by reopens (tests)
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
			if err := v.closeHandlesLocked(true); err != nil {
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
	} else if s.unmapped {
		if err := s.mapIndexesLocked(); err != nil {
			s.hmu.Unlock()
			return err
		}
	}
	s.pinnedLocked(reopened)
	return nil
}

// pinnedLocked counts a pin taken under s.hmu, unlocks it, and hands a
// segment that was reopened for it to the cache. REQUIRES: s.hmu held.
func (s *segment) pinnedLocked(reopened bool) {
	s.pins++
	s.pinned.Store(s.pins)
	s.ref.Store(true)
	s.hmu.Unlock()
	if reopened {
		s.cache.reopens.Add(1)
		s.cache.add(s)
	}
}

// pendMax is how many index entries an appender keeps pending with the
// indexes unmapped before its next pin maps them (pinAppend): 16 entries
// of 32 bytes per partition, one mapping per 64 KiB appended at the
// default index.interval.bytes.
const pendMax = 16

// pendEntry is one offset index entry (offset, pos) and the time index
// entry offered with it (ts, tsOffset), made while the indexes were not
// mapped.
type pendEntry struct{ offset, pos, ts, tsOffset int64 }

// pinAppend is pin for the appender of the active segment: it needs only
// the .log open. A segment the cache closed reopens only its .log (one
// open instead of three, and no index mmap, ftruncate and munmap on the
// reopen and the next eviction), and the index entries of the appends
// wait in pend until a full pin (a reader, a roll, a flush, the close)
// maps the indexes, or until pendMax of them are pending. With more
// active partitions than log.segment.open.files.max every append reopens
// its segment: the full reopen and eviction were 13x the cost of an
// append to an open segment (BenchmarkAppendManyPartitions). The indexes
// are hints rebuilt after a crash, so entries pending at a crash cost only
// that rebuild.
//
// After pinAppend, s.f and s.zf are valid; s.idx and s.tidx are valid only
// when the indexes are mapped: use indexBatch and indexesFull. REQUIRES:
// the log's appendMu.
func (s *segment) pinAppend() error {
	if s.cache == nil {
		return nil
	}
	s.hmu.Lock()
	if s.dead {
		s.hmu.Unlock()
		return errClosedLog
	}
	reopened := false
	mapNow := len(s.pend) >= min(pendMax, s.idxRoom)
	switch {
	case !s.open && mapNow:
		if err := s.openHandlesLocked(); err != nil {
			s.hmu.Unlock()
			return err
		}
		s.open, reopened = true, true
	case !s.open:
		if err := s.openLogLocked(); err != nil {
			s.hmu.Unlock()
			return err
		}
		s.open, s.unmapped, s.lazyIdx, reopened = true, true, true, true
	case s.unmapped && mapNow:
		if err := s.mapIndexesLocked(); err != nil {
			s.hmu.Unlock()
			return err
		}
	}
	s.pinnedLocked(reopened)
	return nil
}

// appendPending keeps e pending when the indexes are unmapped and reports
// whether it did; an entry beyond the room the indexes have is dropped,
// as a full index drops it. REQUIRES: the log's appendMu, s pinned.
func (s *segment) appendPending(e pendEntry) bool {
	if s.cache == nil {
		return false
	}
	s.hmu.Lock()
	defer s.hmu.Unlock()
	if !s.unmapped {
		return false
	}
	if len(s.pend) < s.idxRoom {
		s.pend = append(s.pend, e)
	}
	return true
}

// indexesFull reports whether the indexes can take no more entries (the
// segment rolls), pending ones counted. REQUIRES: s pinned.
func (s *segment) indexesFull() bool {
	s.hmu.Lock()
	unmapped, full := s.unmapped, len(s.pend) >= s.idxRoom
	s.hmu.Unlock()
	if unmapped {
		return full
	}
	return s.idx.Full() || s.tidx.Full()
}

// tailN is how many batches a segment remembers for reads at its tail
// (segment.tail).
const tailN = 8

// batchStart is where the batch with base offset base starts in the .log.
type batchStart struct{ base, pos int64 }

// tailBatch is one of the last batches appended to a segment: its offsets
// [base, last] and its bytes [pos, end) in the .log. base is stored +1, so
// that the zero value is no entry.
type tailBatch struct{ base, last, pos, end int64 }

// span is a batch a read found without reading the .log: where it starts
// and its size; size 0 when there is none.
type span struct{ pos, size int64 }

// marksN is how many index-entry batch starts a segment remembers
// (segment.marks): 64 KiB of log behind its tail at the default
// index.interval.bytes, in 256 bytes per segment.
const marksN = 16

// noteTail remembers batch b, appended at pos (the appender, per batch);
// mark says it got an index entry. REQUIRES: the log's appendMu.
func (s *segment) noteTail(b record.Batch, pos int64, mark bool) {
	if s.cache == nil {
		return
	}
	base := b.BaseOffset()
	s.hmu.Lock()
	s.tail[s.tailAt] = tailBatch{base + 1, b.LastOffset(), pos, pos + int64(b.Size())}
	s.tailAt = (s.tailAt + 1) % tailN
	if mark {
		s.marks[s.marksAt] = batchStart{base + 1, pos}
		s.marksAt = (s.marksAt + 1) % marksN
	}
	s.hmu.Unlock()
}

// cutTail forgets the remembered batches (the segment was cut or is
// rebuilt). REQUIRES: the log's mu held for writing, or exclusive access.
func (s *segment) cutTail() {
	s.recent.Drop()
	s.hmu.Lock()
	s.tail, s.tailAt = [tailN]tailBatch{}, 0
	s.marks, s.marksAt = [marksN]batchStart{}, 0
	s.hmu.Unlock()
}

// startAtOrBelowLocked returns the greatest remembered batch start whose
// base offset is at or below offset, or -1; and, when one of the last
// tailN batches holds offset, that batch. REQUIRES: s.hmu held.
func (s *segment) startAtOrBelowLocked(offset int64) (hint int64, holding span) {
	hint, best := int64(-1), int64(-1)
	for _, t := range s.tail {
		if b := t.base - 1; t.base > 0 && b <= offset && b > best {
			best, hint, holding = b, t.pos, span{}
			if offset <= t.last {
				holding = span{t.pos, t.end - t.pos}
			}
		}
	}
	for _, t := range s.marks {
		if b := t.base - 1; t.base > 0 && b <= offset && b > best {
			best, hint, holding = b, t.pos, span{}
		}
	}
	return hint, holding
}

// boundaryAtOrBelow returns the greatest remembered batch boundary (a
// batch's start, or the end of one of the last tailN batches) in
// (from, limit], for endFor, or from when there is none; last says that
// it is the last boundary at or below limit (it is limit, or one of the
// last tailN batches starts there and ends past limit).
func (s *segment) boundaryAtOrBelow(from, limit int64) (pos int64, last bool) {
	if s.cache == nil {
		return from, from == limit
	}
	s.hmu.Lock()
	defer s.hmu.Unlock()
	pos = from
	for _, t := range s.tail {
		if t.base == 0 {
			continue
		}
		if t.end > pos && t.end <= limit {
			pos = t.end
		} else if t.pos > pos && t.pos <= limit {
			pos = t.pos
		}
	}
	for _, t := range s.marks {
		if t.base > 0 && t.pos > pos && t.pos <= limit {
			pos = t.pos
		}
	}
	if pos == limit {
		return pos, true
	}
	for _, t := range s.tail {
		if t.base > 0 && t.pos == pos && t.end > limit {
			return pos, true
		}
	}
	return pos, false
}

// pinRead is pin for a read at offset. When the segment remembers where a
// batch at or below offset starts (a read at the tail, as a consumer's
// next fetch is, or within marksN index entries of it, as a lagging
// consumer's is), it returns that position as hint and, if the cache
// closed the segment, reopens only the .log: with more active partitions
// than log.segment.open.files.max, every consumer fetch otherwise mapped
// both indexes again. useIdx says whether s.idx and s.tidx may be used
// until unpin (false: they are not mapped; use the hint). hint is -1 when
// there is none; then pinRead is pin. holding is the batch that holds
// offset when it is one of the last tailN appended (a consumer at the
// tail): its position and size, which the read then need not look up in
// the .log (a pread per fetched partition over 10,000 partitions).
func (s *segment) pinRead(offset int64) (hint int64, holding span, useIdx bool, err error) {
	if s.cache == nil {
		return -1, span{}, true, nil
	}
	s.hmu.Lock()
	hint, holding = s.startAtOrBelowLocked(offset)
	if hint < 0 || s.dead {
		s.hmu.Unlock()
		return -1, span{}, true, s.pin()
	}
	reopened := false
	if !s.open {
		if err := s.openLogLocked(); err != nil {
			s.hmu.Unlock()
			return -1, span{}, false, err
		}
		s.open, s.unmapped, reopened = true, true, true
	}
	useIdx = !s.unmapped
	s.pins++
	s.pinned.Store(s.pins)
	s.ref.Store(true)
	s.hmu.Unlock()
	if reopened {
		s.cache.reopens.Add(1)
		s.cache.add(s)
	}
	return hint, holding, useIdx, nil
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
	if err := s.openLogLocked(); err != nil {
		return err
	}
	if err := s.mapIndexesLocked(); err != nil {
		s.f.OS().Close()
		s.f, s.zf = nil, nil
		return err
	}
	return nil
}

// openLogLocked reopens the .log only. REQUIRES: s.hmu held, !s.open.
func (s *segment) openLogLocked() error {
	f, err := s.fs.OpenFile(s.path)
	if err != nil {
		return fmt.Errorf("segment: reopen %s: %w", s.path, err)
	}
	s.f, s.zf = f, zerocopy.NewFile(f.OS())
	return nil
}

// mapIndexesLocked maps the indexes of a segment whose .log is open and
// applies the entries pending (pinAppend). REQUIRES: s.hmu held, the .log
// open, the indexes not mapped.
func (s *segment) mapIndexesLocked() error {
	idx, err := mmapindex.OpenOffset(segmentPath(s.dir, s.base, indexSuffix), s.base, s.indexBytes)
	if err != nil {
		return fmt.Errorf("segment: reopen %s: %w", s.path, err)
	}
	tidx, err := mmapindex.OpenTime(segmentPath(s.dir, s.base, timeIndexSuffix), s.base, s.indexBytes)
	if err != nil {
		idx.Close()
		return fmt.Errorf("segment: reopen %s: %w", s.path, err)
	}
	s.released.forget()
	s.released = nil
	for _, e := range s.pend {
		_ = idx.Append(e.offset, e.pos)
		_, _ = tidx.MaybeAppend(e.ts, e.tsOffset)
	}
	s.idx, s.tidx = idx, tidx
	s.pend, s.unmapped, s.lazyIdx = nil, false, false
	if s.cache != nil {
		s.cache.indexMaps.Add(1)
	}
	return nil
}

// mapForCloseLocked maps the indexes of a segment appended with them
// unmapped, so that its close writes their pending entries and the
// closing time entry. REQUIRES: s.hmu held.
func (s *segment) mapForCloseLocked() error {
	if !s.open {
		if err := s.openHandlesLocked(); err != nil {
			return err
		}
		s.open = true
		return nil
	}
	if s.unmapped {
		return s.mapIndexesLocked()
	}
	return nil
}

// closeHandlesLocked does what close does to the files (final time index
// entry, indexes unmapped, descriptors dropped; slices keep the .log
// open), keeping the writer state and the aborted-transaction entries in
// memory for the next pin. A segment whose indexes are not mapped
// (pinAppend) closes its .log only. evict (the cache closing the segment
// for a while) leaves the indexes' files at the size they were mapped at,
// which is the size the next pin maps again: trimming an active segment's
// preallocated indexes on every eviction only to grow them back on the
// next reopen cost two ftruncates and two opens each way. REQUIRES:
// s.hmu held, s.open, no pins.
func (s *segment) closeHandlesLocked(evict bool) error {
	var err error
	if s.unmapped {
		err = s.closeLogOnly()
	} else {
		s.idxRoom = indexRoom(s.indexBytes, s.idx.Entries(), s.tidx.Entries())
		err = s.closeFilesAs(evict)
		if evict {
			s.released = &releasedIndexes{s.idx, s.tidx}
		}
	}
	s.f, s.zf, s.idx, s.tidx = nil, nil, nil, nil
	s.open, s.unmapped = false, false
	return err
}

// releasedIndexes are a segment's indexes unmapped by an eviction and
// left at their mapped size (closeHandlesLocked).
type releasedIndexes struct {
	idx  *mmapindex.OffsetIndex
	tidx *mmapindex.TimeIndex
}

// forget drops them without touching their files (mapped again, or
// removed); r may be nil.
func (r *releasedIndexes) forget() {
	if r != nil {
		r.idx.Forget()
		r.tidx.Forget()
	}
}

// close trims their files to their entries, as a close of the mapped
// indexes does.
func (r *releasedIndexes) close() error {
	err := r.idx.Close()
	if terr := r.tidx.Close(); err == nil {
		err = terr
	}
	return err
}

// indexRoom is how many more entries both indexes of a segment mapped
// with indexBytes of room take, holding n and tn entries.
func indexRoom(indexBytes, n, tn int) int {
	return max(0, min(indexBytes/mmapindex.OffsetEntrySize-n, indexBytes/mmapindex.TimeEntrySize-tn))
}
