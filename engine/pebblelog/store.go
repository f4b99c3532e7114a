// Package pebblelog is the "pebble" storage backend: every partition log of
// a store lives in one Pebble LSM in Options.Dir (see format.go for the key
// layout). It suits brokers with many thousands of partitions: no open file
// or mapping per partition, and compaction instead of segment files. Reads
// copy (there is no file range to sendfile). The record batches, Pebble's
// large values, are separated into blob files at flush, so compactions
// move keys and handles, not records (options.go has the measurements).
//
// Durability. Every append is committed with pebble.Sync, whatever
// FlushMessages says, and concurrent appends (across partitions: Pebble's
// commit pipeline) share one fsync. The reason is Pebble's WAL writer: it
// hands a partially filled 32 KiB block to the OS only when a sync is
// requested, so a NoSync append is not even in the page cache, and a plain
// process crash (SIGKILL, OOM) would lose acknowledged records that a
// segment log keeps. Kafka's promise that acknowledged records survive a
// broker crash therefore costs the pebble backend one fsync per append
// round (about 0.5 ms on this project's machines). Each Append is one Pebble
// batch, so a power loss mid-commit loses whole appends from the tail, never
// part of one: the next Open finds dense offsets.
//
// What is committed without a sync can be lost without losing a record:
// producer snapshots (a longer replay) and the catalog entry of a new,
// empty log (the server creates it again). The next synced commit of any
// log makes them durable, since the WAL is one ordered file, and so does
// Store.Close, which syncs once and flushes the memtables: closing a log
// writes nothing, so a clean stop costs the same for 10 or 100,000 logs.
//
// Disk assumptions are Pebble's: an fsync'd WAL record survives power loss.
package pebblelog

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/sluice/sluice/engine"
)

func init() { engine.Register("pebble", Backend{}) }

// Backend opens pebble stores. The zero value is ready to use.
type Backend struct{}

// Store is a Pebble DB holding partition logs. Safe for concurrent use.
type Store struct {
	db     *pebble.DB
	dir    string
	logger *slog.Logger
	now    func() time.Time

	// life is held shared by every operation that touches db and
	// exclusively by Close, so db is never used after it is closed.
	life   sync.RWMutex
	closed bool // REQUIRES: life held

	mu      sync.Mutex                    // guards catalog, nextID, open
	catalog map[engine.PartitionID]uint64 // partition -> numeric id
	nextID  uint64
	open    map[engine.PartitionID]*Log

	// unsynced counts the batches committed without a sync (producer
	// snapshots); synced is its value at the last WAL sync. A sync is
	// skipped when they are equal: every other write is committed with
	// pebble.Sync, so there is nothing to make durable. This is what makes
	// closing 100,000 idle logs one fsync instead of 100,000 (about 40 s).
	// Invariant: synced <= unsynced.
	unsynced atomic.Uint64
	synced   atomic.Uint64

	stopFlush chan struct{}
	flushDone chan struct{}
	stopOnce  sync.Once
}

// Open opens (creating if needed) the Pebble DB in opts.Dir and loads the
// catalog. Pebble replays its WAL, so an unclean shutdown needs nothing more.
func (Backend) Open(opts engine.Options) (engine.Store, error) {
	if opts.Dir == "" {
		return nil, errors.New("pebblelog: Options.Dir is required")
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	cache := pebble.NewCache(cacheBytes)
	defer cache.Unref()
	db, err := pebble.Open(opts.Dir, pebbleOptions(cache, logger.With("backend", "pebble", "dir", opts.Dir)))
	if err != nil {
		return nil, fmt.Errorf("pebblelog: open %s: %w", opts.Dir, err)
	}
	s := &Store{
		db: db, dir: opts.Dir, logger: logger, now: now,
		catalog: map[engine.PartitionID]uint64{},
		open:    map[engine.PartitionID]*Log{},
	}
	if err := s.load(); err != nil {
		db.Close()
		return nil, err
	}
	if opts.FlushInterval > 0 {
		s.stopFlush, s.flushDone = make(chan struct{}), make(chan struct{})
		go s.flushLoop(opts.FlushInterval)
	}
	return s, nil
}

// load checks the format version (writing it into a new store) and reads
// the catalog and the next id.
func (s *Store) load() error {
	v, closer, err := s.db.Get([]byte{tagVersion})
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		if err := s.db.Set([]byte{tagVersion}, []byte{0, 0, 0, formatVersion}, pebble.Sync); err != nil {
			return fmt.Errorf("pebblelog: %s: write version: %w", s.dir, err)
		}
	case err != nil:
		return fmt.Errorf("pebblelog: %s: read version: %w", s.dir, err)
	default:
		ok := len(v) == 4 && v[0] == 0 && v[1] == 0 && v[2] == 0 && v[3] == formatVersion
		closer.Close()
		if !ok {
			return fmt.Errorf("%w: %s: format version %x, this build reads %d", engine.ErrCorruptStore, s.dir, v, formatVersion)
		}
	}
	next, err := s.getU64([]byte{tagNextID})
	if err != nil {
		return err
	}
	s.nextID = next
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{tagCatalog}, UpperBound: []byte{tagCatalog + 1}})
	if err != nil {
		return fmt.Errorf("pebblelog: %s: %w", s.dir, err)
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		id, err := parseCatalogKey(it.Key())
		if err != nil {
			return fmt.Errorf("%s: %w", s.dir, err)
		}
		val, err := it.ValueAndErr()
		if err != nil || len(val) != 8 {
			return fmt.Errorf("%w: %s: catalog entry %v: %d bytes, %v", engine.ErrCorruptStore, s.dir, id, len(val), err)
		}
		n := beU64(val)
		s.catalog[id] = n
		s.nextID = max(s.nextID, n+1)
	}
	return it.Error()
}

// getU64 reads a u64 value; a missing key reads as 0.
func (s *Store) getU64(key []byte) (uint64, error) {
	v, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("pebblelog: %s: get %x: %w", s.dir, key, err)
	}
	defer closer.Close()
	if len(v) != 8 {
		return 0, fmt.Errorf("%w: %s: key %x holds %d bytes, want 8", engine.ErrCorruptStore, s.dir, key, len(v))
	}
	return beU64(v), nil
}

// flushLoop syncs the WAL every interval until Close.
func (s *Store) flushLoop(every time.Duration) {
	defer close(s.flushDone)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stopFlush:
			return
		case <-t.C:
			if err := s.sync(); err != nil && !errors.Is(err, engine.ErrClosed) {
				s.logger.Error("pebblelog: periodic flush", "dir", s.dir, "err", err)
			}
		}
	}
}

// sync makes every write so far durable by syncing the WAL.
func (s *Store) sync() error {
	s.life.RLock()
	defer s.life.RUnlock()
	return s.syncHeld()
}

// syncHeld is sync for a caller that holds s.life. It costs nothing when
// every batch since the last sync was committed synced.
// REQUIRES: s.life held.
func (s *Store) syncHeld() error {
	if s.closed {
		return engine.ErrClosed
	}
	// Loaded before the sync: a batch counted here was committed (so is
	// in the WAL) before LogData, which syncs everything before it.
	n := s.unsynced.Load()
	if n == s.synced.Load() {
		return nil
	}
	if err := s.db.LogData(nil, pebble.Sync); err != nil {
		return fmt.Errorf("pebblelog: %s: sync: %w", s.dir, err)
	}
	for {
		old := s.synced.Load()
		if old >= n || s.synced.CompareAndSwap(old, n) {
			return nil
		}
	}
}

// commitNoSync commits b without a sync and counts it for the next sync
// (Log.Flush, Log.Close, the periodic flush, Store.Close).
func (s *Store) commitNoSync(b *pebble.Batch) error {
	if err := b.Commit(pebble.NoSync); err != nil {
		return err
	}
	s.unsynced.Add(1)
	return nil
}

// CreateLog assigns the partition an id and writes its catalog entry and
// start offset 0, without a sync of its own; engine.ErrLogExists if it
// exists.
func (s *Store) CreateLog(id engine.PartitionID, cfg engine.LogConfig) (engine.Log, error) {
	s.life.RLock()
	defer s.life.RUnlock()
	if s.closed {
		return nil, engine.ErrClosed
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.catalog[id]; ok {
		return nil, fmt.Errorf("%w: %s/%d", engine.ErrLogExists, id.Topic, id.Partition)
	}
	n := s.nextID
	b := s.db.NewBatch()
	defer b.Close()
	_ = b.Set(catalogKey(id), appendU64(nil, n), nil)
	_ = b.Set([]byte{tagNextID}, appendU64(nil, n+1), nil)
	_ = b.Set(metaKey(n, metaStart), appendU64(nil, 0), nil)
	// Not synced: a topic of 100 partitions took 100 fsyncs (~150 ms at
	// 50,000 partitions). The log is empty, so a crash loses no record,
	// the next synced write (an append to any log) makes it durable with
	// everything before it, and a broker that finds a topic's log missing
	// creates it again (server.loadTopics).
	if err := s.commitNoSync(b); err != nil {
		return nil, fmt.Errorf("pebblelog: %s: create %s/%d: %w", s.dir, id.Topic, id.Partition, err)
	}
	s.catalog[id] = n
	s.nextID = n + 1
	l := newLog(s, id, n, cfg)
	l.epochs = engine.NewEpochCache(nil)
	s.open[id] = l
	return l, nil
}

// OpenLog opens an existing log, loading its start offset, epoch history
// and segment summaries; engine.ErrNoLog if there is none. An open log is
// returned as is.
func (s *Store) OpenLog(id engine.PartitionID, cfg engine.LogConfig) (engine.Log, error) {
	s.life.RLock()
	defer s.life.RUnlock()
	if s.closed {
		return nil, engine.ErrClosed
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.open[id]; ok {
		return l, nil
	}
	n, ok := s.catalog[id]
	if !ok {
		return nil, fmt.Errorf("%w: %s/%d", engine.ErrNoLog, id.Topic, id.Partition)
	}
	l := newLog(s, id, n, cfg)
	if err := l.load(); err != nil {
		return nil, err
	}
	s.open[id] = l
	return l, nil
}

// ListLogs lists the logs in the catalog, in no particular order.
func (s *Store) ListLogs() ([]engine.PartitionID, error) {
	s.life.RLock()
	defer s.life.RUnlock()
	if s.closed {
		return nil, engine.ErrClosed
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]engine.PartitionID, 0, len(s.catalog))
	for id := range s.catalog {
		ids = append(ids, id)
	}
	return ids, nil
}

// DeleteLog closes the log if open and deletes its keys with range
// deletes and its catalog entry, in one Pebble batch. Slices handed out
// are copies and stay readable.
func (s *Store) DeleteLog(id engine.PartitionID) error {
	s.life.RLock()
	defer s.life.RUnlock()
	if s.closed {
		return engine.ErrClosed
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.catalog[id]
	if !ok {
		return fmt.Errorf("%w: %s/%d", engine.ErrNoLog, id.Topic, id.Partition)
	}
	if l := s.open[id]; l != nil {
		l.markClosed()
		delete(s.open, id)
	}
	b := s.db.NewBatch()
	defer b.Close()
	_ = b.Delete(catalogKey(id), nil)
	for _, tag := range []byte{tagMeta, tagSegment, tagBatchIdx, tagBatch, tagAborted, tagSnapshot} {
		_ = b.DeleteRange(newLogKey(tag, n, 0)[:9], logKeyEnd(tag, n), nil)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("pebblelog: %s: delete %s/%d: %w", s.dir, id.Topic, id.Partition, err)
	}
	delete(s.catalog, id)
	return nil
}

// forget drops a closed log from the open set.
func (s *Store) forget(l *Log) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open[l.id] == l {
		delete(s.open, l.id)
	}
}

// Close closes every open log, syncs the WAL once for all of them and
// closes the DB. Nothing is written per log. It waits for operations in
// flight.
func (s *Store) Close() error {
	if s.stopFlush != nil {
		s.stopOnce.Do(func() {
			close(s.stopFlush)
			<-s.flushDone
		})
	}
	s.life.Lock()
	defer s.life.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.mu.Lock()
	for _, l := range s.open {
		l.markClosed()
	}
	s.open = map[engine.PartitionID]*Log{}
	s.mu.Unlock()
	err := s.db.LogData(nil, pebble.Sync)
	if err == nil {
		// Flush the memtables so the next Open replays no WAL. Replaying
		// it flushed them during the load of every partition, whose reads
		// then missed the block cache while compactions rewrote the new
		// tables: the first restart after creating 100,000 partitions took
		// 8-10 s, a later one 2.3 s.
		err = s.db.Flush()
	}
	if cerr := s.db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("pebblelog: close %s: %w", s.dir, err)
	}
	return nil
}

// pebbleLogger routes Pebble's log lines to slog: information at debug,
// errors at error. Fatalf panics, as Pebble expects it not to return.
type pebbleLogger struct{ l *slog.Logger }

func (p pebbleLogger) Infof(format string, args ...any) {
	p.l.Debug(fmt.Sprintf(format, args...))
}

func (p pebbleLogger) Errorf(format string, args ...any) {
	p.l.Error(fmt.Sprintf(format, args...))
}

func (p pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	p.l.Error(msg)
	panic("pebblelog: pebble fatal: " + msg)
}
