package replication

import (
	"fmt"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/record"
)

// scanChunk is how much one read of the producer-state rebuild asks for.
const scanChunk = 1 << 20

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

// rebuildProducerState replaces p's producer state with one rebuilt from
// the tail of its log, after the log changed under it (a truncation, an
// append round that panicked). A failed rebuild is logged and leaves what
// it read: only duplicate detection suffers. after names the change, for
// the log line. REQUIRES: the caller owns p.producers (leads the append
// round, or holds p.fmu as a follower).
func (p *Partition) rebuildProducerState(after string) {
	p.producers = newProducerState(p.opts.ProducerIDExpiration)
	scan := p.opts.ProducerScanBytes
	if scan == 0 {
		scan = DefaultProducerScanBytes
	}
	if err := rebuildProducers(p.producers, p.log, scan); err != nil {
		p.logger.Warn("replication: rebuilding producer state failed", "after", after, "topic", p.opts.Topic, "partition", p.opts.Partition, "err", err)
	}
	p.resetTxnTracking()
}
