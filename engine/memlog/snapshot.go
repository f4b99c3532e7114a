package memlog

import (
	"bytes"
	"fmt"

	"github.com/sluice/sluice/engine"
)

var _ engine.SnapshotStore = (*Log)(nil)

// SaveSnapshot implements engine.SnapshotStore: a copy of data in memory.
func (l *Log) SaveSnapshot(offset int64, data []byte) error {
	if offset < 0 {
		return fmt.Errorf("%w: snapshot of %s/%d at %d", engine.ErrOffsetOutOfRange, l.id.Topic, l.id.Partition, offset)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return l.errClosed()
	}
	if l.snapshots == nil {
		l.snapshots = make(map[int64][]byte)
	}
	l.snapshots[offset] = bytes.Clone(data)
	return nil
}

// LatestSnapshot implements engine.SnapshotStore.
func (l *Log) LatestSnapshot(upTo int64) (offset int64, data []byte, ok bool, err error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return 0, nil, false, l.errClosed()
	}
	for off, d := range l.snapshots {
		if off <= upTo && (!ok || off > offset) {
			offset, data, ok = off, d, true
		}
	}
	return offset, bytes.Clone(data), ok, nil
}

// DeleteSnapshotsFrom implements engine.SnapshotStore.
func (l *Log) DeleteSnapshotsFrom(offset int64) error {
	return l.deleteSnapshots(func(off int64) bool { return off >= offset })
}

// DeleteSnapshotsBefore implements engine.SnapshotStore.
func (l *Log) DeleteSnapshotsBefore(offset int64) error {
	return l.deleteSnapshots(func(off int64) bool { return off < offset })
}

func (l *Log) deleteSnapshots(drop func(int64) bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return l.errClosed()
	}
	for off := range l.snapshots {
		if drop(off) {
			delete(l.snapshots, off)
		}
	}
	return nil
}

// SnapshotDue implements engine.SnapshotStore: a memory log has no
// segments, so the caller snapshots by bytes written.
func (l *Log) SnapshotDue() int64 { return -1 }
