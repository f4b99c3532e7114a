package segment

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/internal/fsutil"
	"github.com/sluice/sluice/record"
)

// ErrNotBatchBoundary is returned by Truncate for an offset inside a batch.
var ErrNotBatchBoundary = errors.New("segment: offset is not at a batch boundary")

var errClosedLog = fmt.Errorf("segment: log closed: %w", engine.ErrClosed)

// Log is one partition: a directory of segments. See engine.Log for the
// contract.
//
// Failure: the first write, fsync, roll, truncation or epoch checkpoint
// that fails makes the log failed, for good: every later Append, Flush,
// Truncate, TruncateFullyAndStartAt, DeleteBefore and ApplyRetention, and
// Close, returns that same error (errors.Is it), even if the disk has
// recovered meanwhile: after a failed fsync the kernel may have dropped the
// dirty pages and marked them clean, so a retry that succeeds proves
// nothing. Reads go on serving what was appended before. The store then
// treats the log as unclean: its next open, in this process or the next,
// recovers it past the recovery point, and Store.Close writes no
// clean-shutdown marker.
//
// Locking: appendMu serializes every writer (Append, Truncate,
// DeleteBefore, ApplyRetention, SetConfig, Close). mu guards segs: readers
// hold it for reading while they look at a segment; a writer takes it for
// writing only to change segs or to remap or cut a segment (roll, delete,
// truncate), never while it writes batches. Lock order: appendMu, then mu,
// then epochMu; a Log never takes the Store's mu while holding any of
// them (it takes the Store's cleanMu, which is innermost).
type Log struct {
	store *Store
	id    engine.PartitionID
	dir   string

	appendMu sync.Mutex
	cfg      engine.SharedLogConfig // normalized; one copy per distinct config. REQUIRES: appendMu
	// unflushed counts records appended since the last flush.messages
	// fsync. REQUIRES: appendMu
	unflushed int64

	mu sync.RWMutex
	// snapMu serializes the producer-state snapshot files (snapshot.go)
	// and the writes of leader-epoch-checkpoint (writeEpochs), which share
	// its .tmp name. Order: appendMu, then mu, then snapMu, then epochMu.
	snapMu sync.Mutex
	segs   []*segment // ascending base, never empty; the last is active
	closed atomic.Bool
	// failed holds the log's sticky failure (see Log), nil until then.
	// Set once, by fail, from the appender or the syncer.
	failed atomic.Pointer[error]

	epochMu sync.Mutex
	epochs  *engine.EpochCache // REQUIRES: epochMu

	start atomic.Int64 // log start offset
	// logStart is Kafka's logStartOffset when it lies below start (a
	// tiered log whose first records are remote; logstart.go), else -1.
	logStart atomic.Int64
	end      atomic.Int64 // log end offset, published after each write

	syncer syncer
	bg     sync.WaitGroup // background flushes started by roll

	// cleaning is set while a cleanWriter is open (one at a time).
	cleaning atomic.Bool
	// newDirs says which directory entries the next flush must fsync
	// (newLogDir, newParentDir): creations since the last flush that
	// made them durable (Kafka's LocalLog.flush fsyncs the log dir when
	// it flushes a new segment); and unsyncedEpochs, the epoch checkpoint
	// an append wrote without fsync.
	newDirs atomic.Uint32
	// managed is set once the log is loaded or created: from then on its
	// segments go through the open-segment cache (opencache.go), and
	// their handles are used only while pinned. REQUIRES: appendMu, or
	// exclusive access while loading.
	managed bool
}

// manage hands the log's new segment s to the open-segment cache, once
// the log is managed (see Log.managed). Call it before publishing s.
func (l *Log) manage(s *segment) {
	if l.managed {
		s.manage(l.store.cache)
	}
}

func (l *Log) active() *segment { return l.segs[len(l.segs)-1] }

// Bits of Log.newDirs.
const (
	newLogDir      = 1 << iota // files created in the log's directory
	newParentDir               // the log's directory itself, in the log dir
	unsyncedEpochs             // leader-epoch-checkpoint written without fsync (writeEpochs)
)

// gaps reports whether the log's offsets may skip: its topic is compacted
// (cleanup.policy has compact), or it was cleaned or copied a cleaned
// leader's gaps as a follower while it was (an entry in
// cleaner-offset-checkpoint records both, so a policy changed to delete
// later keeps them valid). Recovery of any other log insists on dense
// offsets, which catches a damaged baseOffset (the CRC does not cover it).
// REQUIRES: appendMu, or exclusive access while loading.
func (l *Log) gaps() bool { return l.cfg.Get().Compact || l.store.hasCleanerPoint(l.id) }

// fail makes err the log's sticky failure, unless one is already set, and
// returns the failure that is set: the first one wins. The failure is
// marked engine.ErrStorage.
func (l *Log) fail(err error) error {
	if !errors.Is(err, engine.ErrStorage) {
		err = fmt.Errorf("%w: %w", engine.ErrStorage, err)
	}
	if l.failed.CompareAndSwap(nil, &err) {
		l.store.log.Error("segment: log failed: it refuses writes until reopened", "dir", l.dir, "err", err)
		return err
	}
	return *l.failed.Load()
}

// failure returns the log's sticky failure, or nil.
func (l *Log) failure() error {
	if p := l.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// StartOffset implements engine.Log.
func (l *Log) StartOffset() int64 { return l.start.Load() }

// EndOffset implements engine.Log.
func (l *Log) EndOffset() int64 { return l.end.Load() }

// RecoveryPoint is the offset below which every batch is known durable.
func (l *Log) RecoveryPoint() int64 { return l.syncer.point.Load() }

// Size implements engine.Log.
func (l *Log) Size() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var n int64
	for _, s := range l.segs {
		n += s.size.Load()
	}
	return n
}

// LeaderEpochs implements engine.Log.
func (l *Log) LeaderEpochs() []engine.EpochEntry {
	l.epochMu.Lock()
	defer l.epochMu.Unlock()
	return l.epochs.Entries()
}

// Append implements engine.Log.Append: the batches go to the active
// segment with one write (rolling first when they would not fit), then the
// indexes and the epoch cache are updated, then the new end is published.
// It does not allocate in steady state.
func (l *Log) Append(batches []byte, opts engine.AppendOptions) (engine.AppendInfo, error) {
	l.appendMu.Lock()
	info, syncTarget, err := l.appendLocked(batches, opts)
	l.appendMu.Unlock()
	if err == nil && syncTarget > 0 {
		err = l.syncTo(syncTarget)
	}
	return info, err
}

// appendLocked does Append's work and returns the offset to fsync up to
// when flush.messages asks for it (0: none). REQUIRES: appendMu.
func (l *Log) appendLocked(batches []byte, opts engine.AppendOptions) (engine.AppendInfo, int64, error) {
	if l.closed.Load() {
		return engine.AppendInfo{}, 0, errClosedLog
	}
	if err := l.failure(); err != nil {
		return engine.AppendInfo{}, 0, err
	}
	next := l.end.Load()
	cfg := l.cfg.Get()
	info, err := engine.PrepareAppend(batches, next, opts, cfg.MaxBatchBytes)
	if err != nil {
		return info, 0, err
	}
	if !opts.AssignOffsets && !l.gaps() && hasGap(batches, next) {
		// A follower copying a cleaned leader: record that this log
		// has gaps before it does, so recovery accepts them.
		if err := l.store.markGaps(l.id); err != nil {
			return info, 0, err
		}
	}
	s, err := l.pinActive(int64(len(batches)), info.LastOffset)
	if err != nil {
		return info, 0, err
	}
	defer s.unpin()
	pos := s.size.Load()
	s.reserved = l.store.reserve.Reserve(s.f.OS(), pos, int64(len(batches)), s.reserved, int64(cfg.SegmentBytes))
	if n, err := fsutil.WriteAt(s.f, batches, pos); err != nil {
		// Take back what may have reached the file; the log stays
		// failed either way, and recovery cuts what the truncation
		// could not.
		err = fmt.Errorf("segment: write %s at %d (%d of %d bytes): %w", s.path, pos, n, len(batches), err)
		if terr := s.f.Truncate(pos); terr != nil {
			err = fmt.Errorf("%w (and truncating back: %v)", err, terr)
		}
		return info, 0, l.fail(err)
	}
	interval := int64(cfg.IndexIntervalBytes)
	epochChanged := false
	l.epochMu.Lock()
	for p := 0; p < len(batches); {
		b := record.Batch(batches[p:])
		s.indexBatch(b, pos+int64(p), interval)
		if l.epochs.Assign(b.LeaderEpoch(), b.BaseOffset()) {
			epochChanged = true
		}
		p += b.Size()
	}
	l.epochMu.Unlock()
	if epochChanged {
		// Before the end moves: a flush that covers the batch then
		// finds the checkpoint to write (fsyncUnflushed).
		l.newDirs.Or(unsyncedEpochs)
	}
	s.recent.Keep(&l.store.tails, batches, pos) // before the size: see Tail.Slice
	s.size.Store(pos + int64(len(batches)))
	s.wbFrom = l.store.wb.maybeStart(s.zf, s.wbFrom, pos+int64(len(batches)))
	l.end.Store(info.LastOffset + 1)
	if cfg.FlushMessages > 0 {
		l.unflushed += info.Records
		if l.unflushed >= cfg.FlushMessages {
			l.unflushed = 0
			return info, info.LastOffset + 1, nil
		}
	}
	return info, 0, nil
}

// hasGap reports whether batches (validated) skip offsets, starting from
// next.
func hasGap(batches []byte, next int64) bool {
	for p := 0; p < len(batches); {
		b := record.Batch(batches[p:])
		if b.BaseOffset() != next {
			return true
		}
		next = b.NextOffset()
		p += b.Size()
	}
	return false
}

// writeEpochs writes the epoch cache to leader-epoch-checkpoint: durably
// (fsync of the file and the directory) when durable, else only renamed
// into place, with the unsyncedEpochs bit of newDirs set for the next
// flush.
//
// An append that starts a new leader epoch does not write it: it sets the
// unsyncedEpochs bit. The batch that started the epoch lies above the
// recovery point until a flush covers it, and recovery assigns the epochs
// of every batch it validates there (recoverSegment), so a crash before
// that flush loses nothing; fsyncUnflushed writes the file durably before
// it moves the recovery point past that batch, and closeLog writes it for
// a clean stop. Written with two fsyncs on the append, the first append of
// each of 10,000 new partitions waited for 20,000 fsyncs in the produce
// path (issue 33; Kafka took the same fsync off its append path in
// KAFKA-15046). Truncations of the end and recovery write it durably at
// once: they remove entries that the log no longer backs. Retention's cut
// of the start does not (deleteSegmentsLocked): the entries it removes
// lie below the start, where loading cuts them again.
func (l *Log) writeEpochs(durable bool) error {
	l.snapMu.Lock()
	defer l.snapMu.Unlock()
	l.epochMu.Lock()
	entries := l.epochs.Entries()
	l.epochMu.Unlock()
	path := filepath.Join(l.dir, leaderEpochFile)
	if !durable {
		l.newDirs.Or(unsyncedEpochs)
		return writeFileRenamed(path, appendEpochCheckpoint(nil, entries))
	}
	return writeEpochCheckpoint(path, entries)
}

// pinActive returns the active segment, pinned (the caller unpins it),
// after rolling when the next append of n bytes ending at lastOffset
// would not fit the active one (segment.bytes), when the active one is
// older than segment.ms, or when its indexes are full or lastOffset is
// beyond a relative offset's reach. An empty segment never rolls. A
// segment that cannot be reopened is an error that does not fail the
// log: nothing was written. REQUIRES: appendMu.
func (l *Log) pinActive(n, lastOffset int64) (*segment, error) {
	s := l.active()
	if err := s.pinAppend(); err != nil {
		return nil, fmt.Errorf("%w: %w", engine.ErrStorage, err)
	}
	size := s.size.Load()
	if size == 0 {
		return s, nil
	}
	nowMs := l.store.now().UnixMilli()
	if cfg := l.cfg.Get(); size+n <= cfg.SegmentBytes && nowMs-s.rollTs < cfg.RollAge().Milliseconds() &&
		!s.indexesFull() && lastOffset-s.base <= math.MaxInt32 {
		return s, nil
	}
	// Still pinned through the roll: roll pins it again, which cannot
	// fail while it is open.
	err := l.roll(nowMs)
	s.unpin()
	if err != nil {
		return nil, err
	}
	s = l.active()
	if err := s.pin(); err != nil {
		return nil, fmt.Errorf("%w: %w", engine.ErrStorage, err)
	}
	return s, nil
}

// roll makes a new active segment at the log end offset and flushes the
// old ones in the background (the store's rollFlusher), as Kafka does, so
// the recovery point moves up without an fsync on the append path.
// REQUIRES: appendMu.
func (l *Log) roll(nowMs int64) error {
	base := l.end.Load()
	ns, err := createSegment(l.store.fs, l.dir, base, l.cfg.Get(), nowMs)
	if err != nil {
		return l.fail(err)
	}
	l.newDirs.Or(newLogDir)
	old := l.active()
	if err := old.pin(); err != nil {
		ns.close()
		return l.fail(err)
	}
	l.manage(ns)
	// The blocks reserved past its end go back in the background, after
	// its flush (releaseRolled): ftruncate(2) waits for the writeback of
	// the file's last page, and in the append path it held the produce
	// request for 1-150 ms at each roll (issue 33: 47 of them over 1 ms,
	// 309 ms in all, in one wave of 100 rolls).
	old.reserved = 0
	l.mu.Lock()
	err = old.roll()
	old.setIndexBytes(0)
	l.segs = append(l.segs, ns)
	l.mu.Unlock()
	old.recent.Drop() // a reader behind the roll reads the file
	old.unpin()
	if err != nil {
		return l.fail(err)
	}
	l.bg.Add(1)
	work := func() {
		defer l.bg.Done()
		if err := l.syncTo(base); err != nil && !errors.Is(err, engine.ErrClosed) {
			l.store.log.Error("segment: flush after roll failed", "dir", l.dir, "err", err)
		}
		l.releaseRolled(old)
	}
	l.store.rolls.add(work)
	return nil
}

// releaseRolled hands back the blocks reserved past the end of s, a
// segment a roll made inactive, off the append path and after its flush
// (its pages clean, the truncation has no writeback to wait for). It
// releases even when nothing was reserved in this run, as a crashed run
// may have left a reservation.
//
// The log's mu (read) keeps s from becoming active again meanwhile: a
// truncation into s, after which appends would write past the size
// loaded here, needs it for writing (and so does the log's next roll,
// which waits for the truncation here). So an s that is the active
// segment again, or deleted, is left alone (the truncation cut the file
// itself).
func (l *Log) releaseRolled(s *segment) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if len(l.segs) == 0 || l.active() == s || s.pin() != nil {
		return
	}
	_ = fsutil.ReleaseReserved(s.f.OS(), s.size.Load())
	s.unpin()
}

// Flush implements engine.Log. On a failed log it returns the failure.
func (l *Log) Flush() error {
	if l.closed.Load() {
		return errClosedLog
	}
	return l.syncTo(l.end.Load())
}

// SetConfig implements engine.Log. New sizes apply from the next append
// or retention pass.
func (l *Log) SetConfig(cfg engine.LogConfig) error {
	l.appendMu.Lock()
	if l.closed.Load() {
		l.appendMu.Unlock()
		return errClosedLog
	}
	l.cfg = engine.ShareLogConfig(normalize(cfg))
	moved := l.untierLogStartLocked() // logstart.go
	l.appendMu.Unlock()
	if moved {
		return l.store.checkpointStartOffsets()
	}
	return nil
}

// normalize fills defaults and clamps segment.bytes to what 32-bit index
// positions can address.
func normalize(cfg engine.LogConfig) engine.LogConfig {
	cfg = cfg.WithDefaults()
	if cfg.SegmentBytes > math.MaxInt32 {
		cfg.SegmentBytes = math.MaxInt32
	}
	return cfg
}

// Truncate implements engine.Log.Truncate. An offset below the log start
// (or at the first segment's base) empties the log and restarts it at
// offset, as TruncateFullyAndStartAt does.
func (l *Log) Truncate(offset int64) error {
	l.appendMu.Lock()
	cut := offset < l.end.Load()
	restarted, err := l.truncateLocked(offset)
	l.appendMu.Unlock()
	if err == nil && restarted {
		// The start may have moved down: without the checkpoint, a
		// crash would bring back the old start, above the new end.
		err = l.store.checkpointStartOffsets()
	}
	if err == nil && cut {
		// The recovery point moved down: a checkpoint still holding
		// the old one (written periodically) would let recovery trust
		// offsets rewritten since and not yet fsynced (Kafka
		// checkpoints after truncateTo too).
		err = l.store.checkpointRecoveryPoints()
	}
	return err
}

// truncateLocked does Truncate's work and reports whether it restarted the
// log. REQUIRES: appendMu.
func (l *Log) truncateLocked(offset int64) (restarted bool, err error) {
	if l.closed.Load() {
		return false, errClosedLog
	}
	if err := l.failure(); err != nil {
		return false, err
	}
	if offset >= l.end.Load() {
		return false, nil
	}
	if offset < 0 {
		return false, fmt.Errorf("%w: truncate to %d", engine.ErrOffsetOutOfRange, offset)
	}
	if offset < l.start.Load() || offset == l.segs[0].base {
		return true, l.truncateFullyLocked(offset)
	}
	l.mu.RLock()
	i := l.segmentFor(offset)
	s := l.segs[i]
	if err := s.pin(); err != nil {
		l.mu.RUnlock()
		return false, fmt.Errorf("%w: %w", engine.ErrStorage, err)
	}
	defer s.unpin()
	var pos int64
	var ok bool
	pos, _, ok, err = s.findBatch(offset, s.size.Load(), -1, true)
	if err == nil && !ok {
		// offset is past the segment's last batch (a gap that cleaning
		// left at its end): cut after it.
		pos, ok = s.size.Load(), true
	} else if err == nil {
		// The batch found must start at or after offset: cutting inside
		// a batch is refused. Past it means offset is in a gap.
		var hdr [headerPeekSize]byte
		if _, err = s.header(hdr[:], pos, s.size.Load()); err == nil && record.Batch(hdr[:]).BaseOffset() < offset {
			ok = false
		}
	}
	l.mu.RUnlock()
	if err != nil {
		return false, err
	}
	if !ok {
		return false, fmt.Errorf("%w: %w: %d in %s", engine.ErrOffsetOutOfRange, ErrNotBatchBoundary, offset, s.path)
	}
	l.mu.Lock()
	dropped := l.segs[i+1:]
	l.segs = l.segs[:i+1]
	wasActive := len(dropped) == 0
	err = s.truncateTo(pos, offset, l.gaps())
	if err == nil && !wasActive {
		s.setIndexBytes(l.cfg.Get().IndexMaxBytes)
		if err = s.idx.Resize(l.cfg.Get().IndexMaxBytes); err == nil {
			err = s.tidx.Resize(l.cfg.Get().IndexMaxBytes)
		}
	}
	l.end.Store(offset)
	l.mu.Unlock()
	for _, d := range dropped {
		if rerr := d.remove(); err == nil {
			err = rerr
		}
	}
	l.lowerRecoveryPoint(offset)
	if err == nil {
		err = l.cutEpochs(func(c *engine.EpochCache) bool { return c.TruncateFromEnd(offset) }, true)
	}
	if err == nil {
		err = l.store.lowerCleanerPoint(l.id, offset)
	}
	if err != nil {
		return false, l.fail(err)
	}
	return false, nil
}

// TruncateFullyAndStartAt implements engine.FullTruncater (Kafka's
// UnifiedLog.truncateFullyAndStartAt): every segment is deleted and the log
// restarts with one empty segment named by offset, which may lie anywhere
// at or above 0; the leader epoch history is cleared and the log start
// offset checkpointed. See restartAtLocked for what a crash midway leaves.
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	l.appendMu.Lock()
	err := l.truncateFullyLocked(offset)
	l.appendMu.Unlock()
	if err != nil {
		return err
	}
	if err := l.store.checkpointStartOffsets(); err != nil {
		return err
	}
	// The recovery point moved (see Truncate).
	return l.store.checkpointRecoveryPoints()
}

// truncateFullyLocked checks the log and offset and restarts the log at
// offset. REQUIRES: appendMu.
func (l *Log) truncateFullyLocked(offset int64) error {
	if l.closed.Load() {
		return errClosedLog
	}
	if err := l.failure(); err != nil {
		return err
	}
	if offset < 0 {
		return fmt.Errorf("%w: restart %s at %d", engine.ErrOffsetOutOfRange, l.dir, offset)
	}
	if err := l.restartAtLocked(offset); err != nil {
		return l.fail(err)
	}
	return nil
}

// restartAtLocked deletes every segment and starts the log empty at
// offset, with no epoch history. The order makes every crash point
// recover to a valid log: the new segment is created first (recovery
// drops it while older segments remain that do not end at its base), the
// old ones are removed newest first (so what remains is the old log with
// its tail cut), the directory is fsynced, and the epoch checkpoint is
// rewritten last (if a crash loses that, loadLog cuts the stale history to
// the new start and end). The caller checkpoints the start offset.
// REQUIRES: appendMu.
func (l *Log) restartAtLocked(offset int64) error {
	ns, err := createSegment(l.store.fs, l.dir, offset, l.cfg.Get(), l.store.now().UnixMilli())
	if err != nil {
		return err
	}
	l.manage(ns)
	l.mu.Lock()
	old := l.segs
	l.segs = []*segment{ns}
	l.start.Store(offset)
	engine.StartMoved()
	l.logStart.Store(-1)
	l.end.Store(offset)
	l.mu.Unlock()
	for i := len(old) - 1; i >= 0; i-- {
		s := old[i]
		rm := s.remove
		if s.base == offset {
			// createSegment already unlinked its files: only let go
			// of the handles.
			rm = s.close
		}
		if rerr := rm(); err == nil {
			err = rerr
		}
	}
	if rerr := l.removeSnapshots(func(int64) bool { return true }); err == nil {
		err = rerr
	}
	l.resetRecoveryPoint(offset)
	if err == nil {
		if err = syncDir(l.dir); err != nil {
			err = fmt.Errorf("segment: fsync %s: %w", l.dir, err)
		}
	}
	if err == nil {
		err = l.cutEpochs(func(c *engine.EpochCache) bool { return c.TruncateFromEnd(math.MinInt64) }, true)
	}
	if err == nil {
		err = l.store.lowerCleanerPoint(l.id, offset)
	}
	return err
}

// cutEpochs applies cut to the epoch cache and persists it if it changed:
// durably, or renamed into place with the next flush making it durable
// (writeEpochs).
func (l *Log) cutEpochs(cut func(*engine.EpochCache) bool, durable bool) error {
	l.epochMu.Lock()
	changed := cut(l.epochs)
	l.epochMu.Unlock()
	if changed {
		return l.writeEpochs(durable)
	}
	return nil
}

// DeleteBefore implements engine.Log.DeleteBefore: the start offset moves
// now (and is checkpointed), the log start offset kept below it, if any,
// with it (logstart.go); segments entirely below it are deleted.
func (l *Log) DeleteBefore(offset int64) error { return l.deleteBefore(offset, false) }

// deleteBefore is DeleteBefore; with local, the log start offset below the
// local one stays where it is (DeleteLocalBefore, logstart.go).
func (l *Log) deleteBefore(offset int64, local bool) error {
	l.appendMu.Lock()
	if l.closed.Load() {
		l.appendMu.Unlock()
		return errClosedLog
	}
	if err := l.failure(); err != nil {
		l.appendMu.Unlock()
		return err
	}
	if end := l.end.Load(); offset > end {
		l.appendMu.Unlock()
		return fmt.Errorf("%w: delete before %d, log end is %d", engine.ErrOffsetOutOfRange, offset, end)
	}
	if offset <= l.start.Load() {
		l.appendMu.Unlock()
		return nil
	}
	l.moveLogStartLocked(local)
	l.start.Store(offset)
	engine.StartMoved()
	k := 0
	for k+1 < len(l.segs) && l.segs[k+1].base <= offset {
		k++
	}
	err := l.deleteSegmentsLocked(k, offset)
	l.appendMu.Unlock()
	if cerr := l.store.checkpointStartOffsets(); err == nil {
		err = cerr
	}
	return err
}

// ApplyRetention implements engine.Log.ApplyRetention (Kafka's
// deleteRetentionMsBreachedSegments and deleteRetentionSizeBreachedSegments):
// a prefix of non-active segments goes when the largest timestamp of each
// is older than retention.ms, then while the log is over retention.bytes by
// at least the whole segment.
func (l *Log) ApplyRetention(now time.Time) (int64, error) {
	l.appendMu.Lock()
	if l.closed.Load() {
		l.appendMu.Unlock()
		return 0, errClosedLog
	}
	if err := l.failure(); err != nil {
		l.appendMu.Unlock()
		return l.start.Load(), err
	}
	k := engine.RetentionCut(l.cfg.Get(), now, len(l.segs), func(i int) (int64, int64) {
		return l.segs[i].retentionTime(), l.segs[i].size.Load()
	})
	var err error
	start := l.start.Load()
	if k > 0 {
		if b := l.segs[k].base; b > start {
			start = b
			l.start.Store(b)
			engine.StartMoved()
			l.logStart.Store(-1)
		}
		err = l.deleteSegmentsLocked(k, start)
	}
	l.appendMu.Unlock()
	if k > 0 {
		if cerr := l.store.checkpointStartOffsets(); err == nil {
			err = cerr
		}
	}
	return start, err
}

// deleteSegmentsLocked deletes the first k segments (never the active
// one) and cuts the epoch cache to start; an error fails the log.
// REQUIRES: appendMu.
func (l *Log) deleteSegmentsLocked(k int, start int64) error {
	var err error
	if k > 0 {
		l.mu.Lock()
		gone := l.segs[:k:k]
		l.segs = append([]*segment(nil), l.segs[k:]...)
		l.mu.Unlock()
		for _, s := range gone {
			if rerr := s.remove(); err == nil {
				err = rerr
			}
		}
	}
	// Not durably: a crash that loses this write leaves entries below the
	// start, which loading cuts again (recover.go, TruncateFromStart of
	// the start it loads), as Kafka flushes truncateFromStart in the
	// background (KAFKA-15046). Durably, the two fsyncs ran under
	// appendMu at every retention deletion and held the partition's
	// appends for them.
	if cerr := l.cutEpochs(func(c *engine.EpochCache) bool { return c.TruncateFromStart(start) }, false); err == nil {
		err = cerr
	}
	if err != nil {
		return l.fail(err)
	}
	return nil
}

// Close implements engine.Log: it closes the segments (trimming their
// indexes) and forgets the log in its store, which makes what the log
// holds durable at its own Close with one syncfs for every log (see
// Store.Close): Close does not fsync, as Kafka's Log.close does not
// (its LogManager flushes at shutdown). Where the store cannot syncfs,
// Close flushes first. A failed log is closed all the same, and Close
// returns its failure.
func (l *Log) Close() error {
	err := l.closeLog(l.store.dirf == nil)
	l.store.forget(l)
	return err
}

// closeLog closes the log, flushing first when flush is set, and returns
// the first error, the log's failure first of all. Slices already handed
// out stay readable.
func (l *Log) closeLog(flush bool) error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.closed.Swap(true) {
		return nil
	}
	l.bg.Wait()
	err := l.failure()
	if flush && err == nil {
		err = l.syncTo(l.end.Load())
	}
	if err == nil && l.newDirs.Load()&unsyncedEpochs != 0 {
		// An epoch no flush wrote: in place for the store's syncfs
		// (without one, the flush above wrote it durably).
		err = l.writeEpochs(false)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.segs {
		if cerr := s.close(); err == nil {
			err = cerr
		}
	}
	// A flush that started before the close finds no segment (see
	// fsyncUnflushed) rather than closed files.
	l.segs = nil
	return err
}
