package mmapindex

import (
	"encoding/binary"
	"fmt"
	"math"
)

// OffsetEntrySize is the size of an offset index entry. Part of the on-disk
// format: do not change.
const OffsetEntrySize = 8

// OffsetIndex maps offsets to byte positions in a segment's .log: each entry
// says "the batch whose base offset is Offset starts at Position". Entries
// are sparse (one per index.interval.bytes of log) and strictly ascending in
// both fields.
type OffsetIndex struct {
	*file
	base int64 // segment base offset; entry offsets are relative to it
}

// OpenOffset opens (creating if needed) the offset index at path for the
// segment with base offset base. maxBytes > 0 grows the file to that size
// (an active segment); 0 maps the file as it is (a rolled segment).
func OpenOffset(path string, base int64, maxBytes int) (*OffsetIndex, error) {
	f, err := openFile(path, OffsetEntrySize, maxBytes)
	if err != nil {
		return nil, err
	}
	return &OffsetIndex{file: f, base: base}, nil
}

// Entry returns entry i (0 <= i < Entries()).
func (x *OffsetIndex) Entry(i int) (offset, pos int64) {
	return x.base + x.key(i, 0, false), x.key(i, 4, false)
}

// Lookup returns the entry with the greatest offset <= offset: the batch
// holding offset starts at or after pos. ok is false when there is none
// (start at the segment's first batch). It does not allocate.
func (x *OffsetIndex) Lookup(offset int64) (entryOffset, pos int64, ok bool) {
	rel := offset - x.base
	if rel > math.MaxInt32 {
		rel = math.MaxInt32
	}
	i := x.floor(int(x.n.Load()), 0, false, rel)
	if i < 0 {
		return 0, 0, false
	}
	o, p := x.Entry(i)
	return o, p, true
}

// LookupPosition returns the entry with the greatest position <= pos: a
// batch boundary at or before pos. ok is false when there is none.
func (x *OffsetIndex) LookupPosition(pos int64) (entryOffset, entryPos int64, ok bool) {
	if pos > math.MaxInt32 {
		pos = math.MaxInt32
	}
	i := x.floor(int(x.n.Load()), 4, false, pos)
	if i < 0 {
		return 0, 0, false
	}
	o, p := x.Entry(i)
	return o, p, true
}

// Append adds an entry. offset and pos must be above the last entry's,
// pos > 0 (position 0 is the segment start and needs no entry), and offset
// within int32 of the base.
func (x *OffsetIndex) Append(offset, pos int64) error {
	rel := offset - x.base
	if rel < 0 || rel > math.MaxInt32 || pos <= 0 || pos > math.MaxInt32 {
		return fmt.Errorf("%w: %s: offset %d position %d out of range for base %d", ErrNotMonotonic, x.path, offset, pos, x.base)
	}
	if n := int(x.n.Load()); n > 0 {
		if lo, lp := x.Entry(n - 1); offset <= lo || pos <= lp {
			return fmt.Errorf("%w: %s: (%d, %d) after (%d, %d)", ErrNotMonotonic, x.path, offset, pos, lo, lp)
		}
	}
	var e [OffsetEntrySize]byte
	binary.BigEndian.PutUint32(e[0:], uint32(rel))
	binary.BigEndian.PutUint32(e[4:], uint32(pos))
	return x.put(e[:])
}

// TruncateTo removes every entry with an offset >= offset.
func (x *OffsetIndex) TruncateTo(offset int64) {
	i := x.floor(int(x.n.Load()), 0, false, offset-x.base-1)
	x.truncateEntries(i + 1)
}

// Reset removes every entry.
func (x *OffsetIndex) Reset() { x.truncateEntries(0) }

// Check reports ErrCorrupt unless the entries are strictly ascending in
// offset and position, positions lie inside a log of logSize bytes, and
// relative offsets are below maxRel (the segment's offset span; < 0: no
// bound).
func (x *OffsetIndex) Check(logSize, maxRel int64) error {
	n := int(x.n.Load())
	prevRel, prevPos := int64(-1), int64(0)
	for i := 0; i < n; i++ {
		rel, pos := x.key(i, 0, false), x.key(i, 4, false)
		switch {
		case rel <= prevRel || pos <= prevPos:
			return fmt.Errorf("%w: %s: entry %d (%d, %d) not above (%d, %d)", ErrCorrupt, x.path, i, rel, pos, prevRel, prevPos)
		case pos >= logSize:
			return fmt.Errorf("%w: %s: entry %d position %d past log size %d", ErrCorrupt, x.path, i, pos, logSize)
		case maxRel >= 0 && rel >= maxRel:
			return fmt.Errorf("%w: %s: entry %d relative offset %d past segment span %d", ErrCorrupt, x.path, i, rel, maxRel)
		}
		prevRel, prevPos = rel, pos
	}
	return nil
}
