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
		goal, err := l.fsyncUnflushed(target)
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

// fsyncUnflushed fsyncs every segment that may hold bytes between the
// recovery point and target, and returns the offset it covers: the end
// (loaded before the fsyncs start) when target falls in the last segment,
// so that one round serves every appender waiting (group commit), else
// the base of the first segment at or past target.
//
// Such a segment is left alone: after a roll (syncTo of the new segment's
// base, as Kafka's flush of a rolled segment stops below it) that is the
// new active segment. Synced too, its fsync waited for the writeback of
// the pages the appends were dirtying and held the inode's lock they
// write under (ext4 without a journal): with 100 partitions rolling
// within a second, the produce path stalled at every wave of rolls
// (issue 33, OMB shape at 87,000 records/s, fsyncs of 0.1-0.4 s each).
func (l *Log) fsyncUnflushed(target int64) (int64, error) {
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
		if s.base >= target {
			goal = min(goal, s.base)
			break
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

// rollFlusher runs the work each roll leaves for the background (the old
// segment's flush, then its reserved blocks released) one roll at a time,
// on one goroutine of the store, in the order of the rolls.
//
// A goroutine per roll, as before, ran up to a hundred at once when the
// partitions of a topic written at one rate rolled together, each in a
// chain of blocking system calls (ftruncate, fsync of the .log, msync of
// the indexes, fsync of the directory and the epoch checkpoint). With the
// broker on one core (GOMAXPROCS 1), every one of them that blocked kept
// the one P until the runtime's monitor took it back, and every one that
// returned queued for it ahead of the produce path: a runtime trace of
// the OMB shape at 87,000 records/s over 100 partitions had them runnable
// for 4.4 s of goroutine time in a 1.5 s window and the produce path
// stalled for 0.8-1.1 s at each wave of rolls (issue 33). Serialized, a
// wave costs the fsyncs' time in the background, and the recovery points
// move up a little later: nothing waits on them but Flush, which does its
// own fsyncs.
type rollFlusher struct {
	mu   sync.Mutex
	q    []func()
	wake chan struct{} // capacity 1
	stop chan struct{}
	done chan struct{}
}

func newRollFlusher() *rollFlusher {
	f := &rollFlusher{wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go f.run()
	return f
}

// add queues fn; it never blocks.
func (f *rollFlusher) add(fn func()) {
	f.mu.Lock()
	f.q = append(f.q, fn)
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *rollFlusher) run() {
	defer close(f.done)
	for {
		if f.runQueued() {
			continue
		}
		select {
		case <-f.wake:
		case <-f.stop:
			f.runQueued() // what raced with close
			return
		}
	}
}

// runQueued runs what is queued now and reports whether there was any.
func (f *rollFlusher) runQueued() bool {
	f.mu.Lock()
	q := f.q
	f.q = nil
	f.mu.Unlock()
	for _, fn := range q {
		fn()
	}
	return len(q) > 0
}

// close stops the goroutine once the queue is empty. REQUIRES: no roll
// runs or will (the store's logs are closed: each waited for its own
// queued work, Log.bg).
func (f *rollFlusher) close() {
	close(f.stop)
	<-f.done
}
