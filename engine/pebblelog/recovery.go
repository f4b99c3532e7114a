package pebblelog

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/cockroachdb/pebble/v2"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/record"
	"github.com/sluice/sluice/zerocopy"
)

// Recovery. Store.Close writes the clean-shutdown key (tagClean) in its
// last, synced commit; Open deletes it (synced) and, when it was missing,
// marks every log with a data file or an append position for recovery at
// its OpenLog (a data file whose directory entry a power loss dropped
// reads as empty, and step 1 cuts the index), removes the data files of
// log ids the catalog does not hold (a DeleteLog or a CreateLog cut short;
// ids are never reused), and fsyncs the records directory.
//
// Recovery of a log has two steps, each as the segment backend does with a
// segment past its recovery point:
//
//  1. Power loss. Index entries may be durable while the data they name is
//     not: a synced commit of any log (a truncation, a high watermark
//     checkpoint) makes every append committed before it durable, data
//     file or not. So the batches indexed at or past the flushed position
//     (metaFlushed: every byte below it was fdatasync'd before it was
//     stored) are read back and checked (size, CRC, offsets); the index is
//     truncated at the first that fails. The flushed position advances at
//     each segment roll (Log.flushRolled) and each flush, so this reads
//     about the active segment of each log written since.
//
//  2. Process crash. Append commits are not synced, so the index may end
//     before the data file does. The file is scanned from the stored append
//     position (metaPos, committed with every append): each whole batch
//     with a valid CRC whose base offset is the log end offset (at or past
//     it in a log that may have gaps, Log.gaps: a follower copies a
//     compacted leader's batches as they are) is indexed,
//     in synced commits; the file is cut (ftruncate) at the first byte
//     that is not such a batch. When step 1 cut the index, step 2 is
//     skipped and the file is cut at the append position instead: the
//     bytes past it belong to the history step 1 removed.
//
// Why step 2 never brings back truncated records: the append position only
// grows, every commit that removes batches (truncation, retention,
// cleaning, DeleteLog) is synced, and the WAL is replayed in order, so a
// removal that survived comes with every append committed before it, hence
// with an append position past the removed bytes; the scan starts there.
// Step 1 runs first; if it cut the index, step 2 does not run and the file
// is cut at the append position, so that no byte of the cut history stays
// past it for a later tail scan to find once new appends reach it.
//
// Ordering of flushes: the flushed position is only stored after the
// fdatasync of the bytes below it, and cleaning fdatasyncs its output
// before its synced commit, which stores the new append position as the
// flushed one. So the pointers at or past the flushed position are in
// offset order at the end of the index, which step 1 relies on.

// checkShutdown reads and deletes the clean-shutdown key, and after an
// unclean shutdown lists the data files to recover and removes orphans.
// REQUIRES: called from Open, before any log is opened.
func (s *Store) checkShutdown() error {
	if _, err := os.Stat(s.dataDir); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(s.dataDir, 0o755); err != nil {
			return fmt.Errorf("pebblelog: %w", err)
		}
		// The data files' directory must survive a power loss with
		// the first file created in it.
		if err := syncDir(s.dir); err != nil {
			return err
		}
	} else if err != nil {
		return fmt.Errorf("pebblelog: %w", err)
	}
	_, closer, err := s.db.Get([]byte{tagClean})
	switch {
	case err == nil:
		closer.Close()
		if err := s.db.Delete([]byte{tagClean}, pebble.Sync); err != nil {
			return fmt.Errorf("pebblelog: %s: clear clean-shutdown key: %w", s.dir, err)
		}
		return nil
	case !errors.Is(err, pebble.ErrNotFound):
		return fmt.Errorf("pebblelog: %s: read clean-shutdown key: %w", s.dir, err)
	}
	ents, err := os.ReadDir(s.dataDir)
	if err != nil {
		return fmt.Errorf("pebblelog: %w", err)
	}
	known := make(map[uint64]bool, len(s.catalog))
	for _, n := range s.catalog {
		known[n] = true
		// A log with an append position had a data file: recover it
		// even when the file is missing (its directory entry lost
		// with a power loss), which verifyUnflushed reads as no data.
		pos, err := s.getU64(metaKey(n, metaPos))
		if err != nil {
			return err
		}
		if pos > 0 {
			s.recovering[n] = true
		}
	}
	for _, e := range ents {
		n, ok := parseDataFileName(e.Name())
		if !ok {
			continue
		}
		if known[n] {
			s.recovering[n] = true
			continue
		}
		s.logger.Warn("pebblelog: removing the data file of a log not in the catalog", "file", dataFilePath(s.dataDir, n))
		if err := os.Remove(dataFilePath(s.dataDir, n)); err != nil {
			return fmt.Errorf("pebblelog: %w", err)
		}
	}
	// The files recovery found (and the removals) are made durable
	// before any index entry naming them is committed.
	return syncDir(s.dataDir)
}

// closeFiles fdatasyncs every dirty data file, then commits the flushed
// positions and the clean-shutdown key with one WAL sync, and closes the
// files. REQUIRES: s.life held exclusively (Close).
func (s *Store) closeFiles() error {
	defer s.cache.closeAll()
	pb := s.db.NewBatch()
	defer pb.Close()
	var dirty []*dataFile
	failed := false
	for _, d := range s.files {
		d.savePunches(pb)
		if d.failure() != nil {
			failed = true
		} else if d.dirty.Load() {
			dirty = append(dirty, d)
		}
	}
	flushed, serr := s.syncFiles(dirty)
	for i, d := range dirty {
		if flushed[i] > 0 {
			setFlushed(pb, d.n, flushed[i])
		}
	}
	// A log recovery did not reach (never opened since the unclean
	// shutdown) keeps the store unclean, so the next Open recovers it,
	// and so does a data file whose sync failed: the next Open verifies
	// what was written past its flushed position.
	if len(s.recovering) == 0 && !failed && serr == nil {
		_ = pb.Set([]byte{tagClean}, nil, nil)
	}
	if err := pb.Commit(pebble.Sync); err != nil {
		return err
	}
	return serr
}

// recover repairs the log after an unclean shutdown (see above).
// REQUIRES: s.life and s.mu held; l loaded, not yet published.
func (l *Log) recover() error {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	if l.df == nil {
		return nil
	}
	cut, err := l.verifyUnflushed()
	if err != nil {
		return err
	}
	if cut {
		// The bytes past the append position belong to the history
		// just cut: remove them, or new appends that end where one of
		// them starts would let the tail scan of a later recovery
		// index it after them.
		return l.cutTail()
	}
	return l.recoverTail()
}

// cutTail cuts the data file at the append position, durably.
// REQUIRES: s.life and l.writeMu held.
func (l *Log) cutTail() error {
	d := l.df
	zf, f, fsize, err := d.acquireForRecovery()
	if err != nil || zf == nil {
		return err
	}
	defer zf.Release()
	pos := d.pos.Load()
	if fsize <= pos {
		return nil
	}
	l.s.logger.Warn("pebblelog: recovery: cutting the data file at the append position after a cut of the index",
		"file", d.path, "topic", l.id.Topic, "partition", l.id.Partition, "at", pos, "bytes", fsize-pos)
	return cutFile(d, f, pos)
}

// acquireForRecovery is acquire(false) with the file's size; a missing file
// is no error and no file (zf nil).
func (d *dataFile) acquireForRecovery() (zf *zerocopy.File, f *os.File, size int64, err error) {
	zf, f, err = d.acquire(false)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, 0, nil
	}
	if err != nil {
		return nil, nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		zf.Release()
		return nil, nil, 0, fmt.Errorf("pebblelog: %w", err)
	}
	return zf, f, st.Size(), nil
}

// cutFile truncates d's file f at pos and fsyncs it, so that a power loss
// does not bring the bytes back.
func cutFile(d *dataFile, f *os.File, pos int64) error {
	if err := f.Truncate(pos); err != nil {
		return fmt.Errorf("pebblelog: cut %s at %d: %w", d.path, pos, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("pebblelog: cut %s at %d: %w", d.path, pos, err)
	}
	d.size.Store(pos)
	return nil
}

// verifyUnflushed checks the batches indexed at or past the flushed
// position and truncates the log at the first bad one; cut reports a
// truncation. REQUIRES: s.life and l.writeMu held.
func (l *Log) verifyUnflushed() (cut bool, err error) {
	d := l.df
	flushed := d.flushed.Load()
	if flushed >= d.pos.Load() {
		return false, nil
	}
	// The first such batch: walk back from the last.
	it, err := l.s.db.NewIter(&pebble.IterOptions{
		LowerBound: newLogKey(tagBatch, l.n, 0),
		UpperBound: logKeyEnd(tagBatch, l.n),
	})
	if err != nil {
		return false, err
	}
	from := int64(-1)
	for ok := it.Last(); ok; ok = it.Prev() {
		p, isPtr, _ := decodePointer(it.Value())
		if !isPtr || p.pos < flushed {
			break
		}
		from, _ = keyOffset(it.Key())
	}
	if err := it.Error(); err != nil {
		it.Close()
		return false, err
	}
	if from < 0 {
		return false, it.Close()
	}
	zf, f, fsize, err := d.acquireForRecovery()
	if err != nil {
		it.Close()
		return false, err
	}
	if zf != nil {
		defer zf.Release()
	}
	bad, why := int64(-1), ""
	var buf []byte // reused: sizes are checked against the file first
	for ok := it.SeekGE(newLogKey(tagBatch, l.n, from)); ok && bad < 0; ok = it.Next() {
		base, _ := keyOffset(it.Key())
		p, isPtr, badPtr := decodePointer(it.Value())
		switch {
		case badPtr || !isPtr:
			bad, why = base, "not a batch pointer"
			continue
		case f == nil:
			bad, why = base, "no data file"
			continue
		case p.pos+int64(p.size) > fsize:
			bad, why = base, fmt.Sprintf("index names bytes [%d, %d), the file holds %d", p.pos, p.pos+int64(p.size), fsize)
			continue
		}
		if cap(buf) < p.size {
			buf = make([]byte, p.size)
		}
		buf = buf[:p.size]
		if _, err := f.ReadAt(buf, p.pos); err != nil {
			bad, why = base, err.Error()
			continue
		}
		b := record.Batch(buf)
		if _, err := record.ValidateStored(buf); err != nil {
			bad, why = base, err.Error()
		} else if b.Size() != p.size || b.BaseOffset() != base || b.LastOffsetDelta() != p.lastOffsetDelta {
			bad, why = base, fmt.Sprintf("batch [%d, %d] of %d bytes where the index says [%d, %d] of %d",
				b.BaseOffset(), b.LastOffset(), b.Size(), base, base+int64(p.lastOffsetDelta), p.size)
		}
	}
	if err := it.Error(); err != nil {
		it.Close()
		return false, err
	}
	if err := it.Close(); err != nil {
		return false, err
	}
	if bad < 0 {
		return false, nil
	}
	l.s.logger.Warn("pebblelog: recovery: batch written before an unclean shutdown is lost or damaged; truncating the log there",
		"dir", l.s.dir, "topic", l.id.Topic, "partition", l.id.Partition, "offset", bad, "reason", why)
	if err := l.truncateLocked(bad); err != nil {
		return false, err
	}
	return true, nil
}

// recoverChunk is how many bytes of recovered batches one commit indexes.
const recoverChunk = 4 << 20

// recoverTail indexes the whole, valid batches in the data file past the
// append position that continue the log, and cuts the file after them.
// REQUIRES: s.life and l.writeMu held.
func (l *Log) recoverTail() error {
	d := l.df
	zf, f, fsize, err := d.acquireForRecovery()
	if err != nil || zf == nil {
		return err
	}
	defer zf.Release()
	pos := d.pos.Load()
	cur, chunkPos := pos, pos
	var chunk []byte
	next := l.end
	gaps := l.gaps()
	var hdr [record.LogOverhead]byte
	reason := ""
	for cur < fsize {
		if _, err := f.ReadAt(hdr[:], cur); err != nil {
			reason = "torn batch header"
			break
		}
		size, _ := record.PeekSize(hdr[:])
		if !record.StoredSizeFits(size, fsize-cur) {
			reason = fmt.Sprintf("batch size %d at %d, file size %d", size, cur, fsize)
			break
		}
		start := len(chunk)
		chunk = append(chunk, make([]byte, size)...)
		if _, err := f.ReadAt(chunk[start:], cur); err != nil && err != io.EOF {
			return fmt.Errorf("pebblelog: read %s: %w", d.path, err)
		}
		b := record.Batch(chunk[start:])
		if _, err := record.ValidateStored(b); err != nil {
			chunk, reason = chunk[:start], err.Error()
			break
		}
		if !engine.ContinuesLog(b.BaseOffset(), next, gaps) {
			chunk, reason = chunk[:start], fmt.Sprintf("batch at offset %d, log end %d", b.BaseOffset(), next)
			break
		}
		next = b.NextOffset()
		cur += int64(size)
		if len(chunk) >= recoverChunk {
			if err := l.indexRecovered(chunk, chunkPos); err != nil {
				return err
			}
			chunkPos, chunk = cur, chunk[:0]
		}
	}
	if len(chunk) > 0 {
		if err := l.indexRecovered(chunk, chunkPos); err != nil {
			return err
		}
	}
	if cur > pos {
		l.s.logger.Info("pebblelog: recovery: indexed batches written before an unclean shutdown",
			"dir", l.s.dir, "topic", l.id.Topic, "partition", l.id.Partition, "bytes", cur-pos, "end", l.end)
	}
	if cur < fsize {
		l.s.logger.Warn("pebblelog: recovery: cutting the data file after the last whole batch",
			"file", d.path, "topic", l.id.Topic, "partition", l.id.Partition, "at", cur, "bytes", fsize-cur, "reason", reason)
		if err := cutFile(d, f, cur); err != nil {
			return err
		}
	}
	return nil
}

// indexRecovered commits, synced, the index entries of batches found in the
// data file at pos. REQUIRES: s.life and l.writeMu held.
func (l *Log) indexRecovered(batches []byte, pos int64) error {
	pb := l.s.db.NewBatch()
	defer pb.Close()
	st := l.stage(pb, batches, pos, l.s.now().UnixMilli())
	if err := l.s.commitSynced(pb); err != nil {
		return fmt.Errorf("pebblelog: %s: recover %s/%d: %w", l.s.dir, l.id.Topic, l.id.Partition, err)
	}
	l.install(st, batches, pos)
	l.df.pos.Store(pos + int64(len(batches)))
	l.df.dirty.Store(true)
	return nil
}
