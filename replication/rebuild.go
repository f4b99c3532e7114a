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
// older one tried; with none, the state is rebuilt from the last
// Options.ProducerScanBytes of the log (see producers.go), as Kafka does
// for a log without snapshots. Snapshots above the log end were taken of
// a tail that is gone (an unclean shutdown, a truncation) and are deleted
// first (Kafka's truncateAndReload).
//
// A snapshot is taken of the state as of the log end by the owner of the
// producer state: after the first append round (or follower append) that
// finds the log rolled since the last snapshot (engine.SnapshotStore's
// SnapshotDue; Kafka snapshots in the roll itself, at the new segment's
// base, which is the same state minus that one round), after every
// ProducerScanBytes appended for a log without segments, and at Close.
// The last keepSnapshots are kept, the older ones deleted, so a damaged
// latest snapshot still has a fallback.

// keepSnapshots is how many snapshots a partition keeps.
const keepSnapshots = 3

// snapState is what a partition remembers of its snapshots.
// REQUIRES: the caller owns p.producers.
type snapState struct {
	// kept are the offsets of the snapshots this partition saved or
	// loaded, ascending, at most keepSnapshots.
	kept []int64
	// due is SnapshotDue when the last snapshot was taken or loaded;
	// size the log size then.
	due, size int64
}

// scanChunk is how much one read of the producer-state rebuild asks for.
const scanChunk = 1 << 20

// scanBytes is Options.ProducerScanBytes with its default.
func (p *Partition) scanBytes() int64 {
	if p.opts.ProducerScanBytes == 0 {
		return DefaultProducerScanBytes
	}
	return p.opts.ProducerScanBytes
}

// loadProducerState replaces p's producer state with one loaded from the
// latest valid snapshot and the log after it, or from the log's tail (see
// the top of this file). Damaged or unreadable snapshots are logged, not
// returned; the error is the log's. REQUIRES: the caller owns
// p.producers (NewPartition, the append round's leader, or p.fmu held as
// a follower).
func (p *Partition) loadProducerState() error {
	s := newProducerState(p.opts.ProducerIDExpiration)
	p.producers, p.snap = s, snapState{due: -1}
	from := int64(-1)
	ss, ok := p.log.(engine.SnapshotStore)
	if ok {
		from = p.loadLatestSnapshot(ss)
		p.snap.due, p.snap.size = ss.SnapshotDue(), p.log.Size()
	}
	if from < 0 {
		return rebuildProducers(s, p.log, p.scanBytes())
	}
	p.snap.kept = []int64{from}
	return replayProducers(s, p.log, max(from, p.log.StartOffset()))
}

// loadLatestSnapshot loads the latest valid snapshot at or below the log
// end into p.producers and returns its offset, or -1 when there is none.
func (p *Partition) loadLatestSnapshot(ss engine.SnapshotStore) int64 {
	end := p.log.EndOffset()
	if err := ss.DeleteSnapshotsFrom(end + 1); err != nil {
		p.logger.Warn("replication: deleting producer snapshots above the log end", "topic", p.opts.Topic, "partition", p.opts.Partition, "end", end, "err", err)
	}
	for upTo := end; upTo >= 0; {
		off, data, ok, err := ss.LatestSnapshot(upTo)
		if err != nil {
			p.logger.Warn("replication: reading producer snapshots", "topic", p.opts.Topic, "partition", p.opts.Partition, "err", err)
			return -1
		}
		if !ok {
			return -1
		}
		entries, err := decodeSnapshot(data)
		if err != nil {
			p.logger.Warn("replication: skipping a damaged producer snapshot", "topic", p.opts.Topic, "partition", p.opts.Partition, "offset", off, "err", err)
			upTo = off - 1
			continue
		}
		loadSnapshot(p.producers, entries)
		p.logger.Debug("replication: producer state loaded from snapshot", "topic", p.opts.Topic, "partition", p.opts.Partition, "offset", off, "producers", len(entries))
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
	due, size := ss.SnapshotDue(), p.log.Size()
	if !force {
		if due >= 0 && due <= p.snap.due {
			return
		}
		if due < 0 && size-p.snap.size < max(p.scanBytes(), 1) {
			return
		}
	}
	if err := ss.SaveSnapshot(end, encodeSnapshot(p.producers)); err != nil {
		p.logger.Warn("replication: saving a producer snapshot", "topic", p.opts.Topic, "partition", p.opts.Partition, "offset", end, "err", err)
		return
	}
	p.snap.due, p.snap.size = due, size
	p.snap.kept = append(p.snap.kept, end)
	if n := len(p.snap.kept); n > keepSnapshots {
		p.snap.kept = p.snap.kept[n-keepSnapshots:]
		if err := ss.DeleteSnapshotsBefore(p.snap.kept[0]); err != nil {
			p.logger.Warn("replication: deleting old producer snapshots", "topic", p.opts.Topic, "partition", p.opts.Partition, "err", err)
		}
	}
}

// rebuildProducers loads producer state from the last scanBytes of log (see
// producers.go for why only the tail). The log maps offsets, not bytes, so
// the scan start is estimated from the average batch bytes per offset; an
// estimate that lands mid-batch is fine, since Read starts at the batch
// holding the offset.
func rebuildProducers(s *producerState, log engine.Log, scanBytes int64) error {
	start, end := log.StartOffset(), log.EndOffset()
	if scanBytes < 0 || end <= start {
		return nil
	}
	if size := log.Size(); size > scanBytes {
		span := float64(end-start) * float64(scanBytes) / float64(size)
		start = max(start, end-int64(span)-1)
	}
	return replayProducers(s, log, start)
}

// replayProducers loads into s every batch of log from the one holding
// start to the log end.
func replayProducers(s *producerState, log engine.Log, start int64) error {
	end := log.EndOffset()
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
		p.logger.Warn("replication: rebuilding producer state failed", "after", after, "topic", p.opts.Topic, "partition", p.opts.Partition, "err", err)
	}
	p.resetTxnTracking()
}
