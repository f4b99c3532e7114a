package segment

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sync"
	"sync/atomic"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/engine/tailcache"
	"github.com/sluice/sluice/internal/fsutil"
	"github.com/sluice/sluice/mmapindex"
	"github.com/sluice/sluice/record"
	"github.com/sluice/sluice/zerocopy"
)

// segment is one .log file, its two indexes and its aborted-transaction
// index (txnindex.go).
//
// The log's appendMu serializes every writer of a segment; readers hold the
// log's mu (read) and use only size, the indexes' published entries and
// preads below size. Remapping or cutting the indexes and closing the files
// happen under the log's mu (write).
//
// Once managed by the open-segment cache (opencache.go; every segment of
// an open Log is), the handles f, zf, idx and tidx exist only while the
// segment is open: use them only between pin and unpin. txn and the
// fields below them do not depend on the files being open.
type segment struct {
	base int64
	path string         // the .log
	dir  string         // the log's directory, to reopen the indexes
	fs   FS             // opens the .log
	f    File           // the .log, for the segment's own reads and writes
	zf   *zerocopy.File // the segment's own reference on f.OS(); slices take more
	idx  *mmapindex.OffsetIndex
	tidx *mmapindex.TimeIndex
	txn  *txnIndex

	// Open state, for the cache. hmu guards open, dead, pins and
	// indexBytes; cache is set once, before the segment is published.
	hmu        sync.Mutex
	cache      *openCache   // nil: unmanaged, always open
	open       bool         // f, zf, idx and tidx are valid
	dead       bool         // closed or removed for good: pin fails
	pins       int32        // pins held; the cache never closes a pinned segment
	indexBytes int          // index room a reopen maps: the active preallocation, 0 when inactive
	pinned     atomic.Int32 // copy of pins for the evictor's sweep (a hint)
	// Indexes left unmapped by an append (pinAppend, opencache.go):
	// unmapped means open with only the .log (idx and tidx nil); pend
	// holds the index entries appended meanwhile, applied by the next
	// full pin; idxRoom is how many entries the indexes took when last
	// unmapped; lazyIdx says appends happened since they were last
	// mapped (the closing time entry is still to write). REQUIRES: hmu
	unmapped bool
	lazyIdx  bool
	idxRoom  int
	pend     []pendEntry
	// released holds the indexes the cache unmapped untrimmed when it
	// closed the segment (closeHandlesLocked): the next mapping forgets
	// them, the segment's close trims their files. REQUIRES: hmu
	released *releasedIndexes
	// tail holds the offsets and bytes of the last tailN batches
	// appended (a ring: tailAt is the next slot), so that a read at the
	// tail finds its batch, and where its bytes end, without the indexes
	// or a read of the .log (pinRead, endFor). Cut by truncateTo and
	// resetState. REQUIRES: hmu
	tail   [tailN]tailBatch
	tailAt int
	// marks holds the starts of the last marksN batches that got an
	// index entry (one per index.interval.bytes of log; a ring: marksAt
	// is the next slot): a read behind the last tailN batches, as a
	// lagging consumer's is, finds its position, and where its bytes
	// end, within index.interval.bytes without mapping the indexes
	// (pinRead, endFor). Cut with tail. REQUIRES: hmu
	marks   [marksN]batchStart
	marksAt int
	// recent is the copy of the active segment's last bytes that reads
	// at the tail are served from (engine/tailcache); empty when there
	// is none. Kept by the appender, dropped by the writer's side.
	recent tailcache.Tail
	ref    atomic.Bool // CLOCK reference bit, set by pin
	slot   int         // index in cache.ring, -1 when out (clockring.Entry)

	// size is the committed end position: [0, size) holds whole, written
	// batches. The appender stores it after the write returns, before it
	// publishes the log end offset, so a reader that loads the end offset
	// first and size second never sees a partly written batch.
	size atomic.Int64
	// maxTs is the largest batch maxTimestamp in the segment (-1: none);
	// stored by the appender, loaded by readers to skip segments.
	maxTs atomic.Int64
	// gen counts the truncations that cut the segment in place, so that
	// a cleaning that read it before one notices. REQUIRES: the log's
	// mu to read, mu (write) to change.
	gen uint64
	// firstTs caches the first batch's maxTimestamp once the segment is
	// inactive (math.MinInt64: not read yet); see firstBatchTimestamp.
	firstTs atomic.Int64

	// Writer state. REQUIRES: the log's appendMu (or exclusive access
	// while loading).
	next            int64 // offset the next batch gets; base when empty
	maxTsOffset     int64 // last offset of the first batch with maxTs
	bytesSinceIndex int64 // log bytes since the last offset index entry
	rollTs          int64 // ms; segment.ms counts from here
	// reserved is where the blocks reserved ahead of the .log's end end
	// (fsutil.Reserver; 0: none known). The reservation is released, by
	// truncating the file to its size, when the segment rolls, closes or
	// is truncated.
	reserved int64
	// wbFrom is where the next range whose writeback the appender
	// starts begins (writeback.go): the bytes below it have been handed
	// to the kernel. REQUIRES: the log's appendMu.
	wbFrom int64
}

// createSegment creates an empty segment at base, replacing leftover files
// with that name (from a truncated or deleted segment).
func createSegment(fs FS, dir string, base int64, cfg engine.LogConfig, nowMs int64) (*segment, error) {
	for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
		if err := os.Remove(segmentPath(dir, base, suf)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("segment: create %d: %w", base, err)
		}
	}
	s, err := openSegment(fs, dir, base, cfg.IndexMaxBytes)
	if err != nil {
		return nil, err
	}
	s.rollTs = nowMs
	return s, nil
}

// lazySegment returns the empty active segment at base of a log whose
// directory holds no segment files yet (a new log, or one restarted
// empty), managed by cache and closed: its files are created by its first
// pin (the log's first append creates the .log, pinAppend; the indexes
// come with the first full pin: a read, a roll, a flush or the close), so
// a partition that is never written costs a directory and no files,
// descriptors or mappings, and the first append to each of 10,000 new
// partitions creates one file, not three. Creating the
// three files and preallocating the indexes was most of CreateTopics
// (~1 ms of kernel time per partition). REQUIRES: no files of the
// segment exist (an existing .log would be opened, not replaced).
func lazySegment(fs FS, dir string, base int64, cfg engine.LogConfig, nowMs int64, cache *openCache) *segment {
	s := &segment{base: base, path: segmentPath(dir, base, logSuffix), dir: dir, fs: fs,
		txn: &txnIndex{path: segmentPath(dir, base, txnIndexSuffix)}, next: base, maxTsOffset: -1,
		indexBytes: cfg.IndexMaxBytes, slot: -1, cache: cache, rollTs: nowMs,
		idxRoom: indexRoom(cfg.IndexMaxBytes, 0, 0)}
	s.maxTs.Store(-1)
	s.firstTs.Store(math.MinInt64)
	return s
}

// openSegment opens (creating when missing) the files of the segment at
// base, the .log through fs. indexMaxBytes > 0 preallocates the indexes
// (the active segment); 0 maps them as they are. The writer state is left
// for the caller to restore (restoreState or recovery).
func openSegment(fs FS, dir string, base int64, indexMaxBytes int) (*segment, error) {
	return openSegmentAs(fs, dir, base, indexMaxBytes, "")
}

// openSegmentAs is openSegment for files whose names carry suffix after
// the usual one (".cleaned": the cleaner's output being written).
func openSegmentAs(fs FS, dir string, base int64, indexMaxBytes int, suffix string) (*segment, error) {
	path := segmentPath(dir, base, logSuffix) + suffix
	f, err := fs.OpenFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: open %s: %v", engine.ErrCorruptStore, path, err)
	}
	osf := f.OS()
	st, err := f.Stat()
	if err != nil {
		osf.Close()
		return nil, fmt.Errorf("%w: stat %s: %v", engine.ErrCorruptStore, path, err)
	}
	if st.Size() > math.MaxInt32 {
		osf.Close()
		return nil, fmt.Errorf("%w: %s: %d bytes, a segment holds at most 2 GiB", engine.ErrCorruptStore, path, st.Size())
	}
	s := &segment{base: base, path: path, dir: dir, fs: fs, f: f, next: base, maxTsOffset: -1,
		indexBytes: indexMaxBytes, slot: -1}
	s.maxTs.Store(-1)
	s.firstTs.Store(math.MinInt64)
	s.size.Store(st.Size())
	s.idx, err = mmapindex.OpenOffset(segmentPath(dir, base, indexSuffix)+suffix, base, indexMaxBytes)
	if err == nil {
		s.tidx, err = mmapindex.OpenTime(segmentPath(dir, base, timeIndexSuffix)+suffix, base, indexMaxBytes)
		if err != nil {
			s.idx.Close()
		}
	}
	if err == nil {
		if s.txn, _, err = openTxnIndex(segmentPath(dir, base, txnIndexSuffix) + suffix); err != nil {
			s.idx.Close()
			s.tidx.Close()
		}
	}
	if err != nil {
		osf.Close()
		return nil, fmt.Errorf("%w: segment %s: %v", engine.ErrCorruptStore, path, err)
	}
	s.zf = zerocopy.NewFile(osf)
	s.rollTs = st.ModTime().UnixMilli()
	return s, nil
}

// indexBatch updates the writer state and the indexes for batch b, which
// was written at position pos. Entries go in at batch boundaries once
// interval bytes of log have passed since the last one (so position 0 is
// never indexed); the time index gets (largest timestamp so far, its
// offset) at the same points when that timestamp grew (Kafka's
// LogSegment.append). REQUIRES: appendMu.
func (s *segment) indexBatch(b record.Batch, pos int64, interval int64) {
	if ts := b.MaxTimestamp(); ts > s.maxTs.Load() {
		s.maxTs.Store(ts)
		s.maxTsOffset = b.LastOffset()
	}
	if s.bytesSinceIndex >= interval {
		// The indexes are hints: a full index (the segment rolls at
		// the next append) only makes later lookups scan further.
		if !s.appendPending(pendEntry{b.BaseOffset(), pos, s.maxTs.Load(), s.maxTsOffset}) {
			_ = s.idx.Append(b.BaseOffset(), pos)
			_, _ = s.tidx.MaybeAppend(s.maxTs.Load(), s.maxTsOffset)
		}
		s.bytesSinceIndex = 0
		s.noteTail(b, pos, true)
	} else {
		s.noteTail(b, pos, false)
	}
	s.bytesSinceIndex += int64(b.Size())
	s.next = b.NextOffset()
}

// resetState empties the writer state and the indexes, before a rebuild.
func (s *segment) resetState() {
	s.cutTail()
	s.idx.Reset()
	s.tidx.Reset()
	s.next, s.maxTsOffset, s.bytesSinceIndex = s.base, -1, 0
	s.maxTs.Store(-1)
}

// finishIndexes appends the time index entry for the segment's largest
// timestamp (Kafka does so when a segment becomes inactive or closes, so
// that the last entry always holds the segment's largest timestamp).
func (s *segment) finishIndexes() {
	if ts := s.maxTs.Load(); ts >= 0 && s.maxTsOffset >= s.base {
		_, _ = s.tidx.MaybeAppend(ts, s.maxTsOffset)
	}
}

// roll makes the segment inactive: final time entry, indexes trimmed.
// REQUIRES: the log's mu held for writing.
func (s *segment) roll() error {
	s.finishIndexes()
	if err := s.idx.Trim(); err != nil {
		return err
	}
	return s.tidx.Trim()
}

// releaseReserved hands the blocks reserved past the .log's end back to
// the file system (fsutil.ReleaseReserved); a segment that rolls has it
// done in the background (Log.releaseRolled). Failing costs only the
// reserved space, kept until the segment is deleted, so the error is
// dropped. REQUIRES: the writer's side (the log's appendMu, or the
// segment closing unpinned). It goes to the
// operating-system file, not through the FS seam: the seam's injected
// failures are for the writes and truncations that decide what the log
// holds, and this one decides nothing.
func (s *segment) releaseReserved() {
	_ = fsutil.ReleaseReserved(s.f.OS(), s.size.Load())
	s.reserved = 0
}

// flush fsyncs the log and both indexes.
func (s *segment) flush() error {
	if fsyncOff.Load() {
		return nil
	}
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("segment: fsync %s: %w", s.path, err)
	}
	if err := s.idx.Flush(); err != nil {
		return err
	}
	if err := s.txn.sync(); err != nil {
		return err
	}
	return s.tidx.Flush()
}

// close trims the indexes and drops the segment's file reference (the
// file closes once no slice holds it). A managed segment leaves the cache
// for good (pin fails from now on).
func (s *segment) close() error {
	s.recent.Drop()
	if s.cache == nil {
		return s.closeFiles()
	}
	s.hmu.Lock()
	var err error
	if !s.dead {
		s.dead = true
		if s.lazyIdx {
			// Appended with the indexes unmapped: their pending
			// entries and closing time entry go in before the close.
			err = s.mapForCloseLocked()
		}
		if s.open {
			if cerr := s.closeHandlesLocked(false); err == nil {
				err = cerr
			}
		}
		if r := s.released; r != nil {
			s.released = nil
			if cerr := r.close(); err == nil {
				err = cerr
			}
		}
	}
	s.hmu.Unlock()
	s.cache.remove(s)
	return err
}

// closeLogOnly is closeFiles for a segment open with its .log only
// (pinAppend): the reservation released, the .log reference dropped.
func (s *segment) closeLogOnly() error {
	if s.reserved > 0 {
		s.releaseReserved()
	}
	err := s.txn.close()
	if rerr := s.zf.Release(); err == nil && rerr != nil {
		err = fmt.Errorf("segment: close %s: %w", s.path, rerr)
	}
	return err
}

// closeFiles is close for a segment whose files are open.
func (s *segment) closeFiles() error { return s.closeFilesAs(false) }

// closeFilesAs is closeFiles; evict leaves the indexes untrimmed
// (closeHandlesLocked).
func (s *segment) closeFilesAs(evict bool) error {
	if s.reserved > 0 {
		s.releaseReserved()
	}
	s.finishIndexes()
	var err, terr error
	if evict {
		err, terr = s.idx.Release(), s.tidx.Release()
	} else {
		err, terr = s.idx.Close(), s.tidx.Close()
	}
	if err == nil {
		err = terr
	}
	if xerr := s.txn.close(); err == nil {
		err = xerr
	}
	if rerr := s.zf.Release(); err == nil && rerr != nil {
		err = fmt.Errorf("segment: close %s: %w", s.path, rerr)
	}
	return err
}

// remove deletes the segment's files. Slices of it stay readable: the .log
// is unlinked now and closed when the last slice is released.
func (s *segment) remove() error {
	s.recent.Drop()
	if s.cache != nil {
		s.hmu.Lock()
		wasOpen := s.open && !s.dead
		logOnly := s.unmapped
		s.dead, s.open, s.unmapped, s.pend = true, false, false, nil
		s.released.forget()
		s.released = nil
		s.hmu.Unlock()
		s.cache.remove(s)
		if !wasOpen {
			return s.removeClosed()
		}
		if logOnly {
			err := s.removeClosed()
			if rerr := s.zf.Release(); err == nil && rerr != nil {
				err = fmt.Errorf("segment: remove %s: %w", s.path, rerr)
			}
			return err
		}
	}
	err := os.Remove(s.path)
	if ierr := s.idx.Remove(); err == nil {
		err = ierr
	}
	if terr := s.tidx.Remove(); err == nil {
		err = terr
	}
	if xerr := s.txn.remove(); err == nil {
		err = xerr
	}
	if rerr := s.zf.Release(); err == nil && rerr != nil {
		err = rerr
	}
	if err != nil {
		return fmt.Errorf("segment: remove %s: %w", s.path, err)
	}
	return nil
}

// removeClosed deletes the files of a segment whose files the cache
// closed.
func (s *segment) removeClosed() error {
	var err error
	for _, p := range []string{s.path, segmentPath(s.dir, s.base, indexSuffix), segmentPath(s.dir, s.base, timeIndexSuffix)} {
		if rerr := os.Remove(p); rerr != nil && !errors.Is(rerr, os.ErrNotExist) && err == nil {
			err = rerr
		}
	}
	if xerr := s.txn.remove(); err == nil {
		err = xerr
	}
	if err != nil {
		return fmt.Errorf("segment: remove %s: %w", s.path, err)
	}
	return nil
}

// truncateTo cuts the segment at position pos, where the batch holding
// offset next begins (or the first after it, with gaps). REQUIRES: the
// log's mu held for writing.
func (s *segment) truncateTo(pos, next int64, gaps bool) error {
	if err := s.f.Truncate(pos); err != nil {
		return fmt.Errorf("segment: truncate %s to %d: %w", s.path, pos, err)
	}
	s.reserved = 0 // the truncation released the blocks past pos
	s.wbFrom = min(s.wbFrom, pos&^(pageSize-1))
	s.size.Store(pos)
	s.gen++
	s.firstTs.Store(math.MinInt64)
	s.cutTail()
	s.idx.TruncateTo(next)
	s.tidx.TruncateTo(next)
	if err := s.txn.truncateTo(next); err != nil {
		return err
	}
	return s.restoreState(0, gaps)
}

// header reads the first len(buf) bytes of the batch header at pos, which
// must lie below limit along with the whole batch, and returns the batch
// size. The error says what is wrong with the bytes at pos.
func (s *segment) header(buf []byte, pos, limit int64) (int64, error) {
	if limit-pos < int64(len(buf)) {
		return 0, fmt.Errorf("%d bytes left at position %d, a header needs %d", limit-pos, pos, len(buf))
	}
	if _, err := s.f.ReadAt(buf, pos); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, fmt.Errorf("read %s at %d: %w", s.path, pos, err)
	}
	size, _ := record.PeekSize(buf)
	if size < record.HeaderSize || int64(size) > limit-pos {
		return 0, fmt.Errorf("batch of %d bytes at position %d does not fit the %d bytes left", size, pos, limit-pos)
	}
	return int64(size), nil
}

// restoreState recomputes the writer state of a segment whose indexes are
// trusted: it scans the batch headers from the index entry covering the
// time index's last offset to the end of the file, checking that they
// chain exactly to the file's end and agree with the index. With strict
// (a segment being loaded), indexes that lack entries the writer would
// have made (a deleted or zeroed index file) fail too; pass interval 0
// otherwise. An error means the segment must be recovered.
//
// gaps allows offsets to skip (a compacted log, see Log.gaps); otherwise
// each batch must start where the one before ended.
func (s *segment) restoreState(interval int64, gaps bool) error {
	s.next, s.maxTsOffset, s.bytesSinceIndex = s.base, -1, 0
	s.maxTs.Store(-1)
	size := s.size.Load()
	from, lastEntryPos := int64(0), int64(0)
	if n := s.idx.Entries(); n > 0 {
		_, lastEntryPos = s.idx.Entry(n - 1)
		from = lastEntryPos
	}
	if ts, off, ok := s.tidx.Last(); ok {
		s.maxTs.Store(ts)
		s.maxTsOffset = off
		if _, p, ok := s.idx.Lookup(off); ok && p < from {
			from = p
		} else if !ok {
			from = 0
		}
	}
	var hdr [record.HeaderSize]byte
	pos := from
	for pos < size {
		n, err := s.header(hdr[:], pos, size)
		if err != nil {
			return err
		}
		b := record.Batch(hdr[:])
		if pos == 0 && !engine.ContinuesLog(b.BaseOffset(), s.base, gaps) {
			return fmt.Errorf("first batch has offset %d, segment base is %d", b.BaseOffset(), s.base)
		}
		if pos > from && !engine.ContinuesLog(b.BaseOffset(), s.next, gaps) {
			return fmt.Errorf("batch at %d has offset %d, expected %d", pos, b.BaseOffset(), s.next)
		}
		if n := s.idx.Entries(); n > 0 {
			if o, p := s.idx.Entry(n - 1); p == pos && o != b.BaseOffset() {
				return fmt.Errorf("index entry (%d, %d) but the batch there has offset %d", o, p, b.BaseOffset())
			}
		}
		if ts := b.MaxTimestamp(); ts > s.maxTs.Load() {
			s.maxTs.Store(ts)
			s.maxTsOffset = b.LastOffset()
		}
		if pos >= lastEntryPos {
			s.bytesSinceIndex += n
		}
		if interval > 0 && s.idx.Entries() == 0 && pos >= interval {
			return fmt.Errorf("offset index has no entries, the batch at %d should have one", pos)
		}
		s.next = b.NextOffset()
		pos += n
	}
	if interval > 0 && s.tidx.Entries() == 0 && s.maxTs.Load() >= 0 {
		return fmt.Errorf("time index has no entries, timestamps go up to %d", s.maxTs.Load())
	}
	if s.next == s.base && size > 0 {
		// The scan started past the last batch: only possible with a
		// damaged index.
		return fmt.Errorf("no batch found scanning from %d of %d", from, size)
	}
	return nil
}

// retentionTime is what time-based retention compares with retention.ms:
// the segment's largest record timestamp, or, when no batch carries one
// (all timestamps -1), the .log file's modification time, as Kafka's
// LogSegment.largestTimestamp falls back to lastModified.
func (s *segment) retentionTime() int64 {
	if ts := s.maxTs.Load(); ts >= 0 {
		return ts
	}
	st, err := os.Stat(s.path) // by name: the file may be closed (opencache.go)
	if err != nil {
		return -1 // cannot tell: treat as old, as before
	}
	return st.ModTime().UnixMilli()
}
