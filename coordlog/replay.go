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

// Replay reads p from its log start up to end (exclusive; the log end when
// the load started, say) and calls fn for each record of every non-control
// batch, in offset order. Reads are bounded by the log end, not the high
// watermark, so a new leader replays what it holds. A batch that straddles
// the log start is replayed whole, as Kafka's loader does.
//
// Errors: fn's error, wrapped with the partition and offset; a read error of
// p, wrapped; record iteration errors (record.ErrCorrupt and the like),
// wrapped. Replay does not modify p and may run while p is appended to.
func Replay(p *replication.Partition, end int64, fn ReplayFunc) error {
	var buf []byte
	var it record.Iter
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
			progressed = true
			off = batch.NextOffset()
			if batch.Control() {
				continue
			}
			it.Reset(batch)
			for it.Next() {
				if it.Offset() >= end {
					break
				}
				r := it.Record()
				if err := fn(it.Offset(), r.Key, r.Value); err != nil {
					return fmt.Errorf("coordlog: %s-%d offset %d: %w", p.Topic(), p.Index(), it.Offset(), err)
				}
			}
			if err := it.Err(); err != nil {
				return fmt.Errorf("coordlog: %s-%d: %w", p.Topic(), p.Index(), err)
			}
		}
		if !progressed {
			return fmt.Errorf("coordlog: %s-%d: no whole batch at %d", p.Topic(), p.Index(), off)
		}
	}
	return nil
}
