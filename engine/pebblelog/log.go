package pebblelog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/engine/tailcache"
	"github.com/sluice/sluice/record"
	"github.com/sluice/sluice/zerocopy"
)

// Log is one partition in the store's Pebble DB. Safe for concurrent use.
//
// Locking: every method that touches the DB holds s.life shared. writeMu
// serializes mutations (Append, Truncate, DeleteBefore, ApplyRetention,
// SetConfig, Close); a mutation commits its Pebble batch holding writeMu,
// then publishes the new in-memory state under mu. Fields under mu are
// written holding both locks and read holding either.
//
// Lock order: s.life, writeMu, mu, s.mu, then a dataFile's mu or the
// fileCache's mu (never both, datafile.go). Holding writeMu, a log takes
// s.mu (its first append registers its data file, a flush syncs the
// store), so nothing may take a published log's writeMu holding s.mu:
// DeleteLog and Store.Close look the log up under s.mu, release it, and
// then close the log (markClosed). The one exception is OpenLog, which
// recovers a log holding s.mu before publishing it: no one else can hold
// that log's locks.
type Log struct {
	s  *Store
	id engine.PartitionID
	n  uint64 // the partition's id in keys

	writeMu sync.Mutex
	keyBuf  [logKeyLen]byte     // REQUIRES: writeMu
	sumBuf  [segSummaryLen]byte // REQUIRES: writeMu
	failed  error               // sticky commit error; REQUIRES: writeMu

	// catalogSeq is the store's unsynced count right after CreateLog
	// committed the log's catalog entry (0 for a log found on disk): the
	// entry is durable once Store.synced reaches it. Set before the log
	// is published.
	catalogSeq uint64
	gen        uint64 // the last segment.gen given out; REQUIRES: writeMu
	replacing  bool   // a SegmentWriter is open; REQUIRES: writeMu

	mu    sync.RWMutex
	cfg   engine.SharedLogConfig // one copy per distinct config, shared by the logs
	start int64
	end   int64 // segs[len-1].next, or start when there is no segment
	// startPub and endPub are start and end, stored under mu (for
	// writing) wherever those change and read without it by StartOffset
	// and EndOffset: a fetch asks every partition of its session for
	// them, and their read lock was 12% of the broker's CPU at 10,000
	// partitions (sluice perf omb). A reader that then takes mu sees
	// the state they were stored with.
	startPub, endPub atomic.Int64
	// segs are ascending and cover the offsets densely: segs[i].next ==
	// segs[i+1].base. The batches inside may have gaps.
	segs       []segment
	size       int64 // sum of segs[i].bytes
	epochs     *engine.EpochCache
	checkpoint int64 // the cleaner checkpoint, as stored under metaCleaner
	closed     bool
	// recent is the copy of the data file's last bytes (when appends
	// are small) that tail reads are served from (engine/tailcache).
	// Kept by install, dropped by publish and markClosed, all under
	// writeMu.
	recent tailcache.Tail
	// df is the log's data file, nil until the log has one (set once,
	// holding writeMu and mu).
	df *dataFile
	// tail indexes the latest appends (tail.go); nil until the first.
	tail *tailIndex
}

func newLog(s *Store, id engine.PartitionID, n uint64, cfg engine.LogConfig) *Log {
	return &Log{s: s, id: id, n: n, cfg: engine.ShareLogConfig(cfg)}
}

// gaps reports whether the log's batches may skip offsets: a compacted
// log (a follower appends a compacted leader's batches as they are) or
// one the cleaner has run on, as segment.Log.gaps. Recovery accepts a
// batch past the log end only then. REQUIRES: writeMu held, or the log
// not yet published.
func (l *Log) gaps() bool { return l.cfg.Get().Compact || l.checkpoint > 0 }

// failure returns the log's sticky error: a failed write or commit, or a
// failed sync of its data file (by any flush: Flush, FlushMessages, a
// roll's background flush, the store's periodic flush), which makes it
// fail here from then on (dataFile.fail). REQUIRES: writeMu held.
func (l *Log) failure() error {
	if l.failed == nil && l.df != nil {
		if err := l.df.failure(); err != nil {
			l.failed = fmt.Errorf("%w: pebblelog: %s/%d: %w", engine.ErrStorage, l.id.Topic, l.id.Partition, err)
		}
	}
	return l.failed
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
	if err := l.loadDataFile(); err != nil {
		return err
	}

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
	defer func() { l.startPub.Store(l.start); l.endPub.Store(l.end) }()
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

// loadDataFile reads the data file positions of the log and attaches its
// dataFile when it has one (or may have one: recovery pending).
// REQUIRES: s.life and s.mu held.
func (l *Log) loadDataFile() error {
	pos, err := l.s.getU64(metaKey(l.n, metaPos))
	if err != nil {
		return err
	}
	flushed, err := l.s.getU64(metaKey(l.n, metaFlushed))
	if err != nil {
		return err
	}
	if pos == 0 && !l.s.recovering[l.n] && l.s.files[l.n] == nil {
		return nil
	}
	if int64(pos) < 0 || flushed > pos {
		return l.corrupt("data file positions: append %d, flushed %d", pos, flushed)
	}
	d := l.s.fileLocked(l.n)
	if d.pos.Load() < int64(pos) {
		d.pos.Store(int64(pos))
	}
	if d.flushed.Load() < int64(flushed) {
		d.flushed.Store(int64(flushed))
	}
	v, closer, err := l.s.db.Get(metaKey(l.n, metaPunch))
	switch {
	case err == nil:
		d.loadPunches(v, int64(pos))
		closer.Close()
	case !errors.Is(err, pebble.ErrNotFound):
		return fmt.Errorf("pebblelog: %s: %w", l.s.dir, err)
	}
	l.df = d
	return nil
}

// dataFileLocked returns the log's data file; a log without one gets it
// attached by writeLocked once the file exists, so that no Read looks for a
// file not yet created. REQUIRES: s.life and l.writeMu held.
func (l *Log) dataFileLocked() *dataFile {
	if l.df != nil {
		return l.df
	}
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	return l.s.fileLocked(l.n)
}

// writeLocked writes b at the append position of the log's data file and
// returns that position. REQUIRES: s.life and l.writeMu held.
func (l *Log) writeLocked(b []byte) (int64, error) {
	d := l.dataFileLocked()
	pos := d.pos.Load()
	if err := d.write(b, pos); err != nil {
		return 0, err
	}
	if l.df == nil {
		l.mu.Lock()
		l.df = d
		l.mu.Unlock()
	}
	return pos, nil
}

// staged is what an append changes in memory, installed after its commit.
type staged struct {
	tail    segment
	hasTail bool
	added   []segment // segments the append opens
	epochs  *engine.EpochCache
	end     int64
	bytes   int64
}

// stage adds to pb the index entries of batches (whole, valid, offsets
// assigned) written at data file position pos, and the segment summaries
// and epoch history they change. pos < 0 stores the batches inline, as
// format version 1 did (tests build such stores with it).
// REQUIRES: s.life and l.writeMu held.
func (l *Log) stage(pb *pebble.Batch, batches []byte, pos int64, nowMs int64) staged {
	cfg := l.cfg.Get()
	var st staged
	st.hasTail = len(l.segs) > 0
	if st.hasTail {
		st.tail = l.segs[len(l.segs)-1]
	}
	cur := &st.tail
	if !st.hasTail {
		cur = nil
	}
	end := l.end
	latest := l.epochs.Latest()
	var ptr [pointerLen]byte
	for off := 0; off < len(batches); {
		b := record.Batch(batches[off:])
		size := b.Size()
		b = b[:size]
		base := b.BaseOffset()
		if cur == nil || (cur.bytes > 0 && (cur.bytes+int64(size) > cfg.SegmentBytes || nowMs-cur.createdMs >= cfg.RollAge().Milliseconds())) {
			// The new segment starts where the one before ends (at
			// the log end when there is none), so that segments
			// cover the offsets densely even when a follower's
			// batch starts past it.
			segBase := end
			if cur != nil {
				segBase = cur.next
			}
			st.added = append(st.added, segment{base: segBase, maxTs: -1, createdMs: nowMs, gen: l.newGen()})
			cur = &st.added[len(st.added)-1]
		}
		if pos >= 0 {
			_ = pb.Set(logKey(l.keyBuf[:], tagBatch, l.n, base), encodePointer(ptr[:], pos+int64(off), size, b.LastOffsetDelta()), nil)
		} else {
			_ = pb.Set(logKey(l.keyBuf[:], tagBatch, l.n, base), b, nil)
		}
		_ = pb.Set(logKey(l.keyBuf[:], tagBatchIdx, l.n, base), encodeBatchSummary(l.sumBuf[:], b.LastOffsetDelta(), size, b.MaxTimestamp()), nil)
		cur.next = b.NextOffset()
		cur.bytes += int64(size)
		cur.maxTs = max(cur.maxTs, b.MaxTimestamp())
		cur.writeMs = nowMs
		if e := b.LeaderEpoch(); e > latest || st.epochs != nil {
			if st.epochs == nil {
				st.epochs = engine.NewEpochCache(l.epochs.Entries())
			}
			st.epochs.Assign(e, base)
		}
		end = b.NextOffset()
		off += size
	}
	if st.hasTail && st.tail.bytes != l.segs[len(l.segs)-1].bytes {
		_ = pb.Set(logKey(l.keyBuf[:], tagSegment, l.n, st.tail.base), st.tail.encode(l.sumBuf[:]), nil)
	}
	for i := range st.added {
		_ = pb.Set(logKey(l.keyBuf[:], tagSegment, l.n, st.added[i].base), st.added[i].encode(l.sumBuf[:]), nil)
	}
	if st.epochs != nil {
		_ = pb.Set(metaKey(l.n, metaEpochs), encodeEpochs(st.epochs.Entries()), nil)
	}
	if pos >= 0 {
		_ = pb.Set(metaKey(l.n, metaPos), appendU64(l.sumBuf[:0], uint64(pos+int64(len(batches)))), nil)
	}
	st.end, st.bytes = end, int64(len(batches))
	return st
}

// install publishes what stage prepared for batches written at pos (< 0:
// inline), after its commit. REQUIRES: l.writeMu held.
func (l *Log) install(st staged, batches []byte, pos int64) {
	// The copy is made before the index entries that let a reader find
	// these bytes are pushed, below, under l.mu.
	if pos >= 0 {
		l.recent.Keep(&l.s.tails, batches, pos)
	} else {
		l.recent.Drop()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case pos < 0 && l.tail != nil:
		l.tail.reset()
	case pos >= 0:
		if l.tail == nil {
			l.tail = new(tailIndex)
		}
		l.tail.push(batches, pos)
	}
	if st.hasTail {
		l.segs[len(l.segs)-1] = st.tail
	}
	l.segs = append(l.segs, st.added...)
	l.size += st.bytes
	l.end = st.end
	l.endPub.Store(st.end)
	if st.epochs != nil {
		l.epochs = st.epochs
	}
}

// Append validates batches with engine.PrepareAppend, writes them to the
// log's data file with one pwrite at its append position, then commits
// their index entries (pointers into the file) and the segment summaries
// they change in one Pebble batch, without a sync (but for the log's first
// append, which makes its catalog entry durable): once pwrite returned,
// the records are in the page cache and survive a process crash (recovery.go
// re-indexes them if the commit was lost). It syncs per
// LogConfig.FlushMessages. A write or commit error is sticky: the log
// refuses later appends with it (engine.ErrStorage).
func (l *Log) Append(batches []byte, opts engine.AppendOptions) (engine.AppendInfo, error) {
	l.s.life.RLock()
	defer l.s.life.RUnlock()
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	if l.closed {
		return engine.AppendInfo{}, l.errClosed()
	}
	if err := l.failure(); err != nil {
		return engine.AppendInfo{}, err
	}
	cfg := l.cfg.Get()
	info, err := engine.PrepareAppend(batches, l.end, opts, cfg.MaxBatchBytes)
	if err != nil {
		return engine.AppendInfo{}, fmt.Errorf("pebblelog: append to %s/%d: %w", l.id.Topic, l.id.Partition, err)
	}
	nowMs := l.s.now().UnixMilli()

	pos, err := l.writeLocked(batches)
	if err != nil {
		l.failed = fmt.Errorf("%w: pebblelog: append to %s/%d: %w", engine.ErrStorage, l.id.Topic, l.id.Partition, err)
		return engine.AppendInfo{}, l.failed
	}

	// A data file just created is not fsynced into its directory here:
	// the flush that first stores a flushed position for it does that
	// (dataFile.sync, syncfs), and a power loss before it may lose the
	// entry while a synced commit made the index durable, which recovery
	// reads as a file without data and cuts (checkShutdown,
	// TestMissingDataFileAfterPowerLoss). An fsync of the directory per
	// new log cost about 0.8 ms each, 8 s of a 10,000-partition topic's
	// first appends.

	pb := l.s.db.NewBatch()
	defer pb.Close()
	st := l.stage(pb, batches, pos, nowMs)
	commit := l.s.commitNoSync
	if pos == 0 && l.s.synced.Load() < l.catalogSeq {
		// The log's first bytes, before the store synced its catalog
		// entry (CreateLog committed it without a sync and asked the
		// catalog syncer for one): recovery only scans the data files
		// of logs in the catalog, and removes the others. This commit
		// makes the entry durable.
		commit = l.s.commitSynced
		l.s.firstSyncs.Add(1)
	}
	if err := commit(pb); err != nil {
		l.failed = fmt.Errorf("%w: pebblelog: %s: append to %s/%d: %w", engine.ErrStorage, l.s.dir, l.id.Topic, l.id.Partition, err)
		return engine.AppendInfo{}, l.failed
	}
	l.install(st, batches, pos)
	if len(st.added) > 0 && st.hasTail {
		// A segment rolled: flush what came before it in the
		// background, as Kafka and the segment backend do, so that
		// recovery after a power loss checks about one segment.
		l.flushRolled(pos)
	}
	if fm := cfg.FlushMessages; fm > 0 {
		d := l.df
		if d.msgs += info.Records; d.msgs >= fm {
			d.msgs = 0
			if err := l.flushLocked(); err != nil {
				if l.failed == nil {
					l.failed = fmt.Errorf("%w: %w", engine.ErrStorage, err)
				}
				return engine.AppendInfo{}, l.failed
			}
		}
	}
	return info, nil
}

// Read returns whole batches from the one holding offset (or the first
// after it when offset lies in a gap of a compacted log), as documented on
// engine.Log. It seeks to the last batch key <= offset (the first key when
// there is none). Batches in the data file come back as one file slice
// over the contiguous run of them from there (up to maxBytes, the first
// always), for sendfile; a run ends at a gap in the file or at an inline
// batch (written by format version 1), so a read may return less than
// maxBytes while more follows. Inline batches are copied out of the
// iterator (its memory is not stable) into one new buffer.
//
// The data file reference is taken before the Pebble iterator is opened:
// a trim punches the bytes it unindexed only while no such reference is
// held (see dataFile), so the bytes a read's index names stay there.
func (l *Log) Read(offset int64, maxBytes int, upTo int64) (zerocopy.Slice, error) {
	l.s.life.RLock()
	defer l.s.life.RUnlock()
	for attempt := 0; ; attempt++ {
		l.mu.RLock()
		closed, start, end, size, d := l.closed, l.start, l.end, l.size, l.df
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
		var zf *zerocopy.File
		if d != nil {
			var err error
			if zf, _, err = d.acquire(false); err != nil {
				if errors.Is(err, errGone) {
					return zerocopy.Slice{}, l.errClosed()
				}
				return zerocopy.Slice{}, fmt.Errorf("%w: pebblelog: %s: read %s/%d: %w", engine.ErrStorage, l.s.dir, l.id.Topic, l.id.Partition, err)
			}
		}
		if zf != nil {
			if s, ok := l.readTail(d, zf, offset, maxBytes, upTo); ok {
				zf.Release()
				return s, nil
			}
		}
		s, retry, err := l.read(d, zf, offset, maxBytes, upTo, end, size)
		if zf != nil {
			zf.Release()
		}
		// retry: the log got its data file after the state was read.
		if !retry {
			return s, err
		}
		if attempt > 0 {
			return zerocopy.Slice{}, fmt.Errorf("%w: pebblelog: %s: read %s/%d at %d: the index names the data file, which the log does not have",
				engine.ErrStorage, l.s.dir, l.id.Topic, l.id.Partition, offset)
		}
	}
}

// readTail is Read from the tail index (tail.go), with the reference zf
// taken on the data file d: ok is false when the index cannot answer.
// The entries are looked at under l.mu after zf was taken, so the bytes
// they name are indexed then and cannot be punched before zf goes.
func (l *Log) readTail(d *dataFile, zf *zerocopy.File, offset int64, maxBytes int, upTo int64) (zerocopy.Slice, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.tail == nil || l.closed || offset < l.start || offset >= l.end || l.df != d {
		return zerocopy.Slice{}, false
	}
	pos, n, ok := l.tail.find(offset, maxBytes, upTo, d.size.Load())
	if !ok || n == 0 {
		return zerocopy.Slice{}, ok
	}
	if s, ok := l.recent.Slice(pos, pos+n); ok {
		return s, true
	}
	return zerocopy.FileSlice(zf, pos, n), true
}

// read is Read over the index, with the data file d (nil: none when the
// log state was read) and the reference zf taken on it.
func (l *Log) read(d *dataFile, zf *zerocopy.File, offset int64, maxBytes int, upTo, end, size int64) (s zerocopy.Slice, retry bool, err error) {
	var keys [3 * logKeyLen]byte
	it, err := l.s.db.NewIter(&pebble.IterOptions{
		LowerBound: logKey(keys[0:], tagBatch, l.n, 0),
		UpperBound: logKey(keys[logKeyLen:], tagBatch, l.n, end),
	})
	if err != nil {
		return zerocopy.Slice{}, false, err
	}
	defer it.Close()
	// The batch holding offset is the last one whose base is <= offset;
	// when that one ends before offset (a gap), or there is none, the
	// batch wanted is the next one.
	ok := it.SeekLT(logKey(keys[2*logKeyLen:], tagBatch, l.n, offset+1))
	if !ok {
		if err := it.Error(); err != nil {
			return zerocopy.Slice{}, false, err
		}
		ok = it.First()
	}
	var out []byte             // inline batches
	fpos, flen := int64(-1), 0 // the file run, when fpos >= 0
	var fileSize int64
	for ; ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return zerocopy.Slice{}, false, err
		}
		base, _ := keyOffset(it.Key())
		p, isPtr, bad := decodePointer(v)
		var last int64
		switch {
		case bad:
			return zerocopy.Slice{}, false, l.corrupt("batch pointer at %d: %x", base, v)
		case isPtr:
			last = base + int64(p.lastOffsetDelta)
		default:
			if n, ok := record.PeekSize(v); !ok || n != len(v) || len(v) < record.HeaderSize {
				return zerocopy.Slice{}, false, l.corrupt("batch at %d: %d bytes, header says %d", base, len(v), n)
			}
			last = record.Batch(v).LastOffset()
		}
		if upTo >= 0 && last >= upTo {
			break
		}
		if out == nil && fpos < 0 {
			if last < offset { // a gap, or offsets below start
				continue
			}
			if !isPtr {
				// One allocation: maxBytes bounds what follows the
				// first batch, and the log's size bounds it all.
				out = make([]byte, 0, max(len(v), int(min(int64(maxBytes), size))))
				out = append(out, v...)
				continue
			}
			if zf == nil {
				return zerocopy.Slice{}, true, nil
			}
			fileSize = d.size.Load()
			if p.pos+int64(p.size) > fileSize {
				return zerocopy.Slice{}, false, l.corrupt("batch at %d: index names bytes [%d, %d) of %s, which holds %d",
					base, p.pos, p.pos+int64(p.size), d.path, fileSize)
			}
			fpos, flen = p.pos, p.size
			continue
		}
		if fpos >= 0 {
			if !isPtr || p.pos != fpos+int64(flen) || flen+p.size > maxBytes || p.pos+int64(p.size) > fileSize {
				break
			}
			flen += p.size
			continue
		}
		if isPtr || len(out)+len(v) > maxBytes {
			break
		}
		out = append(out, v...)
	}
	if err := it.Error(); err != nil {
		return zerocopy.Slice{}, false, err
	}
	if fpos >= 0 {
		return zerocopy.FileSlice(zf, fpos, int64(flen)), false, nil
	}
	return zerocopy.BytesSlice(out), false, nil
}

// StartOffset returns the log start offset.
func (l *Log) StartOffset() int64 { return l.startPub.Load() }

// EndOffset returns the offset the next appended record gets.
func (l *Log) EndOffset() int64 { return l.endPub.Load() }

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

// Flush makes every append so far durable: it fdatasyncs the log's data
// file, then commits the flushed position with a sync of the store's WAL
// (which makes every other log's index durable too, not their data files).
func (l *Log) Flush() error {
	l.s.life.RLock()
	defer l.s.life.RUnlock()
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	if l.closed {
		return l.errClosed()
	}
	return l.flushLocked()
}

// flushRolled starts a background fdatasync of the data file, which
// stores the flushed position (at least upTo) without a sync of its own
// once done; the next sync of the WAL makes it durable. At most one runs
// per data file: a roll meanwhile is covered by the next one.
// REQUIRES: s.life and l.writeMu held.
func (l *Log) flushRolled(upTo int64) {
	d := l.df
	if d.flushed.Load() >= upTo || !d.flushing.CompareAndSwap(false, true) {
		return
	}
	s := l.s
	go func() {
		defer d.flushing.Store(false)
		s.life.RLock()
		defer s.life.RUnlock()
		if s.closed {
			return
		}
		p, err := d.sync()
		if err != nil {
			// The file is failed for good (dataFile.fail): the
			// log's next append or flush returns the error.
			s.logger.Error("pebblelog: background flush of a rolled segment failed; the log refuses appends from now on", "file", d.path, "err", err)
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.files[d.n] != d { // deleted meanwhile
			return
		}
		pb := s.db.NewBatch()
		defer pb.Close()
		setFlushed(pb, d.n, p)
		if err := s.commitNoSync(pb); err != nil {
			s.logger.Warn("pebblelog: store flushed position", "file", d.path, "err", err)
		}
	}()
}

// flushLocked is Flush. The data file goes first, so the WAL never durably
// names bytes that are not. REQUIRES: s.life and l.writeMu held.
func (l *Log) flushLocked() error {
	if err := l.failure(); err != nil {
		return err
	}
	if l.df != nil && l.df.dirty.Load() {
		p, err := l.df.sync()
		if err != nil {
			if ferr := l.failure(); ferr != nil {
				return ferr
			}
			return fmt.Errorf("pebblelog: %s: flush %s/%d: %w", l.s.dir, l.id.Topic, l.id.Partition, err)
		}
		pb := l.s.db.NewBatch()
		defer pb.Close()
		setFlushed(pb, l.n, p)
		if err := l.s.commitSynced(pb); err != nil {
			return fmt.Errorf("pebblelog: %s: flush %s/%d: %w", l.s.dir, l.id.Topic, l.id.Partition, err)
		}
		return nil
	}
	// Another log's data file failing its sync fails that log, not
	// this flush.
	_, err := l.s.syncAll()
	return err
}

// Close closes the log; the store's OpenLog opens it again. Closing twice
// is a no-op. It does not sync: appends are in the page cache, truncations
// and deletions were committed synced, and the next flush of the store (the
// flush interval, Store.Close) syncs the data file and the WAL; a crash
// before that is repaired by recovery (recovery.go). A sync here made a
// broker's clean stop one fsync per partition (34 s for 100,000
// partitions). The log's data file stays in the store's file cache.
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
	l.recent.Drop()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
}

func beU64(b []byte) uint64 { return binary.BigEndian.Uint64(b) }

func appendU64(dst []byte, v uint64) []byte { return binary.BigEndian.AppendUint64(dst, v) }
