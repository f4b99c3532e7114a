// Package metastore is the broker's durable metadata: topic metadata and
// configs, producer-id blocks, committed consumer offsets, consumer group
// state and small named checkpoints, kept in one Pebble database in a
// directory the broker chooses (<first log dir>/__sluice_meta).
//
// The key space and value encodings are drawn in format.go.
//
// Durability: every method that writes returns only after Pebble has synced
// its write-ahead log (pebble.Sync), so a write the broker acknowledges to a
// client survives a crash of the process or the machine, given a disk that
// honours fsync. Multi-key writes (one offset commit, DeleteGroup) go through
// one Pebble batch and are atomic: after a crash either all or none of them
// are visible.
//
// Concurrency: a *Store is safe for concurrent use by many goroutines. Calls
// racing with Close either complete or return ErrClosed.
package metastore

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"

	"github.com/cockroachdb/pebble/v2"
)

var (
	// ErrNotFound is returned when the named topic, group or checkpoint does not exist.
	ErrNotFound = errors.New("metastore: not found")
	// ErrClosed is returned by every method called after Close.
	ErrClosed = errors.New("metastore: closed")
	// ErrCorrupt marks a stored key or value that cannot be decoded. The error
	// wrapping it names the key.
	ErrCorrupt = errors.New("metastore: corrupt")
	// ErrInvalid marks an argument the store refuses (empty name, n <= 0, ...).
	ErrInvalid = errors.New("metastore: invalid argument")
)

// Pebble tuning: the metastore is small (thousands of keys, rare large
// writes), so it gets a small block cache and memtable instead of Pebble's
// defaults, leaving memory to the page cache that serves the logs.
const (
	cacheSize    = 16 << 20
	memTableSize = 4 << 20
)

// Options configures Open.
type Options struct {
	// Logger receives Pebble's messages (informational ones at Debug) and the
	// store's own. nil: slog.Default().
	Logger *slog.Logger
}

// Store is an open metastore. Create it with Open and release it with Close.
type Store struct {
	log *slog.Logger

	// mu guards db against Close: every operation holds it for reading,
	// Close for writing. db == nil means closed.
	mu sync.RWMutex
	db *pebble.DB

	// pidMu serializes AllocateProducerIDs; nextPID caches the stored next
	// free id, loaded lazily (-1: not loaded).
	pidMu   sync.Mutex
	nextPID int64

	// delMu serializes deleteExisting so that of two racing deletes of one
	// key exactly one succeeds and the other sees ErrNotFound.
	delMu sync.Mutex

	// bufPool holds scratch buffers for keys and values of CommitOffsets.
	bufPool sync.Pool
}

var syncWrite = pebble.Sync

// Open opens the metastore in dir, creating the directory and the database if
// they do not exist. It fails if dir holds a metastore written in a format
// this version does not know.
func Open(dir string, opts Options) (*Store, error) {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("metastore: open %s: %w", dir, err)
	}
	cache := pebble.NewCache(cacheSize)
	defer cache.Unref() // the DB holds its own reference
	popts := &pebble.Options{
		Cache:        cache,
		MemTableSize: memTableSize,
		Logger:       pebbleLogger{log},
	}
	db, err := pebble.Open(dir, popts)
	if err != nil {
		return nil, fmt.Errorf("metastore: open %s: %w", dir, err)
	}
	if err := checkFormat(db); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("metastore: open %s: %w", dir, err)
	}
	log.Debug("metastore: opened", "dir", dir)
	return &Store{log: log, db: db, nextPID: -1}, nil
}

// checkFormat records formatV1 in a new store and refuses any other format.
func checkFormat(db *pebble.DB) error {
	v, closer, err := db.Get(formatKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return db.Set(formatKey, []byte{formatV1}, syncWrite)
	}
	if err != nil {
		return err
	}
	defer closer.Close()
	if len(v) != 1 || v[0] != formatV1 {
		return corruptf(formatKey, "unsupported store format %v", v)
	}
	return nil
}

// Close flushes nothing extra (every write was synced) and closes the
// database. It waits for calls in flight. Close is idempotent: later calls
// return nil, and every other method returns ErrClosed afterwards.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db == nil {
		return nil
	}
	err := s.db.Close()
	s.db = nil
	if err != nil {
		return fmt.Errorf("metastore: close: %w", err)
	}
	return nil
}

// acquire returns the open DB with s.mu read-locked, or ErrClosed. The
// caller must call s.mu.RUnlock when err is nil.
func (s *Store) acquire() (*pebble.DB, error) {
	s.mu.RLock()
	if s.db == nil {
		s.mu.RUnlock()
		return nil, ErrClosed
	}
	return s.db, nil
}

// get looks key up and hands its value to decode, which must not retain it.
// A missing key returns ErrNotFound.
func (s *Store) get(key []byte, decode func(v []byte) error) error {
	db, err := s.acquire()
	if err != nil {
		return err
	}
	defer s.mu.RUnlock()
	v, closer, err := db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("metastore: get %q: %w", key, err)
	}
	defer closer.Close()
	return decode(v)
}

// set writes key=value and syncs before returning.
func (s *Store) set(key, value []byte) error {
	db, err := s.acquire()
	if err != nil {
		return err
	}
	defer s.mu.RUnlock()
	if err := db.Set(key, value, syncWrite); err != nil {
		return fmt.Errorf("metastore: set %q: %w", key, err)
	}
	return nil
}

// deleteExisting deletes key, synced, or returns ErrNotFound if it is absent.
func (s *Store) deleteExisting(key []byte) error {
	db, err := s.acquire()
	if err != nil {
		return err
	}
	defer s.mu.RUnlock()
	s.delMu.Lock()
	defer s.delMu.Unlock()
	exists, err := hasKey(db, key)
	if err != nil {
		return fmt.Errorf("metastore: get %q: %w", key, err)
	}
	if !exists {
		return ErrNotFound
	}
	if err := db.Delete(key, syncWrite); err != nil {
		return fmt.Errorf("metastore: delete %q: %w", key, err)
	}
	return nil
}

// scan calls fn for every key in [lower, upper) in key order. fn must not
// retain key or value. An error from fn stops the scan and is returned.
func (s *Store) scan(lower, upper []byte, fn func(key, value []byte) error) error {
	db, err := s.acquire()
	if err != nil {
		return err
	}
	defer s.mu.RUnlock()
	return scanDB(db, lower, upper, fn)
}

// scanDB is scan on an already acquired DB.
func scanDB(db *pebble.DB, lower, upper []byte, fn func(key, value []byte) error) (err error) {
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return fmt.Errorf("metastore: scan %q: %w", lower, err)
	}
	defer func() {
		if cerr := it.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("metastore: scan %q: %w", lower, cerr)
		}
	}()
	for ok := it.First(); ok; ok = it.Next() {
		v, verr := it.ValueAndErr()
		if verr != nil {
			return fmt.Errorf("metastore: read %q: %w", it.Key(), verr)
		}
		if err := fn(it.Key(), v); err != nil {
			return err
		}
	}
	return nil
}

// pebbleLogger routes Pebble's log lines to slog: informational chatter at
// Debug so a broker stays quiet, errors at Error.
type pebbleLogger struct{ l *slog.Logger }

func (p pebbleLogger) Infof(format string, args ...any) {
	p.l.Debug("pebble: " + fmt.Sprintf(format, args...))
}

func (p pebbleLogger) Errorf(format string, args ...any) {
	p.l.Error("pebble: " + fmt.Sprintf(format, args...))
}

// Fatalf is called by Pebble on unrecoverable internal inconsistency; Pebble
// does not expect it to return. We panic instead of exiting the process so a
// test or the broker's top level sees the cause.
func (p pebbleLogger) Fatalf(format string, args ...any) {
	msg := "pebble: " + fmt.Sprintf(format, args...)
	p.l.Error(msg)
	panic(msg)
}

var _ io.Closer = (*Store)(nil)

// getBuf returns a pooled scratch buffer; return it with putBuf.
func (s *Store) getBuf() *[]byte {
	if bp, ok := s.bufPool.Get().(*[]byte); ok {
		return bp
	}
	b := make([]byte, 0, 256)
	return &b
}

// putBuf returns bp to the pool unless it grew too large to keep.
func (s *Store) putBuf(bp *[]byte) {
	if cap(*bp) > 64<<10 {
		return
	}
	*bp = (*bp)[:0]
	s.bufPool.Put(bp)
}
