package pebblelog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/cockroachdb/pebble/v2"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/record"
	"github.com/sluice/sluice/zerocopy"
)

// Log is one partition in the store's Pebble DB. Safe for concurrent use.
//
// Locking: every method that touches the DB holds s.life shared. writeMu
// serializes mutations (Append, Truncate, DeleteBefore, ApplyRetention,
// SetConfig, Close); a mutation commits its Pebble batch holding writeMu,
// then publishes the new in-memory state under mu. Fields under mu are
// written holding both locks and read holding either. Lock order:
// s.life, writeMu, mu, s.mu.
type Log struct {
	s  *Store
	id engine.PartitionID
	n  uint64 // the partition's id in keys

	writeMu sync.Mutex
	keyBuf  [logKeyLen]byte     // REQUIRES: writeMu
	sumBuf  [segSummaryLen]byte // REQUIRES: writeMu
	failed  error               // sticky commit error; REQUIRES: writeMu

	gen       uint64 // the last segment.gen given out; REQUIRES: writeMu
	replacing bool   // a SegmentWriter is open; REQUIRES: writeMu

	mu    sync.RWMutex
	cfg   engine.SharedLogConfig // one copy per distinct config, shared by the logs
	start int64
	end   int64 // segs[len-1].next, or start when there is no segment
	// segs are ascending and cover the offsets densely: segs[i].next ==
	// segs[i+1].base. The batches inside may have gaps.
	segs       []segment
	size       int64 // sum of segs[i].bytes
	epochs     *engine.EpochCache
	checkpoint int64 // the cleaner checkpoint, as stored under metaCleaner
	closed     bool
}

func newLog(s *Store, id engine.PartitionID, n uint64, cfg engine.LogConfig) *Log {
	return &Log{s: s, id: id, n: n, cfg: engine.ShareLogConfig(cfg)}
}

func (l *Log) errClosed() error {
	return fmt.Errorf("%w: log %s/%d", engine.ErrClosed, l.id.Topic, l.id.Partition)
}

func (l *Log) corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s: log %s/%d: %s", engine.ErrCorruptStore, l.s.dir, l.id.Topic, l.id.Partition, fmt.Sprintf(format, args...))
}

// newGen returns a fresh segment.gen. REQUIRES: writeMu held, or the log
// not yet published.
func (l *Log) newGen() uint64 {
	l.gen++
	return l.gen
}

// load reads the log's start offset, cleaner checkpoint, epoch history and
// segment summaries, and checks that the last batch index entry lies in
// the last segment holding batches and ends by the log end. REQUIRES:
// s.life held.
func (l *Log) load() error {
	start, err := l.s.getU64(metaKey(l.n, metaStart))
	if err != nil {
		return err
	}
	l.start = int64(start)
	cp, err := l.s.getU64(metaKey(l.n, metaCleaner))
	if err != nil {
		return err
	}
	l.checkpoint = int64(cp)
	var entries []engine.EpochEntry
	v, closer, err := l.s.db.Get(metaKey(l.n, metaEpochs))
	switch {
	case errors.Is(err, pebble.ErrNotFound):
	case err != nil:
		return fmt.Errorf("pebblelog: %s: epochs of %s/%d: %w", l.s.dir, l.id.Topic, l.id.Partition, err)
	default:
		entries, err = decodeEpochs(v)
		closer.Close()
		if err != nil {
			return fmt.Errorf("%s: %s/%d: %w", l.s.dir, l.id.Topic, l.id.Partition, err)
		}
	}
	l.epochs = engine.NewEpochCache(entries)

	it, err := l.s.db.NewIter(&pebble.IterOptions{
		LowerBound: newLogKey(tagSegment, l.n, 0),
		UpperBound: logKeyEnd(tagSegment, l.n),
	})
	if err != nil {
		return err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		base, _ := keyOffset(it.Key())
		val, err := it.ValueAndErr()
		if err != nil {
			return err
		}
		seg, err := decodeSegment(base, val)
		if err != nil {
			return fmt.Errorf("%s: %s/%d: %w", l.s.dir, l.id.Topic, l.id.Partition, err)
		}
		if n := len(l.segs); n > 0 && l.segs[n-1].next != seg.base {
			return l.corrupt("segment at %d follows one ending at %d", seg.base, l.segs[n-1].next)
		}
		seg.gen = l.newGen()
		l.segs = append(l.segs, seg)
		l.size += seg.bytes
	}
	if err := it.Error(); err != nil {
		return err
	}
	l.end = l.start
	if n := len(l.segs); n > 0 {
		l.end = max(l.start, l.segs[n-1].next)
		last, ok, err := l.lastBatch()
		if err != nil {
			return err
		}
		// The last batch lies in the last segment that has bytes.
		k := n - 1
		for k > 0 && l.segs[k].bytes == 0 {
			k--
		}
		switch {
		case !ok && l.size > 0:
			return l.corrupt("segments hold %d bytes, no batch index entry", l.size)
		case ok && (l.segs[k].bytes == 0 || last.base < l.segs[k].base || last.last >= l.segs[k].next):
			return l.corrupt("segment [%d, %d) of %d bytes is the last with batches, last batch index entry %+v",
				l.segs[k].base, l.segs[k].next, l.segs[k].bytes, last)
		}
	}
	return nil
}

// lastBatch returns the summary of the log's last batch. REQUIRES: s.life held.
func (l *Log) lastBatch() (batchSummary, bool, error) {
	it, err := l.s.db.NewIter(&pebble.IterOptions{
		LowerBound: newLogKey(tagBatchIdx, l.n, 0),
		UpperBound: logKeyEnd(tagBatchIdx, l.n),
	})
	if err != nil {
		return batchSummary{}, false, err
	}
	defer it.Close()
	if !it.Last() {
		return batchSummary{}, false, it.Error()
	}
	v, err := it.ValueAndErr()
	if err != nil {
		return batchSummary{}, false, err
	}
	bs, err := decodeBatchSummary(it.Key(), v)
	return bs, err == nil, err
}

// Append validates batches with engine.PrepareAppend and writes them, their
// index entries and the segment summaries they change in one Pebble batch:
// all or none. It syncs per LogConfig.FlushMessages (see the package doc).
// A commit error is sticky: the log refuses later appends with it.
func (l *Log) Append(batches []byte, opts engine.AppendOptions) (engine.AppendInfo, error) {
	l.s.life.RLock()
	defer l.s.life.RUnlock()
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	if l.closed {
		return engine.AppendInfo{}, l.errClosed()
	}
	if l.failed != nil {
		return engine.AppendInfo{}, l.failed
	}
	cfg := l.cfg.Get()
	info, err := engine.PrepareAppend(batches, l.end, opts, cfg.MaxBatchBytes)
	if err != nil {
		return engine.AppendInfo{}, fmt.Errorf("pebblelog: append to %s/%d: %w", l.id.Topic, l.id.Partition, err)
	}
	nowMs := l.s.now().UnixMilli()

	pb := l.s.db.NewBatch()
	defer pb.Close()
	// tail is a copy of the last segment; added are segments this append
	// opens. Both are published only after the commit.
	var tail segment
	hasTail := len(l.segs) > 0
	if hasTail {
		tail = l.segs[len(l.segs)-1]
	}
	var added []segment
	cur := &tail
	if !hasTail {
		cur = nil
	}
	var epochs *engine.EpochCache // a changed copy of l.epochs, if any batch starts an epoch
	latest := l.epochs.Latest()
	for pos := 0; pos < len(batches); {
		b := record.Batch(batches[pos:])
		size := b.Size()
		b = b[:size]
		pos += size
		base := b.BaseOffset()
		if cur == nil || (cur.bytes > 0 && (cur.bytes+int64(size) > cfg.SegmentBytes || nowMs-cur.createdMs >= cfg.RollAge().Milliseconds())) {
			// The new segment starts where the one before ends (at
			// the log end when there is none), so that segments
			// cover the offsets densely even when a follower's
			// batch starts past it.
			segBase := l.end
			if cur != nil {
				segBase = cur.next
			}
			added = append(added, segment{base: segBase, maxTs: -1, createdMs: nowMs, gen: l.newGen()})
			cur = &added[len(added)-1]
		}
		_ = pb.Set(logKey(l.keyBuf[:], tagBatch, l.n, base), b, nil)
		_ = pb.Set(logKey(l.keyBuf[:], tagBatchIdx, l.n, base), encodeBatchSummary(l.sumBuf[:], b.LastOffsetDelta(), size, b.MaxTimestamp()), nil)
		cur.next = b.NextOffset()
		cur.bytes += int64(size)
		cur.maxTs = max(cur.maxTs, b.MaxTimestamp())
		cur.writeMs = nowMs
		if e := b.LeaderEpoch(); e > latest || epochs != nil {
			if epochs == nil {
				epochs = engine.NewEpochCache(l.epochs.Entries())
			}
			epochs.Assign(e, base)
		}
	}
	if hasTail && tail.bytes != l.segs[len(l.segs)-1].bytes {
		_ = pb.Set(logKey(l.keyBuf[:], tagSegment, l.n, tail.base), tail.encode(l.sumBuf[:]), nil)
	}
	for i := range added {
		_ = pb.Set(logKey(l.keyBuf[:], tagSegment, l.n, added[i].base), added[i].encode(l.sumBuf[:]), nil)
	}
	if epochs != nil {
		_ = pb.Set(metaKey(l.n, metaEpochs), encodeEpochs(epochs.Entries()), nil)
	}
	// Every append is synced: see "Durability" in the package doc for why
	// NoSync would lose acknowledged records on a mere process crash.
	if err := pb.Commit(pebble.Sync); err != nil {
		l.failed = fmt.Errorf("pebblelog: %s: append to %s/%d: %w", l.s.dir, l.id.Topic, l.id.Partition, err)
		return engine.AppendInfo{}, l.failed
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	if hasTail {
		l.segs[len(l.segs)-1] = tail
	}
	l.segs = append(l.segs, added...)
	l.size += int64(len(batches))
	l.end = info.LastOffset + 1
	if epochs != nil {
		l.epochs = epochs
	}
	return info, nil
}

// Read returns whole batches from the one holding offset (or the first
// after it when offset lies in a gap of a compacted log), as documented on
// engine.Log. It seeks to the last batch key <= offset (the first key when
// there is none) and copies batches out of the iterator (its memory is not
// stable) into one new buffer, which the returned BytesSlice owns.
func (l *Log) Read(offset int64, maxBytes int, upTo int64) (zerocopy.Slice, error) {
	l.s.life.RLock()
	defer l.s.life.RUnlock()
	l.mu.RLock()
	closed, start, end, size := l.closed, l.start, l.end, l.size
	l.mu.RUnlock()
	if closed {
		return zerocopy.Slice{}, l.errClosed()
	}
	if offset < start || offset > end {
		return zerocopy.Slice{}, fmt.Errorf("%w: offset %d, log %s/%d holds [%d, %d)",
			engine.ErrOffsetOutOfRange, offset, l.id.Topic, l.id.Partition, start, end)
	}
	if offset == end || (upTo >= 0 && offset >= upTo) {
		return zerocopy.Slice{}, nil
	}
	var keys [3 * logKeyLen]byte
	it, err := l.s.db.NewIter(&pebble.IterOptions{
		LowerBound: logKey(keys[0:], tagBatch, l.n, 0),
		UpperBound: logKey(keys[logKeyLen:], tagBatch, l.n, end),
	})
	if err != nil {
		return zerocopy.Slice{}, err
	}
	defer it.Close()
	// The batch holding offset is the last one whose base is <= offset;
	// when that one ends before offset (a gap), or there is none, the
	// batch wanted is the next one.
	ok := it.SeekLT(logKey(keys[2*logKeyLen:], tagBatch, l.n, offset+1))
	if !ok {
		if err := it.Error(); err != nil {
			return zerocopy.Slice{}, err
		}
		ok = it.First()
	}
	var out []byte
	for ; ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return zerocopy.Slice{}, err
		}
		if size, ok := record.PeekSize(v); !ok || size != len(v) || len(v) < record.HeaderSize {
			base, _ := keyOffset(it.Key())
			return zerocopy.Slice{}, l.corrupt("batch at %d: %d bytes, header says %d", base, len(v), size)
		}
		last := record.Batch(v).LastOffset()
		if upTo >= 0 && last >= upTo {
			break
		}
		if out == nil {
			if last < offset { // a gap, or offsets below start
				continue
			}
			// One allocation: maxBytes bounds what follows the first
			// batch, and the log's size bounds it all.
			out = make([]byte, 0, max(len(v), int(min(int64(maxBytes), size))))
		} else if len(out)+len(v) > maxBytes {
			break
		}
		out = append(out, v...)
	}
	if err := it.Error(); err != nil {
		return zerocopy.Slice{}, err
	}
	return zerocopy.BytesSlice(out), nil
}

// StartOffset returns the log start offset.
func (l *Log) StartOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.start
}

// EndOffset returns the offset the next appended record gets.
func (l *Log) EndOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.end
}

// Size returns the bytes of the batches kept, including batches below the
// start offset that share a segment with it.
func (l *Log) Size() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.size
}

// LeaderEpochs returns a copy of the leader epoch history.
func (l *Log) LeaderEpochs() []engine.EpochEntry {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.epochs.Entries()
}

// SetConfig applies cfg (defaults filled) to later appends and retention.
// The config is not stored: the broker passes it at every OpenLog.
func (l *Log) SetConfig(cfg engine.LogConfig) error {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return l.errClosed()
	}
	l.cfg = engine.ShareLogConfig(cfg)
	return nil
}

// Flush syncs the store's WAL, which makes every append so far durable
// (this log's and every other's).
func (l *Log) Flush() error {
	l.s.life.RLock()
	defer l.s.life.RUnlock()
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	if l.closed {
		return l.errClosed()
	}
	if err := l.s.syncHeld(); err != nil {
		return err
	}
	return nil
}

// Close closes the log; the store's OpenLog opens it again. Closing twice
// is a no-op. It does not sync: every append, truncation and deletion was
// committed synced, and what was not (producer snapshots, the catalog entry
// of a new log) is made durable by the next sync of any log or by
// Store.Close, and costs only a longer replay or a re-creation if a crash
// loses it. A sync here made a broker's clean stop one fsync per partition
// (34 s for 100,000 partitions).
func (l *Log) Close() error {
	l.writeMu.Lock()
	closed := l.closed
	l.writeMu.Unlock()
	l.markClosed()
	if !closed {
		l.s.forget(l)
	}
	return nil
}

// markClosed makes every later call fail with engine.ErrClosed.
func (l *Log) markClosed() {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
}

func beU64(b []byte) uint64 { return binary.BigEndian.Uint64(b) }

func appendU64(dst []byte, v uint64) []byte { return binary.BigEndian.AppendUint64(dst, v) }
