package coordlog

import (
	"fmt"

	"github.com/sluice/sluice/record"
	"github.com/sluice/sluice/replication"
)

// replayReadBytes is the read size of Replay: at least one whole batch
// comes back whatever its size (KIP-74).
const replayReadBytes = 1 << 20

// ReplayFunc receives one record of a replay: its offset, key and value (nil
// for a tombstone; nil key for a record without one). key and value alias
// Replay's read buffer and are valid only during the call: copy what must
// outlive it. An error stops the replay.
type ReplayFunc func(offset int64, key, value []byte) error

// ReplayStats is what one Replay read, for the load's log line: after the
// log cleaner ran, Records is close to the number of live keys, before it
// the number of writes since the topic was created.
type ReplayStats struct {
	// Batches counts the non-control batches whose records went to fn,
	// Records those records (tombstones included). Records past end are
	// not counted.
	Batches, Records int64
	// Bytes counts the bytes of every batch Replay went through, control
	// batches included: what the replay had to read and check.
	Bytes int64
}

// Replay reads p from its log start up to end (exclusive; the log end when
// the load started, say) and calls fn for each record of every non-control
// batch, in offset order. Reads are bounded by the log end, not the high
// watermark, so a new leader replays what it holds. A batch that straddles
// the log start is replayed whole, as Kafka's loader does.
//
// Errors: fn's error, wrapped with the partition and offset; a read error of
// p, wrapped; record iteration errors (record.ErrCorrupt and the like),
// wrapped. Replay does not modify p and may run while p is appended to.
// The stats count what was read up to the error, too.
func Replay(p *replication.Partition, end int64, fn ReplayFunc) (ReplayStats, error) {
	var st ReplayStats
	var it record.Iter
	err := ReplayBatches(p, end, func(batch record.Batch) error {
		st.Bytes += int64(len(batch))
		if batch.Control() {
			return nil
		}
		st.Batches++
		it.Reset(batch)
		for it.Next() {
			if it.Offset() >= end {
				break
			}
			st.Records++
			r := it.Record()
			if err := fn(it.Offset(), r.Key, r.Value); err != nil {
				return fmt.Errorf("offset %d: %w", it.Offset(), err)
			}
		}
		return it.Err()
	})
	return st, err
}

// ReplayBatches is Replay's walk, a whole batch at a time, control batches
// included, for a state machine that needs the batch headers (producer
// ids, transaction markers): fn sees every batch that ends at or after the
// log start and begins before end, in offset order; the batch is valid
// until fn returns. Errors as Replay's.
func ReplayBatches(p *replication.Partition, end int64, fn func(record.Batch) error) error {
	var buf []byte
	for off := p.LogStartOffset(); off < end; {
		sl, err := p.ReadReplica(off, replayReadBytes)
		if err != nil {
			return fmt.Errorf("coordlog: read %s-%d at %d: %w", p.Topic(), p.Index(), off, err)
		}
		buf, err = sl.AppendTo(buf[:0])
		sl.Release()
		if err != nil {
			return fmt.Errorf("coordlog: read %s-%d at %d: %w", p.Topic(), p.Index(), off, err)
		}
		if len(buf) == 0 {
			break
		}
		progressed := false
		for b := buf; ; {
			size, ok := record.PeekSize(b)
			if !ok || size > len(b) {
				break
			}
			batch := record.Batch(b[:size])
			b = b[size:]
			if batch.NextOffset() <= off {
				continue
			}
			if batch.BaseOffset() >= end {
				return nil // the rest of the read is past end
			}
			progressed = true
			off = batch.NextOffset()
			if err := fn(batch); err != nil {
				return fmt.Errorf("coordlog: %s-%d batch at %d: %w", p.Topic(), p.Index(), batch.BaseOffset(), err)
			}
		}
		if !progressed {
			return fmt.Errorf("coordlog: %s-%d: no whole batch at %d", p.Topic(), p.Index(), off)
		}
	}
	return nil
}
