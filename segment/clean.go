package segment

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/internal/fsutil"
	"github.com/sluice/sluice/record"
)

// This file is the segment backend's side of log compaction
// (engine.Compactable): the cleaner (engine/cleaner) reads a group of
// inactive segments through Read and writes what survives through a
// cleanWriter, which replaces the group with one segment the way Kafka's
// Log.replaceSegments does, so that a crash at any point leaves the old
// segments or the new one:
//
//  1. The new segment is written as <from>.log.cleaned (and .index.cleaned,
//     .timeindex.cleaned) and fsynced. A crash now: recovery removes the
//     .cleaned files; the old segments are untouched.
//  2. The .cleaned files are renamed to .swap and the directory fsynced:
//     the commit point. A crash from here on: recovery finds the .swap,
//     removes every segment whose base lies in [from, the swap's last
//     offset], and renames the .swap files into place (completeSwaps).
//  3. The old segments are removed, the .swap files renamed to their
//     final names, the directory fsynced.
//
// The cleaned segment may end before the group's last segment begins (the
// cleaner keeps no batch at a group's end, only a round's last batch, as
// Kafka does), or hold no batch at all. Step 2's recovery then removes only
// the old segments whose base lies within the swap's range and keeps the
// later ones of the group as they were: their batches are all past the
// swap's, so the log stays ordered and loses nothing the cleaner kept, and
// the next round cleans them again. An empty .swap covers [base, base].

// InactiveSegments implements engine.Compactable.
func (l *Log) InactiveSegments() []engine.SegmentInfo {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed.Load() || len(l.segs) < 2 {
		return nil
	}
	out := make([]engine.SegmentInfo, 0, len(l.segs)-1)
	for i, s := range l.segs[:len(l.segs)-1] {
		out = append(out, engine.SegmentInfo{
			Base:                s.base,
			Next:                l.segs[i+1].base,
			End:                 s.next,
			Bytes:               s.size.Load(),
			FirstBatchTimestamp: s.firstBatchTimestamp(),
			LargestTimestamp:    s.maxTs.Load(),
		})
	}
	return out
}

// firstBatchTimestamp is the maxTimestamp of the segment's first batch, -1
// when it has none; read once and cached (inactive segments do not
// change). REQUIRES: the log's mu held.
func (s *segment) firstBatchTimestamp() int64 {
	if ts := s.firstTs.Load(); ts != math.MinInt64 {
		return ts
	}
	ts := int64(-1)
	var hdr [record.HeaderSize]byte
	if size := s.size.Load(); size >= record.HeaderSize {
		if err := s.pin(); err != nil {
			return -1 // not cached: tried again next time
		}
		_, err := s.f.ReadAt(hdr[:], 0)
		s.unpin()
		if err == nil {
			ts = record.Batch(hdr[:]).MaxTimestamp()
		}
	}
	s.firstTs.Store(ts)
	return ts
}

// CleanerCheckpoint implements engine.Compactable: the log's entry in the
// log dir's cleaner-offset-checkpoint.
func (l *Log) CleanerCheckpoint() int64 { return l.store.cleanerPoint(l.id) }

// SetCleanerCheckpoint implements engine.Compactable.
func (l *Log) SetCleanerCheckpoint(offset int64) error {
	l.appendMu.Lock() // not interleaved with a truncation or a close
	defer l.appendMu.Unlock()
	if l.closed.Load() {
		return errClosedLog
	}
	return l.store.setCleanerPoint(l.id, offset)
}

// covering returns the segments that cover exactly [from, to), all
// inactive, or nil. REQUIRES: l.mu held.
func (l *Log) covering(from, to int64) (int, []*segment) {
	for i, s := range l.segs {
		if s.base != from {
			continue
		}
		for j := i; j+1 < len(l.segs); j++ {
			if l.segs[j+1].base == to {
				return i, l.segs[i : j+1 : j+1]
			}
			if l.segs[j+1].base > to {
				break
			}
		}
		break
	}
	return -1, nil
}

// ReplaceSegments implements engine.Compactable.
func (l *Log) ReplaceSegments(from, to int64) (engine.SegmentWriter, error) {
	l.appendMu.Lock()
	if l.closed.Load() {
		l.appendMu.Unlock()
		return nil, errClosedLog
	}
	if err := l.failure(); err != nil {
		l.appendMu.Unlock()
		return nil, err
	}
	cfg := l.cfg.Get()
	l.mu.RLock()
	_, old := l.covering(from, to)
	old = append([]*segment(nil), old...)
	gens := make([]uint64, len(old))
	for i, s := range old {
		gens[i] = s.gen
	}
	l.mu.RUnlock()
	l.appendMu.Unlock()
	if len(old) == 0 {
		return nil, fmt.Errorf("%w: no inactive segments cover [%d, %d) in %s", engine.ErrCleanConflict, from, to, l.dir)
	}
	if !l.cleaning.CompareAndSwap(false, true) {
		return nil, fmt.Errorf("segment: %s: a replacement is already open", l.dir)
	}
	for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
		if err := os.Remove(segmentPath(l.dir, from, suf) + cleanedSuffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			l.cleaning.Store(false)
			return nil, fmt.Errorf("segment: remove leftover: %w", err)
		}
	}
	// The indexes need at most an entry per index.interval.bytes of the
	// group's bytes (what is written is no more than what is read):
	// preallocate that, not segment.index.bytes.
	var bytes int64
	for _, s := range old {
		bytes += s.size.Load()
	}
	entries := bytes/int64(max(cfg.IndexIntervalBytes, 1)) + 2
	indexBytes := int(min(int64(cfg.IndexMaxBytes), entries*12))
	seg, err := openSegmentAs(l.store.fs, l.dir, from, indexBytes, cleanedSuffix)
	if err != nil {
		l.cleaning.Store(false)
		return nil, err
	}
	// The aborted transactions of the replaced segments stay: a
	// read_committed fetch of what remains of them must still skip the
	// aborted records the cleaner keeps.
	for _, s := range old {
		if err == nil {
			err = seg.txn.append(s.txn.all()...)
		}
	}
	if err != nil {
		seg.close()
		for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
			os.Remove(segmentPath(l.dir, from, suf) + cleanedSuffix)
		}
		l.cleaning.Store(false)
		return nil, err
	}
	return &cleanWriter{l: l, from: from, to: to, next: from, old: old, gens: gens, seg: seg,
		interval: int64(cfg.IndexIntervalBytes), checkpoint: -1}, nil
}

// crashAt, set by tests, stops Commit just before step n (see the
// numbered steps in Commit) as a crash would, leaving the files as they
// are; Commit then returns errCrashed.
var crashAt func(step int) bool

var errCrashed = errors.New("segment: test crash")

func crashed(step int) bool { return crashAt != nil && crashAt(step) }

// cleanWriter writes one cleaned segment (see the top of this file).
type cleanWriter struct {
	l        *Log
	from, to int64
	next     int64 // batches must start here or later
	old      []*segment
	gens     []uint64 // old's gens when ReplaceSegments saw them
	seg      *segment // the .cleaned files; nil once handed over or removed
	pos      int64
	interval int64
	done     bool
	// checkpoint >= 0: Commit sets the cleaner checkpoint to it.
	checkpoint int64
}

// SetCheckpoint implements engine.SegmentWriter.
func (w *cleanWriter) SetCheckpoint(offset int64) { w.checkpoint = offset }

// Write implements engine.SegmentWriter.
func (w *cleanWriter) Write(batches []byte) error {
	if w.done || w.seg == nil {
		return errors.New("segment: write after commit or abort")
	}
	next := w.next
	for p := 0; p < len(batches); {
		n, ok := record.PeekSize(batches[p:])
		if !ok || n < record.HeaderSize || n > len(batches)-p {
			return fmt.Errorf("segment: cleaned batches: torn batch at byte %d", p)
		}
		b := record.Batch(batches[p:])
		if b.BaseOffset() < next || b.LastOffset() >= w.to {
			return fmt.Errorf("segment: cleaned batch [%d, %d] outside [%d, %d)", b.BaseOffset(), b.LastOffset(), next, w.to)
		}
		next = b.NextOffset()
		p += n
	}
	if _, err := fsutil.WriteAt(w.seg.f, batches, w.pos); err != nil {
		return fmt.Errorf("segment: write %s: %w", w.seg.path, err)
	}
	for p := 0; p < len(batches); {
		b := record.Batch(batches[p:])
		w.seg.indexBatch(b, w.pos+int64(p), w.interval)
		p += b.Size()
	}
	w.pos += int64(len(batches))
	w.seg.size.Store(w.pos)
	w.next = next
	return nil
}

// Commit implements engine.SegmentWriter.
func (w *cleanWriter) Commit() error {
	if w.done || w.seg == nil {
		return errors.New("segment: commit after commit or abort")
	}
	l := w.l
	if err := w.seg.roll(); err != nil {
		return err
	}
	if err := w.seg.flush(); err != nil {
		return err
	}
	// The new segment's writer state, so that swapping it in does not
	// rescan it under the locks.
	state := segState{next: w.seg.next, maxTs: w.seg.maxTs.Load(), maxTsOffset: w.seg.maxTsOffset, bytesSinceIndex: w.seg.bytesSinceIndex}
	seg := w.seg
	w.seg = nil
	if err := seg.close(); err != nil {
		return err
	}
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.closed.Load() {
		return errClosedLog
	}
	if err := l.failure(); err != nil {
		return err
	}
	l.mu.RLock()
	_, cur := l.covering(w.from, w.to)
	same := sameSegments(cur, w.old, w.gens)
	l.mu.RUnlock()
	if !same {
		return fmt.Errorf("%w: segments [%d, %d) of %s changed", engine.ErrCleanConflict, w.from, w.to, l.dir)
	}
	// 2. The commit point. The .txnindex (present only when the segments
	// had aborted transactions) goes first: a crash before the .log's
	// rename leaves it as a leftover .swap, removed on load.
	txnPath := segmentPath(l.dir, w.from, txnIndexSuffix)
	if err := os.Rename(txnPath+cleanedSuffix, txnPath+swapSuffix); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("segment: rename %s: %w", txnPath+cleanedSuffix, err)
	}
	for k, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
		if crashed(1 + k) { // 1: before any rename, 2-3: between them
			return errCrashed
		}
		p := segmentPath(l.dir, w.from, suf)
		if err := os.Rename(p+cleanedSuffix, p+swapSuffix); err != nil {
			if suf == logSuffix {
				return fmt.Errorf("segment: rename %s: %w", p+cleanedSuffix, err)
			}
			// Past the commit point: the log must be reloaded.
			return l.fail(fmt.Errorf("rename %s: %w", p+cleanedSuffix, err))
		}
	}
	if err := syncDir(l.dir); err != nil {
		return l.fail(fmt.Errorf("fsync %s: %w", l.dir, err))
	}
	// 3. Swap in.
	if crashed(4) {
		return errCrashed
	}
	l.mu.Lock()
	i, cur := l.covering(w.from, w.to)
	var err error
	for k, s := range cur {
		if k == 1 && crashed(5) { // some old segments removed
			l.mu.Unlock()
			return errCrashed
		}
		if rerr := s.remove(); err == nil {
			err = rerr
		}
	}
	if err != nil {
		// An old segment may be left: renaming the swap into place
		// now would overlap it. A reload completes the swap.
		l.mu.Unlock()
		return l.fail(fmt.Errorf("remove replaced segments of %s: %w", l.dir, err))
	}
	if rerr := os.Rename(txnPath+swapSuffix, txnPath); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
		err = rerr
	}
	for k, suf := range []string{indexSuffix, timeIndexSuffix, logSuffix} {
		if crashed(6 + k) { // 6: old removed, 7-8: some renamed
			l.mu.Unlock()
			return errCrashed
		}
		p := segmentPath(l.dir, w.from, suf)
		if rerr := os.Rename(p+swapSuffix, p); err == nil && rerr != nil {
			err = rerr
		}
	}
	var ns *segment
	if err == nil {
		ns, err = openSegment(l.store.fs, l.dir, w.from, 0)
	}
	if err == nil {
		ns.next, ns.maxTsOffset, ns.bytesSinceIndex = state.next, state.maxTsOffset, state.bytesSinceIndex
		ns.maxTs.Store(state.maxTs)
	}
	if err != nil {
		// The old segments are gone from the directory; until a reload
		// completes the swap, reads of them keep the open handles.
		l.mu.Unlock()
		return l.fail(fmt.Errorf("swap in cleaned segment %d of %s: %w", w.from, l.dir, err))
	}
	segs := make([]*segment, 0, len(l.segs)-len(cur)+1)
	segs = append(segs, l.segs[:i]...)
	segs = append(segs, ns)
	segs = append(segs, l.segs[i+len(cur):]...)
	l.manage(ns)
	l.segs = segs
	l.mu.Unlock()
	w.done = true
	l.cleaning.Store(false)
	if err := syncDir(l.dir); err != nil {
		return l.fail(fmt.Errorf("fsync %s: %w", l.dir, err))
	}
	if w.checkpoint >= 0 {
		// Still under appendMu: no truncation between the swap and this.
		return l.store.setCleanerPoint(l.id, w.checkpoint)
	}
	return nil
}

// segState is a segment's writer state.
type segState struct {
	next, maxTs, maxTsOffset, bytesSinceIndex int64
}

// Abort implements engine.SegmentWriter.
func (w *cleanWriter) Abort() {
	if w.done {
		return
	}
	w.done = true
	if w.seg != nil {
		w.seg.close()
		w.seg = nil
	}
	for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
		os.Remove(segmentPath(w.l.dir, w.from, suf) + cleanedSuffix)
	}
	w.l.cleaning.Store(false)
}

// sameSegments reports whether cur are the segments old, unchanged since
// they had gens (a truncation cuts a segment in place and bumps its gen).
// REQUIRES: the log's mu held.
func sameSegments(cur, old []*segment, gens []uint64) bool {
	if len(cur) != len(old) {
		return false
	}
	for i := range cur {
		if cur[i] != old[i] || cur[i].gen != gens[i] {
			return false
		}
	}
	return true
}

// completeSwaps finishes cleanings that crashed past their commit point
// (see the top of this file): for each <base>.log.swap in dir, the
// segments whose base lies in [base, the swap's last offset] are removed
// and the .swap files renamed into place. It runs before the directory
// scan of a log's load.
func (l *Log) completeSwaps() error {
	entries, err := os.ReadDir(l.dir)
	if err != nil {
		return fmt.Errorf("%w: read %s: %v", engine.ErrCorruptStore, l.dir, err)
	}
	var logs []int64
	var swaps []int64
	for _, e := range entries {
		name := e.Name()
		switch {
		case strings.HasSuffix(name, logSuffix+swapSuffix):
			if base, err := parseSegmentName(strings.TrimSuffix(name, logSuffix+swapSuffix)); err == nil {
				swaps = append(swaps, base)
			}
		case strings.HasSuffix(name, logSuffix):
			if base, err := parseSegmentName(strings.TrimSuffix(name, logSuffix)); err == nil {
				logs = append(logs, base)
			}
		}
	}
	for _, base := range swaps {
		swap := segmentPath(l.dir, base, logSuffix) + swapSuffix
		end, ok, err := swapEnd(swap, base)
		if err != nil {
			return err
		}
		if !ok {
			// Not what a cleaning fsyncs before its commit point:
			// scanDir removes it as a leftover.
			l.store.log.Warn("segment: ignoring a .swap file that holds no whole batches", "swap", swap)
			continue
		}
		l.store.log.Warn("segment: completing an interrupted cleaning", "swap", swap, "replaces", fmt.Sprintf("[%d, %d]", base, end))
		for _, b := range logs {
			if b < base || b > end {
				continue
			}
			for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
				if err := os.Remove(segmentPath(l.dir, b, suf)); err != nil && !errors.Is(err, os.ErrNotExist) {
					return fmt.Errorf("segment: remove replaced segment: %w", err)
				}
			}
		}
		for _, suf := range []string{txnIndexSuffix, indexSuffix, timeIndexSuffix, logSuffix} {
			p := segmentPath(l.dir, base, suf)
			if err := os.Rename(p+swapSuffix, p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("segment: rename %s: %w", p+swapSuffix, err)
			}
		}
	}
	if len(swaps) > 0 {
		if err := syncDir(l.dir); err != nil {
			return fmt.Errorf("segment: fsync %s: %w", l.dir, err)
		}
	}
	return nil
}

// swapEnd returns the last offset of the batches in a .swap file, reading
// their headers (base for an empty file: a group whose batches were all
// removed); ok is false unless they chain exactly to the end of the file,
// as a swap fsynced before its rename does.
func swapEnd(path string, base int64) (end int64, ok bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false, fmt.Errorf("%w: open %s: %v", engine.ErrCorruptStore, path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, false, fmt.Errorf("%w: stat %s: %v", engine.ErrCorruptStore, path, err)
	}
	end = base
	var hdr [headerLastDeltaEnd]byte
	pos := int64(0)
	for pos+headerLastDeltaEnd <= st.Size() {
		if _, err := f.ReadAt(hdr[:], pos); err != nil && err != io.EOF {
			return 0, false, fmt.Errorf("%w: read %s: %v", engine.ErrCorruptStore, path, err)
		}
		b := record.Batch(hdr[:])
		n := int64(binary.BigEndian.Uint32(hdr[8:12])) + record.LogOverhead
		if n < record.HeaderSize || pos+n > st.Size() || b.BaseOffset() < end || b.Magic() != record.Magic {
			return 0, false, nil
		}
		end = b.LastOffset()
		pos += n
	}
	return end, pos == st.Size(), nil
}

// hasCleanerPoint reports whether id has a cleaner checkpoint entry: it
// was cleaned, or a follower append copied a leader's gaps (markGaps).
// Such a log's offsets may have gaps (see Log.gaps).
func (s *Store) hasCleanerPoint(id engine.PartitionID) bool {
	s.cleanMu.Lock()
	defer s.cleanMu.Unlock()
	_, ok := s.cleanerPoints[id]
	return ok
}

// markGaps records that id's offsets may have gaps from now on: an entry
// (0, "never cleaned", if there was none) in cleaner-offset-checkpoint.
func (s *Store) markGaps(id engine.PartitionID) error {
	s.cleanMu.Lock()
	defer s.cleanMu.Unlock()
	if _, ok := s.cleanerPoints[id]; ok {
		return nil
	}
	return s.setCleanerPointLocked(id, 0)
}

// lowerCleanerPoint lowers id's cleaner checkpoint to offset (a
// truncation), as Kafka's maybeTruncateCheckpoint; the entry stays.
func (s *Store) lowerCleanerPoint(id engine.PartitionID, offset int64) error {
	s.cleanMu.Lock()
	defer s.cleanMu.Unlock()
	if cp, ok := s.cleanerPoints[id]; !ok || cp <= offset {
		return nil
	}
	return s.setCleanerPointLocked(id, offset)
}

// cleanerPoint returns id's cleaner checkpoint (0: never cleaned).
func (s *Store) cleanerPoint(id engine.PartitionID) int64 {
	s.cleanMu.Lock()
	defer s.cleanMu.Unlock()
	return s.cleanerPoints[id]
}

// setCleanerPoint records id's cleaner checkpoint and rewrites the log
// dir's cleaner-offset-checkpoint (Kafka's file and format).
func (s *Store) setCleanerPoint(id engine.PartitionID, offset int64) error {
	s.cleanMu.Lock()
	defer s.cleanMu.Unlock()
	return s.setCleanerPointLocked(id, offset)
}

// forgetCleanerPoint drops a deleted log's entry (written with the next
// change).
func (s *Store) forgetCleanerPoint(id engine.PartitionID) {
	s.cleanMu.Lock()
	defer s.cleanMu.Unlock()
	delete(s.cleanerPoints, id)
}

// REQUIRES: s.cleanMu.
func (s *Store) setCleanerPointLocked(id engine.PartitionID, offset int64) error {
	s.cleanerPoints[id] = offset
	return writeOffsetCheckpoint(filepath.Join(s.dir, cleanerOffsetFile), s.cleanerPoints)
}
