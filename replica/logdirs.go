package replica

// Several log dirs (JBOD, Kafka's log.dirs): each dir is one engine.Store
// holding its own partitions, "<dir>/<topic>-<partition>" for the segment
// backend, with its own recovery-point and high-watermark checkpoints (as
// Kafka keeps recovery-point-offset-checkpoint and
// replication-offset-checkpoint per dir). The Manager knows which dir holds
// each local replica (dirOf), puts a new replica in the live dir holding
// the fewest (Kafka's LogManager.nextLogDirs), and takes a dir offline
// when one of its logs meets an I/O error (Kafka's LogDirFailureChannel
// and ReplicaManager.handleLogDirFailure): the dir's replicas stop and
// close, their partitions answer KAFKA_STORAGE_ERROR (Offline), and
// Options.OnLogDirFailure is told, so a cluster member can ask the
// controller to move their leadership away. The other dirs keep serving.
// A dir that could not be opened at start is offline from the start; a
// partition the metastore lists (single node) or the controller names as
// not new (cluster) that is in no live dir is then offline rather than
// created empty, since it may be in the missing dir.
//
// Moving a replica between dirs (AlterReplicaLogDirs) is in future.go.

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"sort"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sluice/sluice/engine"
)

// ErrLogDirOffline marks an operation on a partition whose log dir is
// offline. The errors carrying it also wrap engine.ErrStorage, so that
// they are answered KAFKA_STORAGE_ERROR.
var ErrLogDirOffline = errors.New("replica: log dir offline")

// LogDirCheckInterval is how often the Manager looks for logs that failed
// on their own (a follower's append, retention, the cleaner): their dir
// goes offline. Failures the Manager or the produce path see go at once.
const LogDirCheckInterval = time.Second

// LogDir is one directory of log.dirs as the broker opened it.
type LogDir struct {
	// Path is the directory, absolute.
	Path string
	// Store holds the dir's logs; nil when the dir could not be opened
	// (then Err says why and the dir is offline from the start).
	Store engine.Store
	Err   error
	// Backend is Store's backend (the broker's storage.backend; "":
	// segment). Others are the stores of other backends found in the dir
	// at start, by backend; Open opens another backend's store in the dir
	// when a topic of it first places a log there (nil: none can be; the
	// stores it opens are the caller's to close). See backends.go.
	Backend string
	Others  map[string]engine.Store
	Open    func(backend string) (engine.Store, error)
}

// logDir is a log dir as the Manager runs it.
type logDir struct {
	path  string
	store *backendStores // nil: offline from the start
	// failed is the error that took the dir offline (nil: online). Set
	// once; a dir never comes back online before a restart, as in Kafka.
	failed atomic.Pointer[error]
}

// failure returns why d is offline, nil while it is online.
func (d *logDir) failure() error {
	if e := d.failed.Load(); e != nil {
		return *e
	}
	return nil
}

// offlineErr is the error an operation on a partition of offline dir d
// returns.
func offlineErr(path string) error {
	return fmt.Errorf("%w: %w: %s", ErrLogDirOffline, engine.ErrStorage, path)
}

// initDirs sets up m.dirs from opts (one dir of opts.Store when opts.Dirs
// is empty) and finds the logs each live dir holds. A partition found in
// two dirs is logged and kept in the first; a future log found at start
// is a move that did not finish: it is deleted (Kafka would resume it).
func (m *Manager) initDirs(opts Options) {
	dirs := opts.Dirs
	if len(dirs) == 0 {
		path := ""
		if len(opts.Config.LogDirs) > 0 {
			path = opts.Config.LogDirs[0]
			if abs, err := filepath.Abs(path); err == nil {
				path = abs
			}
		}
		dirs = []LogDir{{Path: path, Store: opts.Store}}
	}
	m.dirOf = newDirIndex()
	m.offline = map[engine.PartitionID]*logDir{}
	m.futures = map[engine.PartitionID]*future{}
	for _, od := range dirs {
		d := &logDir{path: od.Path}
		if od.Store != nil {
			d.store = newBackendStores(od)
		}
		m.dirs = append(m.dirs, d)
		if od.Store == nil {
			err := od.Err
			if err == nil {
				err = errors.New("no store")
			}
			m.markFailed(d, fmt.Errorf("log dir offline at start: %w", err))
			continue
		}
		ids, dup, err := d.store.ListLogs()
		if err != nil {
			m.failDirNow(d, err)
			continue
		}
		for _, id := range dup {
			m.log.Error("replica: partition found in the stores of two storage backends of a log dir; using the broker's", "dir", d.path, "topic", id.Topic, "partition", id.Partition)
		}
		for _, id := range ids {
			if f, _, ok := engine.ParseFutureLogID(id); ok {
				m.log.Warn("replica: deleting the future log of a log dir move that did not finish", "dir", d.path, "topic", f.Topic, "partition", f.Partition)
				if err := d.store.DeleteLog(id); err != nil && !errors.Is(err, engine.ErrNoLog) {
					m.log.Error("replica: delete future log", "dir", d.path, "err", err)
				}
				continue
			}
			if prev := m.dirOf.m[id]; prev != nil {
				m.log.Error("replica: partition found in two log dirs; using the first", "topic", id.Topic, "partition", id.Partition, "dirs", []string{prev.path, d.path})
				continue
			}
			m.dirOf.set(id, d)
		}
	}
}

// liveDirs returns the dirs that are online.
func (m *Manager) liveDirs() []*logDir {
	var out []*logDir
	for _, d := range m.dirs {
		if d.failure() == nil {
			out = append(out, d)
		}
	}
	return out
}

// anyDirOffline reports whether some dir is offline.
func (m *Manager) anyDirOffline() bool { return len(m.liveDirs()) < len(m.dirs) }

// dirByPath returns the dir at path, or nil.
func (m *Manager) dirByPath(path string) *logDir {
	for _, d := range m.dirs {
		if d.path == path {
			return d
		}
	}
	return nil
}

// logDirOf returns the dir holding id's log, or nil.
func (m *Manager) logDirOf(id engine.PartitionID) *logDir {
	m.dirMu.RLock()
	defer m.dirMu.RUnlock()
	return m.dirOf.m[id]
}

// setDirOf records that d holds id's log (nil: none).
func (m *Manager) setDirOf(id engine.PartitionID, d *logDir) {
	m.dirMu.Lock()
	defer m.dirMu.Unlock()
	if d == nil {
		m.dirOf.del(id)
	} else {
		m.dirOf.set(id, d)
		delete(m.offline, id)
	}
}

// nextDir returns the live dir a new log goes to: the one holding the
// fewest logs (future logs included), the first of those on a tie, as
// Kafka's LogManager.nextLogDirs orders them; nil when every dir is
// offline.
func (m *Manager) nextDir() *logDir {
	m.dirMu.RLock()
	defer m.dirMu.RUnlock()
	// The logs per dir are counted as they come and go (dirIndex): a
	// count here per new log made creating a topic of n partitions
	// quadratic (100,000 partitions: minutes). Moves are few.
	count := maps.Clone(m.dirOf.n)
	for _, f := range m.futures {
		count[f.dir]++
	}
	var best *logDir
	for _, d := range m.dirs {
		if d.failure() != nil {
			continue
		}
		if best == nil || count[d] < count[best] {
			best = d
		}
	}
	return best
}

// Offline reports whether partition part of topic name is offline here:
// its log is in a log dir that failed (Kafka's HostedPartition.Offline),
// with the error to answer (wrapping ErrLogDirOffline and
// engine.ErrStorage). Cheap when no dir has failed.
func (m *Manager) Offline(name string, part int32) error {
	if m.failedDirs.Load() == 0 {
		return nil
	}
	m.dirMu.RLock()
	d := m.offline[engine.PartitionID{Topic: name, Partition: part}]
	m.dirMu.RUnlock()
	if d == nil {
		return nil
	}
	return offlineErr(d.path)
}

// isIOError reports whether err is a failure of the disk under a log (an
// errno from the operating system, or a log's sticky storage failure)
// rather than a missing or damaged log.
func isIOError(err error) bool {
	var errno syscall.Errno
	return errors.Is(err, engine.ErrStorage) || errors.As(err, &errno)
}

// ReportStorageError is told that an operation on p's log failed with err
// (the produce path, the fetcher): an I/O error takes p's dir offline.
func (m *Manager) ReportStorageError(p *Partition, err error) {
	if p == nil || !isIOError(err) {
		return
	}
	if d := m.logDirOf(engine.PartitionID{Topic: p.Topic(), Partition: p.Index()}); d != nil {
		m.failDir(d, err)
	}
}

// failDir takes d offline because of cause (once; later calls do
// nothing) and stops its partitions in the background: the caller may
// hold the admin lock or a partition's.
func (m *Manager) failDir(d *logDir, cause error) {
	if !m.markFailed(d, cause) {
		return
	}
	m.bg.Add(1)
	go func() {
		defer m.bg.Done()
		m.Lock()
		defer m.Unlock()
		m.stopDirLocked(d)
	}()
}

// failDirNow is failDir for the caller that holds the admin lock or runs
// before the Manager is shared (New). It stops d's partitions itself.
func (m *Manager) failDirNow(d *logDir, cause error) {
	if m.markFailed(d, cause) {
		m.stopDirLocked(d)
	}
}

// markFailed records cause as d's failure; false when d had failed
// already.
func (m *Manager) markFailed(d *logDir, cause error) bool {
	if !d.failed.CompareAndSwap(nil, &cause) {
		return false
	}
	m.failedDirs.Add(1)
	m.log.Error("replica: log dir failed; its partitions go offline, the other dirs keep serving", "dir", d.path, "err", cause)
	return true
}

// stopDirLocked stops and closes every replica whose log is in d, which
// has failed: each slot becomes empty and the partition offline; moves
// into or out of d are cancelled; Options.OnLogDirFailure is told.
// REQUIRES: m.Lock held (or m not yet shared).
func (m *Manager) stopDirLocked(d *logDir) {
	m.dirMu.Lock()
	var ids []engine.PartitionID
	for id, dd := range m.dirOf.m {
		if dd == d {
			ids = append(ids, id)
			m.offline[id] = d
			m.dirOf.del(id)
		}
	}
	m.dirMu.Unlock()
	sort.Slice(ids, func(i, j int) bool {
		if ids[i].Topic != ids[j].Topic {
			return ids[i].Topic < ids[j].Topic
		}
		return ids[i].Partition < ids[j].Partition
	})
	for _, id := range ids {
		m.cancelFutureLocked(id)
		t := m.reg.get(id.Topic)
		if t == nil || int(id.Partition) >= len(t.Parts) || t.Parts[id.Partition] == nil {
			continue
		}
		p := t.Parts[id.Partition]
		if m.hooks != nil {
			m.hooks.ReplicaStopped(p)
		}
		m.setPartitionLocked(t, id.Partition, nil)
		if err := p.Close(); err != nil {
			m.log.Warn("replica: close replica of a failed log dir", "topic", id.Topic, "partition", id.Partition, "err", err)
		}
	}
	for id, f := range m.futures {
		if f.dir == d {
			m.cancelFutureLocked(id)
		}
	}
	m.log.Error("replica: log dir offline", "dir", d.path, "offline_partitions", len(ids), "live_dirs", len(m.liveDirs()))
	if len(m.liveDirs()) == 0 {
		m.log.Error("replica: every log dir has failed; this broker serves no partition", "dirs", len(m.dirs))
	}
	if m.onDirFailure != nil {
		m.onDirFailure(d.path)
	}
}

// checkFailedLogs takes offline the dir of every local replica whose log
// has failed on its own (Start runs it every LogDirCheckInterval).
func (m *Manager) checkFailedLogs() {
	m.each(func(t *Topic, p *Partition) {
		if err := p.Failure(); err != nil {
			m.ReportStorageError(p, err)
		}
	})
}

// OfflineLogDirs returns the paths of the dirs that are offline, in
// log.dirs order, with their errors.
func (m *Manager) OfflineLogDirs() (paths []string, errs []error) {
	for _, d := range m.dirs {
		if err := d.failure(); err != nil {
			paths = append(paths, d.path)
			errs = append(errs, err)
		}
	}
	return paths, errs
}

// LogDirInfo describes one log dir for DescribeLogDirs.
type LogDirInfo struct {
	Path string
	// Err is why the dir is offline (nil: online); an offline dir lists
	// no replicas.
	Err      error
	Replicas []LogDirReplica
}

// LogDirReplica is one replica's log in a dir.
type LogDirReplica struct {
	Topic     string
	Partition int32
	Size      int64
	// OffsetLag is, for a current replica, its high watermark minus its
	// log end offset (0 on a leader), and for a future replica, how far
	// its log end is behind the current replica's (Kafka's
	// ReplicaManager.describeLogDirs).
	OffsetLag int64
	IsFuture  bool
}

// LogDirs describes every dir in log.dirs order, with the replicas each
// holds (topics sorted by name, partitions ascending) and the future
// replicas of moves in progress.
func (m *Manager) LogDirs() []LogDirInfo {
	out := make([]LogDirInfo, len(m.dirs))
	index := map[*logDir]int{}
	for i, d := range m.dirs {
		out[i] = LogDirInfo{Path: d.path, Err: d.failure()}
		index[d] = i
	}
	m.dirMu.RLock()
	dirOf := make(map[engine.PartitionID]*logDir, len(m.dirOf.m))
	for id, d := range m.dirOf.m {
		dirOf[id] = d
	}
	futures := make(map[engine.PartitionID]*future, len(m.futures))
	for id, f := range m.futures {
		futures[id] = f
	}
	m.dirMu.RUnlock()
	m.each(func(t *Topic, p *Partition) {
		id := engine.PartitionID{Topic: t.Name, Partition: p.Index()}
		d := dirOf[id]
		if d == nil || d.failure() != nil {
			return
		}
		i := index[d]
		out[i].Replicas = append(out[i].Replicas, LogDirReplica{
			Topic: t.Name, Partition: p.Index(), Size: p.Size(),
			OffsetLag: max(0, p.HighWatermark()-p.LogEndOffset()),
		})
		if f := futures[id]; f != nil && f.dir.failure() == nil {
			j := index[f.dir]
			out[j].Replicas = append(out[j].Replicas, LogDirReplica{
				Topic: t.Name, Partition: p.Index(), Size: f.log.Size(),
				OffsetLag: max(0, p.LogEndOffset()-f.log.EndOffset()), IsFuture: true,
			})
		}
	})
	return out
}

// LogDirOf returns the path of the dir holding the local replica of
// name-part, "" when there is none.
func (m *Manager) LogDirOf(name string, part int32) string {
	if d := m.logDirOf(engine.PartitionID{Topic: name, Partition: part}); d != nil {
		return d.path
	}
	return ""
}

// eachLiveStore calls fn with every live dir.
func (m *Manager) eachLiveStore(fn func(d *logDir)) {
	for _, d := range m.liveDirs() {
		fn(d)
	}
}

// OfflinePartitionCount returns how many partitions are offline here
// because their log dir failed.
func (m *Manager) OfflinePartitionCount() int {
	m.dirMu.RLock()
	defer m.dirMu.RUnlock()
	return len(m.offline)
}

// LogDirPaths returns the paths of the log dirs in log.dirs order, with
// whether each is offline.
func (m *Manager) LogDirPaths() (paths []string, offline []bool) {
	for _, d := range m.dirs {
		paths = append(paths, d.path)
		offline = append(offline, d.failure() != nil)
	}
	return paths, offline
}

// dirIndex maps each local log to its dir and counts the logs of each dir,
// so that placing a new log costs the number of dirs, not of logs.
// REQUIRES: m.dirMu held for writing to change it, for reading to read it.
type dirIndex struct {
	m map[engine.PartitionID]*logDir
	n map[*logDir]int
}

func newDirIndex() dirIndex {
	return dirIndex{m: map[engine.PartitionID]*logDir{}, n: map[*logDir]int{}}
}

// set records that d holds id's log.
func (x dirIndex) set(id engine.PartitionID, d *logDir) {
	x.del(id)
	x.m[id] = d
	x.n[d]++
}

// del forgets id's log, if any.
func (x dirIndex) del(id engine.PartitionID) {
	d, ok := x.m[id]
	if !ok {
		return
	}
	delete(x.m, id)
	if x.n[d]--; x.n[d] <= 0 {
		delete(x.n, d)
	}
}

// OfflineFunc returns a check of whether a partition is offline here (its
// log dir failed), or nil when no partition is: what a Metadata answer
// consults for each of its partitions.
func (m *Manager) OfflineFunc() func(name string, part int32) bool {
	if m.failedDirs.Load() == 0 {
		return nil
	}
	return func(name string, part int32) bool { return m.Offline(name, part) != nil }
}
