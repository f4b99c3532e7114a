package replication

import (
	"fmt"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/record"
)

// Loading and snapshotting producer state
//
// The producer state is loaded, at NewPartition and after the log changed
// under it (a truncation, a panicked round), from the latest snapshot at
// or below the log end (snapshot.go, kept by a log that implements
// engine.SnapshotStore), replaying the log from the snapshot's offset. A
// snapshot that does not decode is skipped with a warning and the next
// older one tried; with none, the state is rebuilt from the whole log, as
// Kafka does for a log without snapshots: a bounded tail scan would miss
// a transaction that began before it, leaving the LSO at the HW and an
// ABORT marker for a producer it does not know (no aborted-transaction
// index entry: read_committed consumers would read the aborted records).
// Snapshots above the log end were taken of a tail that is gone (an
// unclean shutdown, a truncation) and are deleted first (Kafka's
// truncateAndReload).
//
// A snapshot is taken of the state as of the log end by the owner of the
// producer state: after the first append round (or follower append) that
// finds the log rolled since the last snapshot (engine.SnapshotStore's
// SnapshotDue; Kafka snapshots in the roll itself, at the new segment's
// base, which is the same state minus that one round), after every
// Options.ProducerScanBytes appended since the last snapshot on every
// backend (so a crash before the first roll of a large segment still
// leaves a snapshot at most that far behind the log end, and a restart
// replays at most that much), and at Close. The last keepSnapshots are
// kept, the older ones deleted, so a damaged latest snapshot still has a
// fallback; the full scan is left for a log with no valid snapshot at all
// (one written before snapshots existed, or all of them damaged).
// keepSnapshots is how many snapshots a partition keeps.
const keepSnapshots = 3

// snapState is what a partition remembers of its snapshots.
// REQUIRES: the caller owns p.producers.
type snapState struct {
	// kept are the offsets of the snapshots this partition saved or
	// loaded, ascending, at most keepSnapshots.
	kept []int64
	// due is SnapshotDue when the last snapshot was taken or loaded.
	due int64
	// since counts the bytes appended since the last snapshot was taken
	// or loaded (noteAppended).
	since int64
}

// scanChunk is how much one read of the producer-state rebuild asks for.
const scanChunk = 1 << 20

// snapshotEvery is how many appended bytes call for a snapshot:
// Options.ProducerScanBytes, with its default.
func (p *Partition) snapshotEvery() int64 {
	if p.opts.ProducerScanBytes <= 0 {
		return DefaultProducerScanBytes
	}
	return p.opts.ProducerScanBytes
}

// noteAppended counts n bytes appended to the log toward the next
// snapshot. REQUIRES: the caller owns p.producers.
func (p *Partition) noteAppended(n int64) { p.snap.since += n }

// loadProducerState replaces p's producer state with one loaded from the
// latest valid snapshot and the log after it, or from the whole log (see
// the top of this file). Damaged or unreadable snapshots are logged, not
// returned; the error is the log's. REQUIRES: the caller owns
// p.producers (NewPartition, the append round's leader, or p.fmu held as
// a follower).
//
// The table is made only when there is something to load (producerTable):
// a new, empty log leaves it nil.
func (p *Partition) loadProducerState() error {
	p.producers, p.snap = nil, snapState{due: -1}
	from := int64(-1)
	ss, ok := p.log.(engine.SnapshotStore)
	if ok {
		from = p.loadLatestSnapshot(ss)
		p.snap.due = ss.SnapshotDue()
		if p.snap.due < 0 {
			// No segment yet (a new log): its first segment, at the
			// log end, is not a roll, and a snapshot of the empty
			// state there cost each of 10,000 new partitions a file
			// written in the produce path.
			p.snap.due = p.log.EndOffset()
		}
	}
	if from < 0 {
		if p.opts.ProducerScanBytes < 0 {
			return nil // told not to scan
		}
		start, end := p.log.StartOffset(), p.log.EndOffset()
		if end <= start {
			return nil // nothing to replay
		}
		p.opts.Logger.Info("replication: no producer snapshot, rebuilding producer state from the whole log", "topic", p.opts.Topic, "partition", p.index, "start", start, "end", end, "bytes", p.log.Size())
		return replayProducers(p.producerTable(), p.log, start)
	}
	p.snap.kept = []int64{from}
	return replayProducers(p.producerTable(), p.log, max(from, p.log.StartOffset()))
}

// loadLatestSnapshot loads the latest valid snapshot at or below the log
// end into p.producers and returns its offset, or -1 when there is none.
func (p *Partition) loadLatestSnapshot(ss engine.SnapshotStore) int64 {
	end := p.log.EndOffset()
	if err := ss.DeleteSnapshotsFrom(end + 1); err != nil {
		p.opts.Logger.Warn("replication: deleting producer snapshots above the log end", "topic", p.opts.Topic, "partition", p.index, "end", end, "err", err)
	}
	for upTo := end; upTo >= 0; {
		off, data, ok, err := ss.LatestSnapshot(upTo)
		if err != nil {
			p.opts.Logger.Warn("replication: reading producer snapshots", "topic", p.opts.Topic, "partition", p.index, "err", err)
			return -1
		}
		if !ok {
			return -1
		}
		entries, err := decodeSnapshot(data)
		if err != nil {
			p.opts.Logger.Warn("replication: skipping a damaged producer snapshot", "topic", p.opts.Topic, "partition", p.index, "offset", off, "err", err)
			upTo = off - 1
			continue
		}
		loadSnapshot(p.producerTable(), entries)
		p.opts.Logger.Debug("replication: producer state loaded from snapshot", "topic", p.opts.Topic, "partition", p.index, "offset", off, "producers", len(entries))
		return off
	}
	return -1
}

// maybeSnapshot saves a snapshot of p's producer state at the log end
// when one is due (see the top of this file), or always when force,
// unless there is one at the log end already. A failure is logged: the
// previous snapshots remain, and a restart only replays more.
// REQUIRES: the caller owns p.producers, no round in progress.
func (p *Partition) maybeSnapshot(force bool) {
	ss, ok := p.log.(engine.SnapshotStore)
	if !ok {
		return
	}
	end := p.log.EndOffset()
	if n := len(p.snap.kept); n > 0 && p.snap.kept[n-1] == end {
		return
	}
	if end == p.log.StartOffset() && p.producers.len() == 0 {
		// An empty log: a restart without the snapshot replays nothing
		// either (a clean stop of 20,000 partitions wrote one for each).
		return
	}
	due := ss.SnapshotDue()
	if !force && (due < 0 || due <= p.snap.due) && p.snap.since < p.snapshotEvery() {
		return // no roll since the last snapshot, and not enough appended
	}
	if err := ss.SaveSnapshot(end, encodeSnapshot(p.producerTable())); err != nil {
		p.opts.Logger.Warn("replication: saving a producer snapshot", "topic", p.opts.Topic, "partition", p.index, "offset", end, "err", err)
		return
	}
	p.snap.due, p.snap.since = due, 0
	p.snap.kept = append(p.snap.kept, end)
	if n := len(p.snap.kept); n > keepSnapshots {
		p.snap.kept = p.snap.kept[n-keepSnapshots:]
		if err := ss.DeleteSnapshotsBefore(p.snap.kept[0]); err != nil {
			p.opts.Logger.Warn("replication: deleting old producer snapshots", "topic", p.opts.Topic, "partition", p.index, "err", err)
		}
	}
}

// replayProducers loads into s every batch of log from the one holding
// start to the log end.
func replayProducers(s *producerState, log engine.Log, start int64) error {
	return replayProducersTo(s, log, start, log.EndOffset())
}

// replayProducersTo is replayProducers up to end: batches that end past
// it are left out.
func replayProducersTo(s *producerState, log engine.Log, start, end int64) error {
	var buf []byte
	// Every iteration moves off forward by at least one batch or stops.
	for off := start; off < end; {
		sl, err := log.Read(off, scanChunk, -1)
		if err != nil {
			return fmt.Errorf("replication: rebuild producer state at offset %d: %w", off, err)
		}
		buf, err = sl.AppendTo(buf[:0])
		sl.Release()
		if err != nil {
			return fmt.Errorf("replication: rebuild producer state at offset %d: %w", off, err)
		}
		next := off
		for pos := 0; pos < len(buf); {
			size, ok := record.PeekSize(buf[pos:])
			if !ok || size < record.HeaderSize || pos+size > len(buf) {
				break // a trailing partial batch: read it again next time
			}
			b := record.Batch(buf[pos : pos+size])
			pos += size
			if b.NextOffset() <= off {
				continue
			}
			if b.NextOffset() > end {
				return nil
			}
			s.load(b, -1)
			next = b.NextOffset()
		}
		if next <= off {
			break // nothing readable here (a gap or a damaged tail): stop
		}
		off = next
	}
	return nil
}

// rebuildProducerState reloads p's producer state (loadProducerState)
// after the log changed under it (a truncation, an append round that
// panicked). A failed rebuild is logged and leaves what it read: only
// duplicate detection suffers. after names the change, for the log line.
// REQUIRES: the caller owns p.producers (leads the append round, or holds
// p.fmu as a follower).
func (p *Partition) rebuildProducerState(after string) {
	if err := p.loadProducerState(); err != nil {
		p.opts.Logger.Warn("replication: rebuilding producer state failed", "after", after, "topic", p.opts.Topic, "partition", p.index, "err", err)
	}
	p.resetTxnTracking()
}
