package replica

// Moving a replica between log dirs (AlterReplicaLogDirs), as Kafka does:
// a future log, "<topic>-<partition>.<uuid>-future" in the target dir
// (engine.FutureLogID), is filled from the current log by a copier (Kafka's
// ReplicaAlterLogDirsThread, fetching from the local log instead of a
// leader: follower appends with the current log's offsets and epochs,
// truncating where the current log was truncated, following its log
// start). Once the future log has reached the current log's end, the swap
// (Kafka's replaceCurrentWithFutureLog) runs under the admin lock: the
// current replica stops and closes, which waits for the appends in flight
// and refuses new ones (NOT_LEADER_OR_FOLLOWER, which clients retry); the
// records appended since the copier's last step are copied; the future
// log is renamed "<topic>-<partition>", the current log deleted, and the
// moved log opened as the partition's replica with the role the old one
// had. A
// future log found at start is a move that did not finish and is deleted
// (Kafka resumes it; here AlterReplicaLogDirs is sent again).

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/replication"
)

// Errors of AlterReplicaLogDirsLocked, besides ErrLogDirOffline.
var (
	// ErrLogDirNotFound: the dir is not in log.dirs (LOG_DIR_NOT_FOUND).
	ErrLogDirNotFound = errors.New("replica: log dir not found in log.dirs")
	// ErrReplicaNotAvailable: no replica of the partition here yet; the
	// dir is remembered for when one is created (REPLICA_NOT_AVAILABLE).
	ErrReplicaNotAvailable = errors.New("replica: no replica of the partition on this broker")
	// ErrMoveUnsupported: the storage backend cannot rename a log
	// (engine.LogRenamer).
	ErrMoveUnsupported = errors.New("replica: the storage backend cannot move logs between dirs")
)

// futureCopyBytes is how much one copier step reads from the current log.
const futureCopyBytes = 1 << 20

// futureIdle is how long a copier with nothing to copy waits before it
// looks again (Kafka's replica.fetch.backoff.ms plays this part).
const futureIdle = 10 * time.Millisecond

// moveThrottle paces the copiers of every move together to
// replica.alter.log.dirs.io.max.bytes.per.second (Kafka's
// ReplicaAlterLogDirs quota), a dynamic broker config: setRate changes it
// while moves run. Safe for concurrent use.
type moveThrottle struct {
	mu sync.Mutex
	// rate is in bytes/s; math.MaxInt64: unbounded; 0 holds the copiers
	// back (Kafka's quota of 0: as --throttle 0 does for moves between
	// brokers). REQUIRES: mu.
	rate int64
	// paid is when the bytes copied so far are paid for at rate: a
	// copier waits until then before its next step. REQUIRES: mu.
	paid time.Time
	// changed is closed (and replaced) by setRate, waking the copiers
	// waiting for paid so that a new rate applies at once. REQUIRES: mu.
	changed chan struct{}
}

func unboundedRate(rate int64) bool { return rate < 0 || rate == math.MaxInt64 }

// held returns a channel closed when the rate changes if the rate is 0
// (no copying until then), else nil.
func (t *moveThrottle) held() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.rate != 0 {
		return nil
	}
	if t.changed == nil {
		t.changed = make(chan struct{})
	}
	return t.changed
}

// setRate makes rate the throttle of every copier from now on: the
// waits already charged at the old rate are forgiven (copiers waiting
// wake and step again), as Kafka's ReplicationQuotaManager.updateQuota
// applies a new quota to the next record.
func (t *moveThrottle) setRate(rate int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if rate == t.rate {
		return
	}
	t.rate = rate
	t.paid = time.Time{}
	if t.changed != nil {
		close(t.changed)
		t.changed = nil
	}
}

// chunk is the most a copier step may read: a second's worth at most.
func (t *moveThrottle) chunk() int {
	t.mu.Lock()
	rate := t.rate
	t.mu.Unlock()
	if unboundedRate(rate) || rate >= futureCopyBytes {
		return futureCopyBytes
	}
	return int(max(rate, 1))
}

// copied charges n bytes and returns how long the copier waits before its
// next step, and a channel closed if the rate changes meanwhile (nil when
// there is no wait).
func (t *moveThrottle) copied(n int) (time.Duration, <-chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if unboundedRate(t.rate) || t.rate == 0 || n <= 0 {
		return 0, nil // a rate of 0: the next step waits in held
	}
	now := time.Now()
	if t.paid.Before(now) {
		t.paid = now
	}
	t.paid = t.paid.Add(time.Duration(float64(n) / float64(t.rate) * float64(time.Second)))
	if t.changed == nil {
		t.changed = make(chan struct{})
	}
	return t.paid.Sub(now), t.changed
}

// SetAlterLogDirsRate applies a new
// replica.alter.log.dirs.io.max.bytes.per.second (bytes/s; math.MaxInt64:
// unbounded) to the moves between log dirs, those in progress included.
// Safe for concurrent use.
func (m *Manager) SetAlterLogDirsRate(rate int64) {
	m.throttle.setRate(rate)
}

// future is a move in progress: the future log of partition id in dir.
type future struct {
	id   engine.PartitionID // the partition
	fid  engine.PartitionID // the future log in dir's store
	dir  *logDir
	log  engine.Log
	stop chan struct{} // closed to cancel the copier
	done chan struct{} // closed when the copier has returned
}

// AlterReplicaLogDirLocked moves the local replica of name-part to the
// log dir path (absolute), as Kafka's ReplicaManager.alterReplicaLogDirs:
// nothing when it is there already; a move to another dir replaces one in
// progress. Errors: ErrLogDirNotFound, ErrLogDirOffline (the target dir,
// the partition's, or any dir while one is offline: a future log is not
// created then, as Kafka does), ErrReplicaNotAvailable (the dir is
// remembered for the replica's creation), ErrMoveUnsupported, or the
// store's. REQUIRES: m.Lock held.
func (m *Manager) AlterReplicaLogDirLocked(name string, part int32, path string) error {
	id := engine.PartitionID{Topic: name, Partition: part}
	d := m.dirByPath(path)
	if d == nil {
		return fmt.Errorf("%w: %s", ErrLogDirNotFound, path)
	}
	if d.failure() != nil {
		return offlineErr(d.path)
	}
	if err := m.Offline(name, part); err != nil {
		return err
	}
	m.dirMu.Lock()
	if f := m.futures[id]; f != nil && f.dir != d {
		m.dirMu.Unlock()
		m.cancelFutureLocked(id)
		m.dirMu.Lock()
	}
	m.preferred[id] = d
	cur, hasFuture := m.dirOf.m[id], m.futures[id] != nil
	m.dirMu.Unlock()
	p := m.Partition(name, part)
	if p == nil || cur == nil {
		return fmt.Errorf("%w: %s-%d", ErrReplicaNotAvailable, name, part)
	}
	if cur == d || hasFuture {
		return nil
	}
	if m.anyDirOffline() {
		return fmt.Errorf("%w: %w: not creating a future log while a log dir is offline", ErrLogDirOffline, engine.ErrStorage)
	}
	// The future log is of the backend of the current one (the topic's
	// storage.backend), in the target dir's store of that backend.
	t := m.reg.get(name)
	backend := cur.store.BackendOf(id)
	if backend == "" {
		backend = t.Config.Backend
	}
	if !d.store.canRename(backend) {
		return ErrMoveUnsupported
	}
	var u [16]byte
	rand.Read(u[:])
	fid := engine.FutureLogID(id, hex.EncodeToString(u[:]))
	flog, err := d.store.CreateLog(backend, fid, t.Config.Log)
	if err != nil {
		if isIOError(err) {
			m.failDir(d, err)
		}
		return fmt.Errorf("replica: create future log %s-%d in %s: %w", name, part, d.path, err)
	}
	f := &future{id: id, fid: fid, dir: d, log: flog, stop: make(chan struct{}), done: make(chan struct{})}
	m.dirMu.Lock()
	m.futures[id] = f
	m.dirMu.Unlock()
	m.log.Info("replica: moving replica to another log dir", "topic", name, "partition", part, "from", cur.path, "to", d.path)
	m.bg.Add(1)
	go func() {
		defer m.bg.Done()
		m.runFuture(f)
	}()
	return nil
}

// cancelFutureLocked stops the move of id, if any, and deletes its future
// log. REQUIRES: m.Lock held.
func (m *Manager) cancelFutureLocked(id engine.PartitionID) {
	m.dirMu.Lock()
	f := m.futures[id]
	delete(m.futures, id)
	m.dirMu.Unlock()
	if f == nil {
		return
	}
	close(f.stop)
	<-f.done
	f.log.Close()
	if f.dir.failure() == nil {
		if err := f.dir.store.DeleteLog(f.fid); err != nil && !errors.Is(err, engine.ErrNoLog) {
			m.log.Warn("replica: delete future log", "dir", f.dir.path, "topic", id.Topic, "partition", id.Partition, "err", err)
		}
	}
	m.log.Info("replica: log dir move cancelled", "topic", id.Topic, "partition", id.Partition, "to", f.dir.path)
}

// runFuture is a move's copier: it copies the current log into the
// future log until they meet, then swaps them (under the admin lock, which
// it takes with TryLock so that a cancellation, which holds the lock while
// it waits for the copier, is never blocked by it).
func (m *Manager) runFuture(f *future) {
	defer close(f.done)
	for {
		select {
		case <-f.stop:
			return
		default:
		}
		if held := m.throttle.held(); held != nil {
			select {
			case <-f.stop:
				return
			case <-held:
			}
			continue
		}
		p := m.Partition(f.id.Topic, f.id.Partition)
		caught, copied := false, false
		var err error
		var n int
		if p != nil {
			before := f.log.Size()
			caught, copied, err = copyStep(p.Log(), f.log, m.throttle.chunk())
			n = int(f.log.Size() - before)
		}
		if wait, changed := m.throttle.copied(n); wait > 0 {
			timer := time.NewTimer(wait)
			select {
			case <-f.stop:
				timer.Stop()
				return
			case <-changed:
				timer.Stop()
			case <-timer.C:
			}
		}
		switch {
		case err != nil && errors.Is(err, engine.ErrClosed):
			// the replica is being replaced or closed: look again
		case err != nil:
			m.log.Warn("replica: log dir move: copy failed", "topic", f.id.Topic, "partition", f.id.Partition, "to", f.dir.path, "err", err)
			if isIOError(err) && f.log.EndOffset() >= 0 {
				// Which log failed is told by the logs themselves: a
				// failed future log takes its dir offline (which
				// cancels the move), a failed current log its own.
				if fl, ok := f.log.(failer); ok && fl.Failure() != nil {
					m.failDir(f.dir, err)
				} else {
					m.ReportStorageError(p, err)
				}
			}
		case caught:
			if m.reg.admin.TryLock() {
				done := m.swapFutureLocked(f)
				m.reg.admin.Unlock()
				if done {
					return
				}
			}
		}
		if !copied {
			select {
			case <-f.stop:
				return
			case <-time.After(futureIdle):
			}
		}
	}
}

// copyStep moves dst one step closer to src: it truncates dst where src
// diverged from it (by their leader epochs) or was truncated below it,
// follows src's log start, and appends at most maxBytes of src's
// batches (at least one whole batch). caught reports that dst ends where src does; copied that
// batches were appended.
func copyStep(src, dst engine.Log, maxBytes int) (caught, copied bool, err error) {
	ss, se := src.StartOffset(), src.EndOffset()
	de := dst.EndOffset()
	if div := divergence(src.LeaderEpochs(), dst.LeaderEpochs(), se, de); div < de {
		if err := dst.Truncate(div); err != nil {
			if err := truncateFully(dst, ss); err != nil {
				return false, false, err
			}
		}
		de = dst.EndOffset()
	}
	if de < ss {
		if err := truncateFully(dst, ss); err != nil {
			return false, false, err
		}
		de = ss
	}
	if ds := dst.StartOffset(); ds < ss && ss <= de {
		if err := dst.DeleteBefore(ss); err != nil {
			return false, false, err
		}
	}
	// A tiered log's log start below its local start (segment/logstart.go).
	if c, ok := dst.(interface{ CopyLogStartOffset(engine.Log) error }); ok {
		if err := c.CopyLogStartOffset(src); err != nil {
			return false, false, err
		}
	}
	if de >= se {
		return true, false, nil
	}
	sl, err := src.Read(de, maxBytes, -1)
	if err != nil {
		return false, false, err
	}
	data, err := sl.AppendTo(nil)
	sl.Release()
	if err != nil {
		return false, false, fmt.Errorf("%w: %w", engine.ErrStorage, err)
	}
	if len(data) == 0 {
		return false, false, nil
	}
	if _, err := dst.Append(data, engine.AppendOptions{}); err != nil {
		return false, false, err
	}
	return dst.EndOffset() >= src.EndOffset(), true, nil
}

// truncateFully restarts l empty at offset.
func truncateFully(l engine.Log, offset int64) error {
	ft, ok := l.(engine.FullTruncater)
	if !ok {
		return fmt.Errorf("replica: log cannot restart at %d", offset)
	}
	return ft.TruncateFullyAndStartAt(offset)
}

// divergence returns the offset up to which a copy with epoch history
// dst, ending at dstEnd, agrees with a source with history src ending at
// srcEnd, as a follower finds it with OffsetsForLeaderEpoch (KIP-279):
// the source's end offset for the copy's last epoch; when the source
// lacks that epoch, the smaller of the two logs' end offsets for the
// largest epoch the source has below it. dstEnd when the copy has no
// epoch yet. A copy truncated there may diverge again further back: the
// copier asks again at its next step.
func divergence(src, dst []engine.EpochEntry, srcEnd, dstEnd int64) int64 {
	if len(dst) == 0 {
		return dstEnd
	}
	last := dst[len(dst)-1].Epoch
	e, end := endForEpoch(src, last, srcEnd)
	if e < 0 {
		return 0 // nothing in common: the copy starts over
	}
	if e == last {
		return min(end, dstEnd)
	}
	_, dend := endForEpoch(dst, e, dstEnd)
	return min(end, dend)
}

// endForEpoch returns the largest epoch of entries that is at most epoch
// (-1 when none is) and the offset where it ends: the next entry's start,
// or logEnd for the last one.
func endForEpoch(entries []engine.EpochEntry, epoch int32, logEnd int64) (int32, int64) {
	i := -1
	for j, e := range entries {
		if e.Epoch > epoch {
			break
		}
		i = j
	}
	if i < 0 {
		return -1, 0
	}
	if i+1 < len(entries) {
		return entries[i].Epoch, entries[i+1].StartOffset
	}
	return entries[i].Epoch, logEnd
}

// swapFutureLocked replaces the current replica of f.id with the future
// log, if it is still caught up once the current replica has stopped
// taking appends; false when it is not (the copier goes on). REQUIRES:
// m.Lock held.
func (m *Manager) swapFutureLocked(f *future) bool {
	m.dirMu.RLock()
	live := m.futures[f.id] == f
	cur := m.dirOf.m[f.id]
	m.dirMu.RUnlock()
	t := m.reg.get(f.id.Topic)
	if !live || cur == nil || t == nil || int(f.id.Partition) >= len(t.Parts) || t.Parts[f.id.Partition] == nil {
		return false
	}
	old := t.Parts[f.id.Partition]
	if f.log.EndOffset() < old.LogEndOffset() {
		return false
	}
	st := old.State()
	hw := old.HighWatermark()
	if m.hooks != nil {
		m.hooks.ReplicaStopped(old)
	}
	if err := old.Close(); err != nil {
		m.log.Warn("replica: log dir move: close current replica", "topic", f.id.Topic, "partition", f.id.Partition, "err", err)
	}
	fail := func(err error) bool {
		// The current replica is closed: reopen it where it is, so
		// the partition keeps serving, and drop the move.
		m.log.Error("replica: log dir move failed; reopening the current replica", "topic", f.id.Topic, "partition", f.id.Partition, "err", err)
		m.dirMu.Lock()
		delete(m.futures, f.id)
		m.dirMu.Unlock()
		f.log.Close()
		f.dir.store.DeleteLog(f.fid)
		m.reopenLocked(t, f.id.Partition, st, hw)
		return true
	}
	// The appends that landed since the copier's last step.
	curLog, err := cur.store.OpenLog(f.id, t.Config.Log)
	if err != nil {
		return fail(err)
	}
	for {
		caught, _, err := copyStep(curLog, f.log, futureCopyBytes) // unthrottled: appends wait
		if err != nil {
			curLog.Close()
			return fail(err)
		}
		if caught {
			break
		}
	}
	if err := f.log.Flush(); err != nil {
		curLog.Close()
		return fail(err)
	}
	curLog.Close()
	f.log.Close()
	// As Kafka's replaceCurrentWithFutureLog: the future log takes the
	// partition's name first, then the current log goes. A crash between
	// leaves the partition whole in both dirs (the next start keeps the
	// first dir's and logs the other), never in neither.
	if err := f.dir.store.RenameLog(f.fid, f.id); err != nil {
		if isIOError(err) {
			m.failDir(f.dir, err)
		}
		return fail(err)
	}
	m.dirMu.Lock()
	delete(m.futures, f.id)
	m.dirOf.set(f.id, f.dir)
	m.dirMu.Unlock()
	if err := cur.store.DeleteLog(f.id); err != nil && !errors.Is(err, engine.ErrNoLog) {
		m.log.Error("replica: log dir move: delete the old log; it stays on disk", "dir", cur.path, "topic", f.id.Topic, "partition", f.id.Partition, "err", err)
		if isIOError(err) {
			m.failDir(cur, err)
		}
	}
	m.reopenLocked(t, f.id.Partition, st, hw)
	m.log.Info("replica: replica moved to another log dir", "topic", f.id.Topic, "partition", f.id.Partition, "from", cur.path, "to", f.dir.path)
	return true
}

// reopenLocked opens partition i of t again, from the dir dirOf names,
// with role st (cluster mode) and high watermark hw, and publishes it; a
// failure leaves the slot empty (the partition offline here). REQUIRES:
// m.Lock held.
func (m *Manager) reopenLocked(t *Topic, i int32, st replication.LeaderAndIsr, hw int64) {
	t = m.reg.get(t.Name)
	if t == nil {
		return
	}
	p, err := m.openPartitionHW(t, i, openReplica, hw)
	if err != nil {
		m.log.Error("replica: reopen replica", "topic", t.Name, "partition", i, "err", err)
		m.setPartitionLocked(t, i, nil)
		return
	}
	if m.hooks != nil {
		if st.Leader == m.nodeID {
			err = p.MakeLeader(st)
		} else {
			err = p.MakeFollower(st)
		}
		if err != nil {
			m.log.Error("replica: reopen replica: role", "topic", t.Name, "partition", i, "err", err)
		}
		m.hooks.RoleChanged(p, st)
	}
	m.setPartitionLocked(t, i, p)
}
