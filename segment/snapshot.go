package segment

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sluice/sluice/engine"
)

// Producer-state snapshots (engine.SnapshotStore): one file per snapshot,
// <20-digit offset>.snapshot in the partition dir, as Kafka names them. The
// bytes are the caller's (replication writes Kafka's format); this file
// only names, writes, finds and removes the files. A snapshot is written
// to a temp name and renamed (writeFileRenamed), so a process crash leaves
// no torn .snapshot, only a .snapshot.tmp that scanDir removes. It is not
// fsynced: Store.Close's syncfs makes it durable (replication snapshots
// every partition as it closes: two fsyncs each were most of a clean
// stop), and a machine crash before that may leave it missing or torn,
// which the caller detects (replication's format has a CRC) and pays for
// with a longer replay (see engine.SnapshotStore). Where the store has no
// syncfs (Store.dirf nil: no Close-time sync covers the file) it is
// written with writeFileAtomic's fsyncs instead, as before. Snapshots
// are not deleted with segments: the caller keeps the last few and drops
// the ones above a truncation; restartAtLocked drops them all.

var _ engine.SnapshotStore = (*Log)(nil)

// SaveSnapshot implements engine.SnapshotStore.
func (l *Log) SaveSnapshot(offset int64, data []byte) error {
	if offset < 0 {
		return fmt.Errorf("%w: snapshot at %d in %s", engine.ErrOffsetOutOfRange, offset, l.dir)
	}
	l.snapMu.Lock()
	defer l.snapMu.Unlock()
	if l.closed.Load() {
		return errClosedLog
	}
	path := segmentPath(l.dir, offset, snapshotSuffix)
	if l.store.dirf == nil {
		return writeFileAtomic(path, data)
	}
	return writeFileRenamed(path, data)
}

// LatestSnapshot implements engine.SnapshotStore.
func (l *Log) LatestSnapshot(upTo int64) (offset int64, data []byte, ok bool, err error) {
	l.snapMu.Lock()
	defer l.snapMu.Unlock()
	if l.closed.Load() {
		return 0, nil, false, errClosedLog
	}
	offs, err := l.snapshotOffsets()
	if err != nil {
		return 0, nil, false, err
	}
	for _, off := range offs {
		if off <= upTo && (!ok || off > offset) {
			offset, ok = off, true
		}
	}
	if !ok {
		return 0, nil, false, nil
	}
	path := segmentPath(l.dir, offset, snapshotSuffix)
	data, err = os.ReadFile(path)
	if err != nil {
		return 0, nil, false, fmt.Errorf("segment: read snapshot %s: %w", path, err)
	}
	return offset, data, true, nil
}

// DeleteSnapshotsFrom implements engine.SnapshotStore.
func (l *Log) DeleteSnapshotsFrom(offset int64) error {
	return l.deleteSnapshots(func(off int64) bool { return off >= offset })
}

// DeleteSnapshotsBefore implements engine.SnapshotStore.
func (l *Log) DeleteSnapshotsBefore(offset int64) error {
	return l.deleteSnapshots(func(off int64) bool { return off < offset })
}

// SnapshotDue implements engine.SnapshotStore: the base offset of the
// active segment, so the caller snapshots once after each roll.
func (l *Log) SnapshotDue() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if len(l.segs) == 0 {
		return -1
	}
	return l.active().base
}

func (l *Log) deleteSnapshots(drop func(int64) bool) error {
	if l.closed.Load() {
		return errClosedLog
	}
	return l.removeSnapshots(drop)
}

// removeSnapshots removes the snapshot files whose offset drop accepts.
// Removal needs no directory fsync: a snapshot that comes back after a
// crash is one the caller would have found stale or dropped anyway, as
// it checks the snapshot it loads against the log.
func (l *Log) removeSnapshots(drop func(int64) bool) error {
	l.snapMu.Lock()
	defer l.snapMu.Unlock()
	offs, err := l.snapshotOffsets()
	if err != nil {
		return err
	}
	for _, off := range offs {
		if !drop(off) {
			continue
		}
		path := segmentPath(l.dir, off, snapshotSuffix)
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("segment: remove snapshot: %w", err)
		}
	}
	return nil
}

// snapshotOffsets lists the offsets of the snapshot files in the log's
// dir, in no particular order; names that do not parse are skipped.
// REQUIRES: snapMu.
func (l *Log) snapshotOffsets() ([]int64, error) {
	entries, err := os.ReadDir(l.dir)
	if err != nil {
		return nil, fmt.Errorf("segment: list snapshots in %s: %w", l.dir, err)
	}
	var offs []int64
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, snapshotSuffix) {
			continue
		}
		off, err := parseSegmentName(strings.TrimSuffix(name, snapshotSuffix))
		if err != nil {
			l.store.log.Warn("segment: ignoring a snapshot file with a bad name", "path", filepath.Join(l.dir, name))
			continue
		}
		offs = append(offs, off)
	}
	return offs, nil
}
