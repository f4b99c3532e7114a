package segment

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/sluice/sluice/engine"
)

// syncer runs the fsyncs of one log and keeps its recovery point: every
// offset below point is on disk. Concurrent callers of syncTo share fsyncs
// (group commit): one caller runs an fsync covering everything appended
// when it started; callers arriving meanwhile wait for it, and if it did
// not cover them, one of them runs the next, which covers them all. With
// flush.messages=1 and N concurrent appenders, that is about two fsyncs per
// wave instead of N.
type syncer struct {
	mu      sync.Mutex
	cond    sync.Cond // signalled when an fsync ends; uses mu
	running bool      // an fsync is in progress. REQUIRES: mu
	waiters int       // callers waiting for an fsync. REQUIRES: mu
	// gen counts moves of point by Truncate and restarts. A round that
	// began under another gen does not raise point: its goal was read
	// before the log was cut and may lie above what it now holds.
	// REQUIRES: mu
	gen    uint64
	point  atomic.Int64
	rounds atomic.Int64 // fsyncs run, for tests and metrics
}

// syncTo returns once every offset below target is durable (or below the
// log end offset, if the log was truncated since). A failed fsync fails
// the log (see Log); on a failed log, syncTo returns the failure, even
// for a target already durable.
func (l *Log) syncTo(target int64) error {
	s := &l.syncer
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if err := l.failure(); err != nil {
			return err
		}
		if end := l.end.Load(); target > end {
			target = end
		}
		if s.point.Load() >= target {
			return nil
		}
		if s.running {
			s.waiters++
			s.cond.Wait()
			s.waiters--
			continue
		}
		s.running = true
		gen := s.gen
		s.mu.Unlock()
		goal, err := l.fsyncUnflushed()
		s.mu.Lock()
		s.running = false
		s.rounds.Add(1)
		switch {
		case errors.Is(err, engine.ErrClosed):
			s.cond.Broadcast()
			return err
		case err != nil:
			l.fail(err)
		case gen == s.gen && goal > s.point.Load():
			s.point.Store(goal)
		}
		s.cond.Broadcast()
	}
}

// fsyncOff, when set, turns every fsync of the package into a no-op. Only
// tests set it: those that simulate a crash by abandoning a store in the
// same process, for which the page cache is the disk, and that would
// otherwise spend their time in fsync (tens of ms each on some VMs).
var fsyncOff atomic.Bool

// testHookFsync, when set (by tests), runs at the start of every fsync
// round.
var testHookFsync func()

// lowerRecoveryPoint moves the recovery point down to end (after Truncate).
func (l *Log) lowerRecoveryPoint(end int64) {
	s := &l.syncer
	s.mu.Lock()
	s.gen++
	if s.point.Load() > end {
		s.point.Store(end)
	}
	s.mu.Unlock()
}

// resetRecoveryPoint sets the recovery point to the offset an emptied log
// restarted at: it holds nothing below it to lose.
func (l *Log) resetRecoveryPoint(offset int64) {
	s := &l.syncer
	s.mu.Lock()
	s.gen++
	s.point.Store(offset)
	s.mu.Unlock()
}

// fsyncUnflushed fsyncs every segment that may hold bytes past the
// recovery point and returns the end offset it covers (loaded before the
// fsyncs start).
func (l *Log) fsyncUnflushed() (int64, error) {
	goal := l.end.Load()
	if testHookFsync != nil {
		testHookFsync()
	}
	point := l.syncer.point.Load()
	l.mu.RLock()
	defer l.mu.RUnlock()
	if len(l.segs) == 0 { // closeLog closed them
		return 0, errClosedLog
	}
	for i, s := range l.segs {
		if i+1 < len(l.segs) && l.segs[i+1].base <= point {
			continue
		}
		// A segment the cache closed reopens: its written bytes may
		// still be dirty in the page cache, and fsync of any descriptor
		// of the file writes them (and reports a writeback error that
		// happened while it was closed).
		if err := s.pin(); err != nil {
			return 0, err
		}
		err := s.flush()
		s.unpin()
		if err != nil {
			return 0, err
		}
	}
	// The epoch checkpoint an append wrote without fsync (writeEpochs):
	// durable before the recovery point passes the batch that needed it.
	if l.newDirs.And(^uint32(unsyncedEpochs))&unsyncedEpochs != 0 {
		if err := l.writeEpochs(true); err != nil {
			l.newDirs.Or(unsyncedEpochs)
			return 0, err
		}
	}
	// The entries of files and directories created since the last
	// flush, after the files' data: the flush is not done until a crash
	// can no longer lose the names.
	const dirs = newLogDir | newParentDir
	if d := l.newDirs.And(^uint32(dirs)) & dirs; d != 0 {
		if err := syncDir(l.dir); err != nil {
			return 0, fmt.Errorf("segment: fsync %s: %w", l.dir, err)
		}
		if d&newParentDir != 0 {
			if err := syncDir(l.store.dir); err != nil {
				return 0, fmt.Errorf("segment: fsync %s: %w", l.store.dir, err)
			}
		}
	}
	return goal, nil
}
