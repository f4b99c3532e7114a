package segment

import (
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/record"
	"github.com/sluice/sluice/zerocopy"
)

// segmentFor returns the index in segs of the segment that holds offset:
// the last one whose base is <= offset (0 when offset is below them all).
// REQUIRES: l.mu held.
func (l *Log) segmentFor(offset int64) int {
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base > offset })
	if i == 0 {
		return 0
	}
	return i - 1
}

// findBatch returns the position of the first batch in s whose last
// offset is >= offset, looking below the committed size limit: the batch
// holding offset, or the first one after it when offset falls in a gap that
// cleaning left (cleanup.policy=compact). It is an index lookup, then a
// scan of 12-byte headers (baseOffset, batchLength) until a batch starts at
// or after offset; only when offset is not a batch's base does one more
// read tell whether the batch before holds it. ok is false when every
// batch below limit ends before offset. The scan is at most
// index.interval.bytes of log (plus one batch). REQUIRES: l.mu held (read).
//
// hint >= 0 is the start of a batch at or below offset to scan from
// instead of the index's (pinRead); useIdx false means the indexes must
// not be used (not mapped).
func (s *segment) findBatch(offset, limit, hint int64, useIdx bool) (pos, size int64, ok bool, err error) {
	switch {
	case hint >= 0 && hint < limit:
		pos = hint
	case useIdx:
		if _, p, found := s.idx.Lookup(offset); found {
			pos = p
		}
	}
	var hdr [headerPeekSize]byte
	prev, prevSize := int64(-1), int64(0)
	for pos < limit {
		n, err := s.header(hdr[:], pos, limit)
		if err != nil {
			return 0, 0, false, fmt.Errorf("%w: %s: %v", engine.ErrCorruptStore, s.path, err)
		}
		base := int64(binary.BigEndian.Uint64(hdr[:8]))
		if base == offset {
			return pos, n, true, nil
		}
		if base > offset {
			if prev >= 0 {
				holds, err := s.holds(prev, offset)
				if err != nil || holds {
					return prev, prevSize, holds, err
				}
			}
			return pos, n, true, nil
		}
		prev, prevSize = pos, n
		pos += n
	}
	if prev < 0 {
		return 0, 0, false, nil
	}
	// offset is in the last batch below limit, or past it.
	holds, err := s.holds(prev, offset)
	return prev, prevSize, holds, err
}

// holds reports whether the batch at pos ends at or after offset (its
// lastOffsetDelta says).
func (s *segment) holds(pos, offset int64) (bool, error) {
	var h [headerLastDeltaEnd]byte
	if _, err := s.f.ReadAt(h[:], pos); err != nil {
		return false, fmt.Errorf("%w: read %s at %d: %v", engine.ErrCorruptStore, s.path, pos, err)
	}
	return offset <= record.Batch(h[:]).LastOffset(), nil
}

// endFor returns the greatest batch boundary in (from, limit], given that
// a batch of firstSize bytes starts at from; it returns from+firstSize when
// no boundary above from is <= limit. Index entries sit at batch
// boundaries, so an index lookup by position gets within
// index.interval.bytes of the answer and a short header scan finishes.
// REQUIRES: l.mu held (read); limit <= committed <= the committed size.
func (s *segment) endFor(from, firstSize, limit, committed int64, useIdx bool) (int64, error) {
	pos := from + firstSize
	if pos >= limit {
		return pos, nil
	}
	// A read at the tail ends at the end of one of the last batches
	// appended, known without a lookup.
	pos, last := s.boundaryAtOrBelow(pos, limit)
	if last {
		return pos, nil
	}
	if useIdx {
		if _, p, ok := s.idx.LookupPosition(limit); ok && p > pos {
			pos = p
		}
	}
	var hdr [headerPeekSize]byte
	for pos < limit {
		n, err := s.header(hdr[:], pos, committed)
		if err != nil {
			return 0, fmt.Errorf("%w: %s: %v", engine.ErrCorruptStore, s.path, err)
		}
		if pos+n > limit {
			break
		}
		pos += n
	}
	return pos, nil
}

// Read implements engine.Log.Read. It returns batches of one segment only:
// the one holding offset. The returned slice is a range of the segment's
// file (sendfile can send it) and holds a reference that keeps the file
// open even if the segment is deleted before the slice is released.
func (l *Log) Read(offset int64, maxBytes int, upTo int64) (zerocopy.Slice, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed.Load() {
		return zerocopy.Slice{}, engine.ErrClosed
	}
	end := l.end.Load() // load before any segment size: see segment.size
	start := l.start.Load()
	if offset < start || offset > end {
		return zerocopy.Slice{}, fmt.Errorf("%w: offset %d, log has [%d, %d)", engine.ErrOffsetOutOfRange, offset, start, end)
	}
	if offset == end || (upTo >= 0 && offset >= upTo) {
		return zerocopy.Slice{}, nil
	}
	i := l.segmentFor(offset)
	s := l.segs[i]
	hint, holding, useIdx, err := s.pinRead(offset)
	if err != nil {
		return zerocopy.Slice{}, fmt.Errorf("%w: %w", engine.ErrStorage, err)
	}
	// s changes below: unpin whichever is pinned last.
	defer func() { s.unpin() }()
	limit := s.size.Load()
	pos, size, ok := holding.pos, holding.size, holding.size > 0 && holding.pos+holding.size <= limit
	if !ok {
		if pos, size, ok, err = s.findBatch(offset, limit, hint, useIdx); err != nil {
			return zerocopy.Slice{}, err
		}
	}
	for !ok {
		// Every batch of the segment ends before offset: cleaning left
		// a gap at its end (or removed all of it); the answer is the
		// first batch of a later segment.
		if i+1 >= len(l.segs) {
			return zerocopy.Slice{}, nil
		}
		i++
		next := l.segs[i]
		if err := next.pin(); err != nil {
			return zerocopy.Slice{}, fmt.Errorf("%w: %w", engine.ErrStorage, err)
		}
		s.unpin()
		s, useIdx = next, true
		limit = s.size.Load()
		if pos, size, ok, err = s.findBatch(offset, limit, -1, true); err != nil {
			return zerocopy.Slice{}, err
		}
	}
	committed := limit
	if upTo >= 0 && upTo < end {
		// Only batches whose last offset is below upTo: they end where
		// the batch holding upTo begins.
		// upTo > offset: its batch is at or after pos.
		upPos, _, found, err := s.findBatch(upTo, limit, pos, useIdx)
		if err != nil {
			return zerocopy.Slice{}, err
		}
		if found {
			limit = upPos
		}
		if limit <= pos {
			return zerocopy.Slice{}, nil
		}
	}
	// maxBytes <= 0 still returns the first batch (KIP-74).
	if m := pos + int64(max(maxBytes, 0)); m < limit {
		limit = m
	}
	e, err := s.endFor(pos, size, limit, committed, useIdx)
	if err != nil {
		return zerocopy.Slice{}, err
	}
	if b, ok := s.recent.Slice(pos, e); ok {
		return b, nil
	}
	return zerocopy.FileSlice(s.zf, pos, e-pos), nil
}

// OffsetForTimestamp implements engine.Log.OffsetForTimestamp: segments
// whose largest timestamp is below ts are skipped; in the first other one,
// the time index gives an offset before which every timestamp is < ts, the
// offset index its position, and a scan of batch headers finds the first
// batch with maxTimestamp >= ts, whose records give the answer.
func (l *Log) OffsetForTimestamp(ts int64) (offset, timestamp int64, ok bool, err error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed.Load() {
		return 0, 0, false, engine.ErrClosed
	}
	end := l.end.Load()
	start := l.start.Load()
	if ts == engine.MaxTimestampQuery {
		return l.maxTimestampLocked(start, end)
	}
	for i := l.segmentFor(start); i < len(l.segs); i++ {
		s := l.segs[i]
		if s.maxTs.Load() < ts {
			continue
		}
		if err := s.pin(); err != nil {
			return 0, 0, false, fmt.Errorf("%w: %w", engine.ErrStorage, err)
		}
		from := int64(0)
		if _, o, found := s.tidx.Lookup(ts - 1); found {
			if _, p, found := s.idx.Lookup(o); found {
				from = p
			}
		}
		offset, timestamp, ok, err = l.scanForTimestamp(s, from, s.size.Load(), start, ts, false)
		s.unpin()
		if err != nil || ok {
			return offset, timestamp, ok, err
		}
	}
	return 0, 0, false, nil
}

// maxTimestampLocked answers MaxTimestampQuery: the last record with the
// largest timestamp. REQUIRES: l.mu held (read).
func (l *Log) maxTimestampLocked(start, end int64) (int64, int64, bool, error) {
	best := -1
	for i := l.segmentFor(start); i < len(l.segs); i++ {
		if l.segs[i].size.Load() > 0 && (best < 0 || l.segs[i].maxTs.Load() >= l.segs[best].maxTs.Load()) {
			best = i
		}
	}
	if best < 0 || start >= end {
		return 0, 0, false, nil
	}
	s := l.segs[best]
	if err := s.pin(); err != nil {
		return 0, 0, false, fmt.Errorf("%w: %w", engine.ErrStorage, err)
	}
	defer s.unpin()
	maxTs := s.maxTs.Load()
	from := int64(0)
	if _, o, found := s.tidx.Lookup(maxTs - 1); found {
		if _, p, found := s.idx.Lookup(o); found {
			from = p
		}
	}
	return l.scanForTimestamp(s, from, s.size.Load(), start, maxTs, true)
}

// scanForTimestamp walks the batches of s in [from, limit) and returns the
// first record at or above offset start whose timestamp is >= ts or, with
// exactLast, the last record whose timestamp is exactly ts. A batch is read
// whole only when its maxTimestamp says it can hold a match.
// REQUIRES: l.mu held (read).
func (l *Log) scanForTimestamp(s *segment, from, limit, start, ts int64, exactLast bool) (int64, int64, bool, error) {
	var hdr [record.HeaderSize]byte
	var buf []byte
	var it record.Iter
	found := false
	var fo, ft int64
	for pos := from; pos < limit; {
		n, err := s.header(hdr[:], pos, limit)
		if err != nil {
			return 0, 0, false, fmt.Errorf("%w: %s: %v", engine.ErrCorruptStore, s.path, err)
		}
		h := record.Batch(hdr[:])
		may := h.MaxTimestamp() >= ts
		if exactLast {
			may = h.MaxTimestamp() == ts
		}
		if may && h.LastOffset() >= start {
			if cap(buf) < int(n) {
				buf = make([]byte, n)
			}
			buf = buf[:n]
			if _, err := s.f.ReadAt(buf, pos); err != nil {
				return 0, 0, false, fmt.Errorf("%w: read %s at %d: %v", engine.ErrCorruptStore, s.path, pos, err)
			}
			it.Reset(record.Batch(buf))
			for it.Next() {
				rts := it.Timestamp()
				if it.Offset() < start || rts < ts || (exactLast && rts != ts) {
					continue
				}
				fo, ft, found = it.Offset(), rts, true
				if !exactLast {
					return fo, ft, true, nil
				}
			}
			if err := it.Err(); err != nil {
				return 0, 0, false, fmt.Errorf("%w: %s at %d: %v", engine.ErrCorruptStore, s.path, pos, err)
			}
		}
		pos += n
	}
	return fo, ft, found, nil
}
