package segment

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/engine/tailcache"
	"github.com/sluice/sluice/internal/fsutil"
)

func init() { engine.Register("segment", backend{}) }

type backend struct{}

func (backend) Open(opts engine.Options) (engine.Store, error) { return Open(opts) }

// Store is a log dir of partition logs. See engine.Store for the contract.
//
// Locking: mu guards the maps below. The Store may call into a Log while
// holding mu (a Log never takes mu while holding its own locks); ckptMu
// serializes checkpoint file writes.
type Store struct {
	dir    string
	fs     FS // opens the .log files
	log    *slog.Logger
	now    func() time.Time
	clean  bool // the clean-shutdown marker was present at Open
	ckptMu sync.Mutex

	mu     sync.Mutex
	closed bool
	logs   map[engine.PartitionID]*Log
	// Checkpointed offsets of logs that are not open (loaded at Open,
	// updated when a log closes).
	recoveryPoints map[engine.PartitionID]int64
	startOffsets   map[engine.PartitionID]int64
	// cleanMu guards cleanerPoints, the cleaner checkpoints
	// (cleaner-offset-checkpoint) of every log, open or not, and the
	// file's writes. A Log takes it holding its own locks: nothing holds
	// it while taking another lock.
	cleanMu       sync.Mutex
	cleanerPoints map[engine.PartitionID]int64
	// unrecovered holds the logs found at an unclean Open that have not
	// been opened (so not recovered) since, and the logs that failed (see
	// Log) and were closed; while any remain, Close does not write the
	// clean-shutdown marker.
	unrecovered map[engine.PartitionID]bool

	recoveredBytes atomic.Int64 // for progress logs
	stopFlush      chan struct{}
	flushDone      chan struct{}
	stopCkpt       chan struct{}
	ckptDone       chan struct{}

	// reserve reserves blocks ahead of the active segments' ends
	// (appendLocked); it stops trying on a file system without
	// fallocate(2).
	reserve fsutil.Reserver
	// wb starts the writeback of what the active segments appended, off
	// the append path (writeback.go); nil in tests that keep the page
	// cache as the disk (fsyncOff).
	wb *writeback
	// rolls runs what each roll leaves to do in the background, one at
	// a time (flush.go).
	rolls *rollFlusher
	// lastRP is the content of the last recovery-point checkpoint this
	// store wrote, so that an unchanged one is not rewritten. REQUIRES:
	// ckptMu.
	lastRP map[engine.PartitionID]int64
	// cache bounds the segments with open files (opencache.go).
	cache *openCache
	// tails is the budget of the copies of the active segments' last
	// bytes that reads at the tail are served from (engine/tailcache).
	tails tailcache.Cache
	// dirf is the log dir, open from Open to Close for fsutil.SyncFS (one
	// syncfs(2) at Close instead of fsyncs of every log's files); nil
	// where syncfs does not report writeback errors, and then each Log
	// fsyncs its files when it closes. Held open so that syncfs reports
	// every writeback error since Open (the kernel samples the file
	// system's error sequence when the descriptor is opened).
	dirf *os.File
	// unsynced holds the logs closed with bytes past their recovery
	// point (Log.Close does not fsync when dirf is set), with the end
	// offset they closed at: Close raises their recovery points to it
	// once fsutil.SyncFS has made the bytes durable. REQUIRES: mu
	unsynced map[engine.PartitionID]int64
}

// recoveryCheckpointEvery is the checkpoint interval of a Store opened
// without engine.Options.RecoveryCheckpointInterval; tests change it
// (setRecoveryCheckpointInterval).
var recoveryCheckpointEvery atomic.Int64

func init() { recoveryCheckpointEvery.Store(int64(DefaultRecoveryCheckpointInterval)) }

// DefaultRecoveryCheckpointInterval is Kafka's default of
// log.flush.offset.checkpoint.interval.ms.
const DefaultRecoveryCheckpointInterval = 60 * time.Second

// setRecoveryCheckpointInterval sets the default interval for the Stores
// opened from now on (tests); d <= 0: only at Close.
func setRecoveryCheckpointInterval(d time.Duration) { recoveryCheckpointEvery.Store(int64(d)) }

// How often a Store writes recovery-point-offset-checkpoint
// (log.flush.offset.checkpoint.interval.ms; Kafka's
// LogManager.checkpointLogRecoveryOffsets): the recovery points written
// only ever cover fsynced offsets (a rolled segment is fsynced in the
// background, then its log's recovery point moves), so a killed broker
// re-validates only what lies past the last checkpoint.

// Open opens (creating if needed) the store in opts.Dir. It removes the
// clean-shutdown marker: from now on, until a clean Close, the logs count
// as possibly damaged, and each is recovered when it is first opened.
func Open(opts engine.Options) (*Store, error) { return OpenFS(opts, OSFS) }

// OpenFS is Open with the segment files opened through fs (tests pass an
// error-injecting wrapper of OSFS).
func OpenFS(opts engine.Options, fs FS) (*Store, error) {
	if opts.Dir == "" {
		return nil, errors.New("segment: no directory")
	}
	s := &Store{
		dir:            opts.Dir,
		fs:             fs,
		log:            opts.Logger,
		now:            opts.Now,
		logs:           map[engine.PartitionID]*Log{},
		recoveryPoints: map[engine.PartitionID]int64{},
		startOffsets:   map[engine.PartitionID]int64{},
		unrecovered:    map[engine.PartitionID]bool{},
		unsynced:       map[engine.PartitionID]int64{},
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	openMax := opts.OpenSegmentsMax
	if openMax <= 0 {
		openMax = defaultOpenSegmentsMax()
	}
	s.cache = newOpenCache(openMax, s.log)
	s.tails.Init(opts.TailCacheBytes)
	if s.now == nil {
		s.now = time.Now
	}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return nil, fmt.Errorf("segment: %w", err)
	}
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("%w: read %s: %v", engine.ErrCorruptStore, s.dir, err)
	}
	marker := filepath.Join(s.dir, cleanShutdownFile)
	if _, err := os.Stat(marker); err == nil {
		s.clean = true
		if err := os.Remove(marker); err != nil {
			return nil, fmt.Errorf("segment: remove %s: %w", marker, err)
		}
		if err := syncDir(s.dir); err != nil {
			return nil, fmt.Errorf("segment: fsync %s: %w", s.dir, err)
		}
	}
	for _, e := range entries {
		name := e.Name()
		switch {
		case strings.HasSuffix(name, tmpSuffix) || (e.IsDir() && strings.HasSuffix(name, deleteDirSuffix)):
			s.log.Info("segment: removing leftover", "path", filepath.Join(s.dir, name))
			if err := os.RemoveAll(filepath.Join(s.dir, name)); err != nil {
				return nil, fmt.Errorf("segment: remove leftover: %w", err)
			}
		case e.IsDir() && !s.clean:
			if topic, p, ok := parseLogDirName(name); ok {
				s.unrecovered[engine.PartitionID{Topic: topic, Partition: p}] = true
			}
		}
	}
	if n := len(s.unrecovered); n > 0 {
		s.log.Info("segment: no clean-shutdown marker: logs are validated past their recovery points as they open",
			"dir", s.dir, "logs", n)
	}
	s.recoveryPoints = s.readOffsets(recoveryPointFile)
	s.startOffsets = s.readOffsets(logStartOffsetFile)
	if err := s.migrateLogStarts(); err != nil { // logstart.go
		return nil, err
	}
	s.cleanerPoints = s.readOffsets(cleanerOffsetFile)
	if fsutil.SyncFSReportsErrors() && !fsyncOff.Load() {
		if s.dirf, err = os.Open(s.dir); err != nil {
			return nil, fmt.Errorf("segment: open %s: %w", s.dir, err)
		}
	}
	if !fsyncOff.Load() {
		s.wb = newWriteback()
	}
	s.rolls = newRollFlusher()
	if opts.FlushInterval > 0 {
		s.stopFlush, s.flushDone = make(chan struct{}), make(chan struct{})
		go s.flushLoop(opts.FlushInterval)
	}
	every := opts.RecoveryCheckpointInterval
	if every == 0 {
		every = time.Duration(recoveryCheckpointEvery.Load())
	}
	if every > 0 {
		s.stopCkpt, s.ckptDone = make(chan struct{}), make(chan struct{})
		go s.checkpointLoop(every)
	}
	return s, nil
}

// readOffsets reads an offset checkpoint of the log dir; a damaged one is
// logged and ignored (the logs are then recovered from their start).
func (s *Store) readOffsets(name string) map[engine.PartitionID]int64 {
	m, err := readOffsetCheckpoint(filepath.Join(s.dir, name))
	if err != nil {
		s.log.Warn("segment: ignoring damaged checkpoint", "err", err)
		return map[engine.PartitionID]int64{}
	}
	return m
}

var _ engine.Maintainer = (*Store)(nil)

// FlushAll implements engine.Maintainer: it flushes every open log in
// turn (Log.Flush), and a log that fails does not stop the others.
func (s *Store) FlushAll() error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return engine.ErrClosed
	}
	var errs []error
	for _, l := range s.openLogs() {
		if err := l.Flush(); err != nil && !errors.Is(err, engine.ErrClosed) {
			errs = append(errs, fmt.Errorf("segment: flush %s: %w", l.dir, err))
		}
	}
	return errors.Join(errs...)
}

// CheckpointRecoveryPoints implements engine.Maintainer: it writes
// recovery-point-offset-checkpoint when a recovery point moved since the
// last one.
func (s *Store) CheckpointRecoveryPoints() error {
	s.ckptMu.Lock()
	defer s.ckptMu.Unlock()
	// Checked under ckptMu: Close marks the store closed before it takes
	// ckptMu for the last checkpoint, which no later one may overwrite.
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return engine.ErrClosed
	}
	return s.checkpointRecoveryPointsLocked()
}

// flushLoop is the store's own periodic flush (engine.Options.FlushInterval,
// for direct users of the store; the broker's replica manager calls
// FlushAll instead): each interval it fsyncs every open log and
// checkpoints the recovery points.
func (s *Store) flushLoop(every time.Duration) {
	defer close(s.flushDone)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stopFlush:
			return
		case <-t.C:
		}
		if err := s.FlushAll(); err != nil && !errors.Is(err, engine.ErrClosed) {
			s.log.Error("segment: periodic flush failed", "err", err)
		}
		if err := s.CheckpointRecoveryPoints(); err != nil && !errors.Is(err, engine.ErrClosed) {
			s.log.Error("segment: recovery point checkpoint failed", "err", err)
		}
	}
}

// checkpointLoop is the store's own periodic checkpoint
// (engine.Options.RecoveryCheckpointInterval, for direct users of the
// store; the broker's replica manager calls CheckpointRecoveryPoints
// instead): it writes recovery-point-offset-checkpoint each interval when
// a recovery point moved.
func (s *Store) checkpointLoop(every time.Duration) {
	defer close(s.ckptDone)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stopCkpt:
			return
		case <-t.C:
		}
		if err := s.CheckpointRecoveryPoints(); err != nil && !errors.Is(err, engine.ErrClosed) {
			s.log.Error("segment: recovery point checkpoint failed", "err", err)
		}
	}
}

func (s *Store) openLogs() []*Log {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*Log, 0, len(s.logs))
	for _, l := range s.logs {
		out = append(out, l)
	}
	return out
}

func (s *Store) logDir(id engine.PartitionID) string {
	return filepath.Join(s.dir, logDirName(id.Topic, id.Partition))
}

func checkID(id engine.PartitionID) error {
	if id.Topic == "" || id.Topic == "." || id.Topic == ".." || strings.ContainsAny(id.Topic, "/\x00") || id.Partition < 0 {
		return fmt.Errorf("segment: invalid partition %q/%d", id.Topic, id.Partition)
	}
	return nil
}

func (s *Store) newLog(id engine.PartitionID, cfg engine.LogConfig) *Log {
	l := &Log{store: s, id: id, dir: s.logDir(id), cfg: engine.ShareLogConfig(normalize(cfg))}
	l.syncer.cond.L = &l.syncer.mu
	l.epochs = engine.NewEpochCache(nil)
	l.logStart.Store(-1)
	return l
}

// CreateLog implements engine.Store.
func (s *Store) CreateLog(id engine.PartitionID, cfg engine.LogConfig) (engine.Log, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, engine.ErrClosed
	}
	dir := s.logDir(id)
	if _, ok := s.logs[id]; ok {
		return nil, fmt.Errorf("%w: %s", engine.ErrLogExists, dir)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("%w: %s", engine.ErrLogExists, dir)
		}
		return nil, fmt.Errorf("segment: create log: %w", err)
	}
	l := s.newLog(id, cfg)
	// The segment's files are created by the first append (lazySegment).
	// The new directory and files become durable with the log's first
	// flush (or the store's Close), not here: a machine crash before
	// loses only an empty log, which the server creates again at start,
	// and an fsync of the log dir per partition was most of a
	// CreateTopics (330 ms for 100 partitions).
	l.newDirs.Store(newLogDir | newParentDir)
	l.managed = true
	// l.dir, not dir: one copy of the path per log (~64 bytes).
	l.segs = []*segment{lazySegment(s.fs, l.dir, 0, l.cfg.Get(), s.now().UnixMilli(), s.cache)}
	s.logs[id] = l
	return l, nil
}

// OpenLog implements engine.Store. The first open after an unclean
// shutdown recovers the log (see recover.go).
func (s *Store) OpenLog(id engine.PartitionID, cfg engine.LogConfig) (engine.Log, error) {
	if err := checkID(id); err != nil {
		return nil, fmt.Errorf("%w: %v", engine.ErrNoLog, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, engine.ErrClosed
	}
	if l, ok := s.logs[id]; ok {
		return l, nil
	}
	dir := s.logDir(id)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("%w: %s", engine.ErrNoLog, dir)
	}
	l, err := s.loadLog(id, cfg)
	if err != nil {
		return nil, err
	}
	s.logs[id] = l
	delete(s.unrecovered, id)
	delete(s.unsynced, id) // the log's recovery point says it now
	return l, nil
}

// ListLogs implements engine.Store.
func (s *Store) ListLogs() ([]engine.PartitionID, error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("segment: list %s: %w", s.dir, err)
	}
	var out []engine.PartitionID
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if topic, p, ok := parseLogDirName(e.Name()); ok {
			out = append(out, engine.PartitionID{Topic: topic, Partition: p})
		}
	}
	return out, nil
}

// DeleteLog implements engine.Store: the directory is renamed aside (so a
// crash midway leaves a "-delete" dir that the next Open removes), then
// removed. Slices already handed out keep their files open.
func (s *Store) DeleteLog(id engine.PartitionID) error {
	if err := checkID(id); err != nil {
		return fmt.Errorf("%w: %v", engine.ErrNoLog, err)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return engine.ErrClosed
	}
	dir := s.logDir(id)
	l, open := s.logs[id]
	if open {
		l.closeLog(false)
		delete(s.logs, id)
	}
	delete(s.recoveryPoints, id)
	delete(s.startOffsets, id)
	s.forgetCleanerPoint(id)
	delete(s.unrecovered, id)
	delete(s.unsynced, id)
	aside := dir + "." + strconv.FormatInt(time.Now().UnixNano(), 36) + deleteDirSuffix
	err := os.Rename(dir, aside)
	s.mu.Unlock()
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: %s", engine.ErrNoLog, dir)
	}
	if err != nil {
		return fmt.Errorf("segment: delete %s: %w", dir, err)
	}
	if err := os.RemoveAll(aside); err != nil {
		return fmt.Errorf("segment: delete %s: %w", aside, err)
	}
	if err := syncDir(s.dir); err != nil {
		return fmt.Errorf("segment: fsync %s: %w", s.dir, err)
	}
	if err := s.checkpointStartOffsets(); err != nil {
		return err
	}
	return s.checkpointRecoveryPoints()
}

// forget drops a closed log from the open set, keeping its offsets for the
// checkpoints: its recovery point, and in unsynced its end when bytes
// past the recovery point await Close's fsutil.SyncFS. A failed log counts as
// unrecovered from now on: its next open recovers it, and Close writes no
// clean-shutdown marker.
func (s *Store) forget(l *Log) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.logs[l.id] == l {
		delete(s.logs, l.id)
		rp, end := l.RecoveryPoint(), l.EndOffset()
		s.recoveryPoints[l.id] = rp
		if ls := l.checkpointedLogStart(); ls >= 0 {
			s.startOffsets[l.id] = ls
		} else {
			delete(s.startOffsets, l.id)
		}
		if l.failure() != nil {
			s.unrecovered[l.id] = true
		} else if rp < end {
			s.unsynced[l.id] = end
		}
	}
}

// syncClosed makes the bytes of every closed log durable with one
// fsutil.SyncFS of the log dir and raises their recovery points to the ends
// they closed at. On an error nothing is raised: the next Open validates
// those logs past their old recovery points.
func (s *Store) syncClosed() error {
	if s.dirf == nil {
		return nil // each log fsynced its files as it closed
	}
	if err := fsutil.SyncFS(s.dirf); err != nil {
		return fmt.Errorf("%w: segment: syncfs %s: %w", engine.ErrStorage, s.dir, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, end := range s.unsynced {
		if s.recoveryPoints[id] < end {
			s.recoveryPoints[id] = end
		}
	}
	clear(s.unsynced)
	return nil
}

// offsets returns the checkpointed offsets merged with those of open logs.
func (s *Store) offsets(saved map[engine.PartitionID]int64, get func(*Log) int64) map[engine.PartitionID]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[engine.PartitionID]int64, len(saved)+len(s.logs))
	for id, o := range saved {
		m[id] = o
	}
	for id, l := range s.logs {
		m[id] = get(l)
	}
	return m
}

// checkpointStartOffsets writes log-start-offset-checkpoint: each log's
// log start offset, below its first local offset for a tiered log, none
// for a log whose log start is unknown (logstart.go).
func (s *Store) checkpointStartOffsets() error {
	s.ckptMu.Lock()
	defer s.ckptMu.Unlock()
	m := s.offsets(s.startOffsets, (*Log).checkpointedLogStart)
	for id, o := range m {
		if o < 0 {
			delete(m, id)
		}
	}
	return writeOffsetCheckpoint(filepath.Join(s.dir, logStartOffsetFile), m)
}

// checkpointRecoveryPoints writes recovery-point-offset-checkpoint, unless
// it would write what it wrote last.
func (s *Store) checkpointRecoveryPoints() error {
	s.ckptMu.Lock()
	defer s.ckptMu.Unlock()
	return s.checkpointRecoveryPointsLocked()
}

// checkpointRecoveryPointsLocked is checkpointRecoveryPoints.
// REQUIRES: s.ckptMu held.
func (s *Store) checkpointRecoveryPointsLocked() error {
	m := s.offsets(s.recoveryPoints, (*Log).RecoveryPoint)
	if equalOffsets(m, s.lastRP) {
		return nil
	}
	if err := writeOffsetCheckpoint(filepath.Join(s.dir, recoveryPointFile), m); err != nil {
		s.lastRP = nil
		return err
	}
	s.lastRP = m
	return nil
}

func equalOffsets(a, b map[engine.PartitionID]int64) bool {
	if a == nil || b == nil || len(a) != len(b) {
		return false
	}
	for id, o := range a {
		if p, ok := b[id]; !ok || p != o {
			return false
		}
	}
	return true
}

// Close implements engine.Store: every log is closed, what the logs hold
// made durable (one syncfs(2) of the log dir for all of them: the logs
// closed before, by Log.Close, did not fsync either), the checkpoints
// written, and then, if nothing failed and every log found at an unclean
// Open has been recovered, the clean-shutdown marker. So the checkpoints
// and the marker are written only after the data they vouch for is on
// disk. Where syncfs cannot be used (see Store.dirf), each log fsyncs
// its files as it closes, as before: 15.4 s for the 20,000 partitions of
// `make scale`, most of which had new bytes.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	if s.stopFlush != nil {
		close(s.stopFlush)
		<-s.flushDone
	}
	if s.stopCkpt != nil {
		close(s.stopCkpt)
		<-s.ckptDone
	}
	open, reopens, evictions := s.OpenSegments()
	hits, misses, held := s.TailCache()
	s.log.Info("segment: closing the store", "dir", s.dir, "openSegments", open,
		"openSegmentsMax", s.cache.ring.Max(), "reopens", reopens, "evictions", evictions,
		"tailCacheHits", hits, "tailCacheMisses", misses, "tailCacheBytes", held)
	var err error
	for _, l := range s.openLogs() {
		if cerr := l.Close(); err == nil {
			err = cerr
		}
	}
	s.wb.close()
	s.rolls.close()
	if serr := s.syncClosed(); serr != nil {
		s.log.Error("segment: making the closed logs durable failed: the next start validates them", "dir", s.dir, "err", serr)
		if err == nil {
			err = serr
		}
	}
	if s.dirf != nil {
		defer s.dirf.Close()
	}
	if cerr := s.checkpointRecoveryPoints(); err == nil {
		err = cerr
	}
	if cerr := s.checkpointStartOffsets(); err == nil {
		err = cerr
	}
	s.mu.Lock()
	pending := len(s.unrecovered)
	s.mu.Unlock()
	if err != nil || pending > 0 {
		return err
	}
	if err := writeFileAtomic(filepath.Join(s.dir, cleanShutdownFile), nil); err != nil {
		return err
	}
	return nil
}
