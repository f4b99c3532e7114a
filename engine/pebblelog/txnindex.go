package pebblelog

import (
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/sluice/sluice/engine"
)

var _ engine.TxnIndex = (*Log)(nil)

// AppendAbortedTxn implements engine.TxnIndex: one key per entry, under
// its marker's offset (see the key layout in format.go), synced as appends
// are.
func (l *Log) AppendAbortedTxn(t engine.AbortedTxn) error {
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
	if t.LastOffset < l.start || t.LastOffset >= l.end {
		return fmt.Errorf("%w: %s/%d: aborted transaction marker at %d, log holds [%d, %d)",
			engine.ErrOffsetOutOfRange, l.id.Topic, l.id.Partition, t.LastOffset, l.start, l.end)
	}
	if err := l.s.db.Set(newLogKey(tagAborted, l.n, t.LastOffset), encodeAbortedTxn(t), pebble.Sync); err != nil {
		l.failed = fmt.Errorf("pebblelog: %s: append aborted transaction to %s/%d: %w", l.s.dir, l.id.Topic, l.id.Partition, err)
		return l.failed
	}
	return nil
}

// AbortedTxns implements engine.TxnIndex: a scan of the entries whose
// marker is at or after from.
func (l *Log) AbortedTxns(from, upTo int64) ([]engine.AbortedTxn, error) {
	l.s.life.RLock()
	defer l.s.life.RUnlock()
	l.mu.RLock()
	closed := l.closed
	l.mu.RUnlock()
	if closed {
		return nil, l.errClosed()
	}
	it, err := l.s.db.NewIter(&pebble.IterOptions{
		LowerBound: newLogKey(tagAborted, l.n, max(from, 0)),
		UpperBound: logKeyEnd(tagAborted, l.n),
	})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []engine.AbortedTxn
	for ok := it.First(); ok; ok = it.Next() {
		t, err := decodeAbortedTxn(it.Value())
		if err != nil {
			return nil, l.corrupt("aborted transaction at key %x: %v", it.Key(), err)
		}
		overlaps, done := engine.OverlapsAbortedTxn(t, from, upTo)
		if overlaps {
			out = append(out, t)
		}
		if done {
			break
		}
	}
	return out, it.Error()
}

func encodeAbortedTxn(t engine.AbortedTxn) []byte {
	b := make([]byte, 2, abortedTxnLen)
	b = binary.BigEndian.AppendUint64(b, uint64(t.ProducerID))
	b = binary.BigEndian.AppendUint64(b, uint64(t.FirstOffset))
	b = binary.BigEndian.AppendUint64(b, uint64(t.LastOffset))
	return binary.BigEndian.AppendUint64(b, uint64(t.LastStableOffset))
}

func decodeAbortedTxn(v []byte) (engine.AbortedTxn, error) {
	if len(v) != abortedTxnLen {
		return engine.AbortedTxn{}, fmt.Errorf("%d bytes, want %d", len(v), abortedTxnLen)
	}
	if ver := binary.BigEndian.Uint16(v); ver != 0 {
		return engine.AbortedTxn{}, fmt.Errorf("version %d", ver)
	}
	return engine.AbortedTxn{
		ProducerID:       int64(binary.BigEndian.Uint64(v[2:])),
		FirstOffset:      int64(binary.BigEndian.Uint64(v[10:])),
		LastOffset:       int64(binary.BigEndian.Uint64(v[18:])),
		LastStableOffset: int64(binary.BigEndian.Uint64(v[26:])),
	}, nil
}
