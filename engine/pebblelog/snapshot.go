package pebblelog

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/sluice/sluice/engine"
)

var _ engine.SnapshotStore = (*Log)(nil)

// SaveSnapshot implements engine.SnapshotStore: one key (see the key
// layout in format.go), not synced by itself: the next Flush, Close or
// periodic flush, or the next append's sync, makes it durable. A snapshot
// lost to a crash only means a longer replay from an older one or the log.
func (l *Log) SaveSnapshot(offset int64, data []byte) error {
	if offset < 0 {
		return fmt.Errorf("%w: snapshot of %s/%d at %d", engine.ErrOffsetOutOfRange, l.id.Topic, l.id.Partition, offset)
	}
	return l.snapshotWrite("save", func(pb *pebble.Batch) {
		_ = pb.Set(newLogKey(tagSnapshot, l.n, offset), data, nil)
	})
}

// LatestSnapshot implements engine.SnapshotStore: a reverse seek from upTo.
func (l *Log) LatestSnapshot(upTo int64) (offset int64, data []byte, ok bool, err error) {
	l.s.life.RLock()
	defer l.s.life.RUnlock()
	l.mu.RLock()
	closed := l.closed
	l.mu.RUnlock()
	if closed {
		return 0, nil, false, l.errClosed()
	}
	if upTo < 0 {
		return 0, nil, false, nil
	}
	it, err := l.s.db.NewIter(&pebble.IterOptions{
		LowerBound: newLogKey(tagSnapshot, l.n, 0),
		UpperBound: newLogKey(tagSnapshot, l.n, upTo+1),
	})
	if err != nil {
		return 0, nil, false, err
	}
	defer it.Close()
	if !it.Last() {
		return 0, nil, false, it.Error()
	}
	off, valid := keyOffset(it.Key())
	if !valid {
		return 0, nil, false, l.corrupt("snapshot key %x", it.Key())
	}
	return off, bytes.Clone(it.Value()), true, nil
}

// DeleteSnapshotsFrom implements engine.SnapshotStore.
func (l *Log) DeleteSnapshotsFrom(offset int64) error {
	lo, hi := newLogKey(tagSnapshot, l.n, max(offset, 0)), logKeyEnd(tagSnapshot, l.n)
	return l.deleteSnapshots(lo, hi)
}

// DeleteSnapshotsBefore implements engine.SnapshotStore.
func (l *Log) DeleteSnapshotsBefore(offset int64) error {
	if offset <= 0 {
		return nil
	}
	return l.deleteSnapshots(newLogKey(tagSnapshot, l.n, 0), newLogKey(tagSnapshot, l.n, offset))
}

// deleteSnapshots range-deletes the snapshot keys in [lo, hi), writing
// nothing when there are none. Replication asks this of every partition
// it opens (snapshots above the log end), nearly always for nothing, and a
// range tombstone per partition is not free: every tombstone added to the
// memtable makes the next iterator re-fragment them all, so 100,000 of them
// made creating and opening partitions quadratic (minutes at 100,000).
func (l *Log) deleteSnapshots(lo, hi []byte) error {
	if err := l.hasKeys(lo, hi); err != nil {
		if errors.Is(err, errNoKeys) {
			return nil
		}
		return err
	}
	return l.snapshotWrite("delete", func(pb *pebble.Batch) {
		_ = pb.DeleteRange(lo, hi, nil)
	})
}

// errNoKeys: hasKeys found no key in its range.
var errNoKeys = errors.New("pebblelog: no keys in range")

// hasKeys returns nil when some key is in [lo, hi), errNoKeys when none,
// or the error reading.
func (l *Log) hasKeys(lo, hi []byte) error {
	l.s.life.RLock()
	defer l.s.life.RUnlock()
	if l.s.closed {
		return l.errClosed()
	}
	it, err := l.s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return fmt.Errorf("pebblelog: %s: snapshots of %s/%d: %w", l.s.dir, l.id.Topic, l.id.Partition, err)
	}
	found := it.First()
	if err := it.Close(); err != nil {
		return fmt.Errorf("pebblelog: %s: snapshots of %s/%d: %w", l.s.dir, l.id.Topic, l.id.Partition, err)
	}
	if !found {
		return errNoKeys
	}
	return nil
}

// SnapshotDue implements engine.SnapshotStore: the base of the newest
// emulated segment, as the segment backend answers.
func (l *Log) SnapshotDue() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if len(l.segs) == 0 {
		return -1
	}
	return l.segs[len(l.segs)-1].base
}

// snapshotWrite commits the changes fill makes, without a sync (see
// SaveSnapshot; a lost delete leaves a snapshot that replication deletes
// or skips again: LatestSnapshot is bounded by the log end).
func (l *Log) snapshotWrite(what string, fill func(*pebble.Batch)) error {
	l.s.life.RLock()
	defer l.s.life.RUnlock()
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	if l.closed {
		return l.errClosed()
	}
	if l.failed != nil {
		return l.failed
	}
	pb := l.s.db.NewBatch()
	defer pb.Close()
	fill(pb)
	if err := l.s.commitNoSync(pb); err != nil {
		return fmt.Errorf("pebblelog: %s: %s snapshot of %s/%d: %w", l.s.dir, what, l.id.Topic, l.id.Partition, err)
	}
	return nil
}
