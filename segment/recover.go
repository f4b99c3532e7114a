package segment

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/record"
)

// progressEvery is how many recovered bytes pass between progress logs.
const progressEvery = 256 << 20

// recoverBufSize is the read buffer of a recovery scan: batches up to this
// size are validated in place in the buffer.
const recoverBufSize = 4 << 20

// recoverReaders holds the recovery scans' read buffers: one 4 MiB buffer
// made per log recovered was, after a SIGKILL with 5,000 small partitions,
// half the restart's CPU (zeroing 20 GB and the GC that followed).
var recoverReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, recoverBufSize) }}

// loadLog opens the log of id from its directory, recovering it when the
// store was not shut down cleanly:
//
//   - leftovers (.deleted, .cleaned, .swap, .tmp) and index files without
//     a .log are removed; a .log whose name is not a 20-digit offset is an
//     error wrapping engine.ErrCorruptStore.
//   - After an unclean shutdown, every segment that may hold offsets at or
//     past the recovery point is recovered: each batch is validated
//     (record.ValidateStored: length, magic, CRC, records, allowing what
//     cleaning leaves) and must continue the offsets (with gaps allowed
//     in a compacted log, see Log.gaps); the segment is cut at the first one that does not, later
//     segments are deleted, and the indexes are rebuilt.
//   - Every other segment (all of them after a clean shutdown) keeps its
//     indexes if they pass a sanity check (ascending, inside the log, the
//     last offset entry pointing at a batch with that offset, batch headers
//     chaining from there to the end of the file); otherwise it is
//     recovered too.
//
// REQUIRES: s.mu held.
func (s *Store) loadLog(id engine.PartitionID, cfg engine.LogConfig) (*Log, error) {
	l := s.newLog(id, cfg)
	// unrecovered holds every log found at an unclean Open and every
	// log that failed since (see forget).
	clean := !s.unrecovered[id]
	rp, haveRP := s.recoveryPoints[id]
	if !haveRP {
		rp = 0
		if clean && s.clean {
			// A clean shutdown checkpoints every log; without an entry,
			// trust nothing.
			clean = false
		}
	}
	if err := l.completeSwaps(); err != nil {
		return nil, err
	}
	bases, err := l.scanDir()
	if err != nil {
		return nil, err
	}
	for i, base := range bases {
		maxBytes := 0
		if i == len(bases)-1 {
			maxBytes = l.cfg.Get().IndexMaxBytes
		}
		seg, err := openSegment(s.fs, l.dir, base, maxBytes)
		if err != nil {
			l.closeSegs()
			return nil, err
		}
		l.segs = append(l.segs, seg)
	}
	cached, epochErr := readEpochCheckpoint(filepath.Join(l.dir, leaderEpochFile))
	if epochErr != nil {
		l.store.log.Warn("segment: rebuilding leader epochs from the log", "err", epochErr)
	}
	l.epochs = engine.NewEpochCache(cached)
	began := time.Now()
	recovered, err := l.recoverSegments(clean, rp)
	if err != nil {
		l.closeSegs()
		return nil, err
	}
	if len(recovered) > 0 {
		var bytes int64
		for _, seg := range recovered {
			bytes += seg.size.Load()
		}
		l.store.log.Info("segment: recovered log", "dir", l.dir, "recoveryPoint", rp, "segments", len(recovered),
			"bytes", bytes, "endOffset", l.active().next, "took", time.Since(began).Round(time.Millisecond))
	}
	start := s.startOffsets[id]
	if len(l.segs) == 0 {
		// No segment files (a log never written, or all cut): an empty
		// segment at the start offset, its files created on first use.
		// scanDir removed any index file without its .log.
		l.segs = []*segment{lazySegment(s.fs, l.dir, start, l.cfg.Get(), s.now().UnixMilli(), s.cache)}
		l.newDirs.Or(newLogDir)
	}
	if start < l.segs[0].base {
		start = l.segs[0].base
	}
	end := l.active().next
	l.end.Store(end)
	l.start.Store(start)
	ck, ok := s.startOffsets[id]
	l.loadLogStart(ck, ok) // logstart.go
	// The recovery point is what is known durable: the checkpointed one
	// (the log end after a clean shutdown), never raised by loading.
	// What recovery validated is not fsynced here: it is on disk once a
	// flush covers it (after the next roll, log.flush.*, or the store's
	// Close), and until then a crash validates it again. Kafka's
	// LogLoader keeps min(recovery point, log end) for the same reason;
	// an fsync of every recovered segment made a restart after SIGKILL
	// of 20,000 small partitions take 30 s (3 fsyncs per partition).
	point := min(rp, end)
	if start > end {
		// Recovery cut below the checkpointed start: restart the log
		// at its start offset, as Kafka does.
		if err := l.restartAtLocked(start); err != nil {
			l.closeSegs()
			return nil, err
		}
		end, point = start, start
	}
	if epochErr != nil || (cached == nil && end > l.segs[0].base) {
		if err := l.rebuildEpochs(); err != nil {
			l.closeSegs()
			return nil, err
		}
	}
	l.epochs.TruncateFromEnd(end)
	l.epochs.TruncateFromStart(start)
	if got := l.epochs.Entries(); !equalEpochs(got, cached) || epochErr != nil {
		if err := l.writeEpochs(true); err != nil {
			l.closeSegs()
			return nil, err
		}
	}
	l.syncer.point.Store(point)
	// From here on the segments' files are opened on demand: the
	// cache may close them as soon as they are handed to it.
	l.managed = true
	for _, seg := range l.segs {
		seg.manage(l.store.cache)
	}
	return l, nil
}

func equalEpochs(a, b []engine.EpochEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// scanDir removes leftovers from the log's directory and returns the
// segment base offsets, ascending.
func (l *Log) scanDir() ([]int64, error) {
	entries, err := os.ReadDir(l.dir)
	if err != nil {
		return nil, fmt.Errorf("%w: read %s: %v", engine.ErrCorruptStore, l.dir, err)
	}
	logs := map[int64]bool{}
	var indexes []string
	for _, e := range entries {
		name := e.Name()
		path := filepath.Join(l.dir, name)
		switch {
		case e.IsDir() && !strings.HasSuffix(name, logSuffix):
		case strings.HasSuffix(name, deletedSuffix), strings.HasSuffix(name, cleanedSuffix),
			strings.HasSuffix(name, swapSuffix), strings.HasSuffix(name, tmpSuffix):
			l.store.log.Info("segment: removing leftover", "path", path)
			if err := os.Remove(path); err != nil {
				return nil, fmt.Errorf("segment: remove leftover: %w", err)
			}
		case strings.HasSuffix(name, logSuffix):
			base, err := parseSegmentName(strings.TrimSuffix(name, logSuffix))
			if err != nil {
				return nil, fmt.Errorf("%w: %s: %v", engine.ErrCorruptStore, path, err)
			}
			logs[base] = true
		case strings.HasSuffix(name, indexSuffix), strings.HasSuffix(name, timeIndexSuffix),
			strings.HasSuffix(name, txnIndexSuffix):
			indexes = append(indexes, name)
		}
	}
	for _, name := range indexes {
		stem := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, indexSuffix), timeIndexSuffix), txnIndexSuffix)
		if base, err := parseSegmentName(stem); err == nil && logs[base] {
			continue
		}
		path := filepath.Join(l.dir, name)
		l.store.log.Warn("segment: removing index without a log", "path", path)
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("segment: remove %s: %w", path, err)
		}
	}
	bases := make([]int64, 0, len(logs))
	for b := range logs {
		bases = append(bases, b)
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	return bases, nil
}

// recoverSegments checks or recovers every segment (see loadLog), drops
// the segments after a cut, and leaves l.segs with a ready active segment.
// It returns the segments it recovered.
func (l *Log) recoverSegments(clean bool, rp int64) ([]*segment, error) {
	var br *bufio.Reader
	var big []byte
	var recovered []*segment
	cut := false
	kept := l.segs[:0]
	all := l.segs
	for i, seg := range all {
		last := i == len(all)-1
		if prev := kept; !cut && len(prev) > 0 && (seg.base < prev[len(prev)-1].next || (!l.gaps() && seg.base != prev[len(prev)-1].next)) {
			l.store.log.Warn("segment: segment overlaps the one before", "file", seg.path, "previousEnd", kept[len(kept)-1].next, "base", seg.base)
			cut = true
		}
		if cut {
			l.store.log.Warn("segment: deleting segment after a damaged one", "file", seg.path, "bytes", seg.size.Load())
			if err := seg.remove(); err != nil {
				return recovered, err
			}
			continue
		}
		need := !clean && (last || all[i+1].base > rp)
		if !need {
			if err := l.checkSegment(seg, all, i); err != nil {
				l.store.log.Warn("segment: index failed its sanity check, recovering segment", "file", seg.path, "reason", err)
				need = true
			}
		}
		if need {
			if br == nil {
				br = recoverReaders.Get().(*bufio.Reader)
				defer func() {
					br.Reset(nil) // keep no file reachable from the pool
					recoverReaders.Put(br)
				}()
			}
			truncated, err := l.recoverSegment(seg, br, &big)
			if err != nil {
				return recovered, err
			}
			recovered = append(recovered, seg)
			// A cleaned segment covers up to the next one's base: an
			// entry's marker may have been cleaned away past its
			// last batch (or it may hold none).
			bound := seg.next
			if !last && !truncated && l.gaps() {
				bound = max(bound, all[i+1].base)
			}
			if err := l.checkTxnIndex(seg, bound); err != nil {
				return recovered, err
			}
			if !last && (truncated || seg.next > all[i+1].base || (!l.gaps() && seg.next != all[i+1].base)) {
				cut = true
			}
		}
		if seg.txn.cut > 0 {
			l.store.log.Warn("segment: cut a torn aborted-transaction index", "file", seg.txn.path, "bytes", seg.txn.cut)
		}
		kept = append(kept, seg)
	}
	for i := len(kept); i < len(all); i++ {
		all[i] = nil
	}
	l.segs = kept
	if len(l.segs) == 0 {
		return recovered, nil
	}
	for _, seg := range l.segs[:len(l.segs)-1] {
		if err := seg.idx.Trim(); err != nil {
			return recovered, err
		}
		if err := seg.tidx.Trim(); err != nil {
			return recovered, err
		}
	}
	a := l.active()
	a.indexBytes = l.cfg.Get().IndexMaxBytes // not managed yet: no lock needed
	if err := a.idx.Resize(l.cfg.Get().IndexMaxBytes); err != nil {
		return recovered, err
	}
	return recovered, a.tidx.Resize(l.cfg.Get().IndexMaxBytes)
}

// checkTxnIndex drops the aborted-transaction entries of a recovered
// segment whose marker is not in it (cut with a damaged tail, or an entry
// written for a marker that never reached the .log), and logs them. The
// entries of markers that reached the .log while their entry did not are
// not rebuilt here: that needs the producers' state (replication rebuilds
// it from the log tail).
func (l *Log) checkTxnIndex(seg *segment, bound int64) error {
	dropped, err := seg.txn.keepRange(seg.base, bound)
	if dropped > 0 {
		l.store.log.Warn("segment: dropping aborted-transaction entries outside the segment", "file", seg.txn.path, "entries", dropped, "end", bound)
	}
	return err
}

// checkSegment sanity-checks the indexes of segment i of segs and restores
// its writer state from them.
func (l *Log) checkSegment(seg *segment, segs []*segment, i int) error {
	span := int64(-1)
	if i+1 < len(segs) {
		span = segs[i+1].base - seg.base
	}
	if err := seg.idx.Check(seg.size.Load(), span); err != nil {
		return err
	}
	if err := seg.tidx.Check(span); err != nil {
		return err
	}
	if err := seg.restoreState(int64(l.cfg.Get().IndexIntervalBytes), l.gaps()); err != nil {
		return err
	}
	if span >= 0 && (seg.next > segs[i+1].base || (!l.gaps() && seg.next != segs[i+1].base)) {
		return fmt.Errorf("segment ends at offset %d, the next starts at %d", seg.next, segs[i+1].base)
	}
	bound := seg.next
	if span >= 0 && l.gaps() {
		// A cleaned segment covers up to the next one's base (see
		// recoverSegments).
		bound = max(bound, segs[i+1].base)
	}
	return seg.txn.check(seg.base, bound)
}

// recoverSegment validates every batch of seg from the start, cuts the
// file at the first batch that is torn, corrupt or out of sequence (and
// logs what it cut and why), and rebuilds the indexes and writer state.
// It reports whether it cut anything. Only I/O failures are errors.
func (l *Log) recoverSegment(seg *segment, br *bufio.Reader, big *[]byte) (bool, error) {
	if err := seg.idx.Resize(l.cfg.Get().IndexMaxBytes); err != nil {
		return false, err
	}
	if err := seg.tidx.Resize(l.cfg.Get().IndexMaxBytes); err != nil {
		return false, err
	}
	seg.resetState()
	size := seg.size.Load()
	br.Reset(io.NewSectionReader(seg.f, 0, size))
	interval := int64(l.cfg.Get().IndexIntervalBytes)
	readErr := func(err error) (bool, error) {
		return false, fmt.Errorf("%w: read %s: %v", engine.ErrCorruptStore, seg.path, err)
	}
	var pos int64
	reason := ""
	for pos < size {
		hdr, err := br.Peek(record.HeaderSize)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				return readErr(err)
			}
			reason = fmt.Sprintf("%d bytes at the end, less than a batch header", size-pos)
			break
		}
		n, _ := record.PeekSize(hdr)
		if !record.StoredSizeFits(n, size-pos) {
			reason = fmt.Sprintf("batch length %d does not fit the %d bytes left (torn write?)", n-record.LogOverhead, size-pos)
			break
		}
		var batch []byte
		if n <= br.Size() {
			if batch, err = br.Peek(n); err != nil {
				return readErr(err)
			}
		} else {
			if cap(*big) < n {
				*big = make([]byte, n)
			}
			batch = (*big)[:n]
			if _, err := io.ReadFull(br, batch); err != nil {
				return readErr(err)
			}
		}
		if _, err := record.ValidateStored(batch); err != nil {
			reason = err.Error()
			break
		}
		b := record.Batch(batch)
		if !engine.ContinuesLog(b.BaseOffset(), seg.next, l.gaps()) {
			reason = fmt.Sprintf("batch offset %d, expected %d", b.BaseOffset(), seg.next)
			break
		}
		if b.LastOffset()-seg.base > math.MaxInt32 {
			// Kafka's ensureOffsetInRange: the index stores offsets
			// relative to the base in 32 bits.
			reason = fmt.Sprintf("batch last offset %d is more than 2^31-1 past the segment base %d", b.LastOffset(), seg.base)
			break
		}
		seg.indexBatch(b, pos, interval)
		l.epochs.Assign(b.LeaderEpoch(), b.BaseOffset())
		if n <= br.Size() {
			br.Discard(n)
		}
		pos += int64(n)
		total := l.store.recoveredBytes.Add(int64(n))
		if total/progressEvery != (total-int64(n))/progressEvery {
			l.store.log.Info("segment: recovery progress", "dir", l.dir, "file", seg.path, "recoveredMiB", total>>20)
		}
	}
	if pos == size {
		return false, nil
	}
	l.store.log.Warn("segment: truncating damaged log", "file", seg.path, "position", pos, "bytes", size-pos, "reason", reason)
	if err := seg.f.Truncate(pos); err != nil {
		return false, fmt.Errorf("%w: truncate %s to %d: %v", engine.ErrCorruptStore, seg.path, pos, err)
	}
	seg.size.Store(pos)
	return true, nil
}

// rebuildEpochs rebuilds the epoch cache from the batch headers of every
// segment (the checkpoint was missing or damaged).
func (l *Log) rebuildEpochs() error {
	l.epochs = engine.NewEpochCache(nil)
	var hdr [record.HeaderSize]byte
	for _, seg := range l.segs {
		size := seg.size.Load()
		for pos := int64(0); pos < size; {
			n, err := seg.header(hdr[:headerEpochSize], pos, size)
			if err != nil {
				return fmt.Errorf("%w: %s: %v", engine.ErrCorruptStore, seg.path, err)
			}
			b := record.Batch(hdr[:])
			l.epochs.Assign(b.LeaderEpoch(), b.BaseOffset())
			pos += n
		}
	}
	return nil
}

// closeSegs closes the segments of a log that failed to load.
func (l *Log) closeSegs() {
	for _, s := range l.segs {
		if s != nil {
			s.close()
		}
	}
	l.segs = nil
}
