package mmapindex

import (
	"encoding/binary"
	"fmt"
	"math"
)

// TimeEntrySize is the size of a time index entry. Part of the on-disk
// format: do not change.
const TimeEntrySize = 12

// TimeIndex maps timestamps to offsets: entry (T, O) says that T is the
// largest timestamp in the segment up to and including offset O, so every
// record before O has a timestamp <= T. Timestamps are strictly ascending,
// offsets non-decreasing.
type TimeIndex struct {
	*file
	base int64
}

// OpenTime opens (creating if needed) the time index at path; see OpenOffset.
func OpenTime(path string, base int64, maxBytes int) (*TimeIndex, error) {
	f, err := openFile(path, TimeEntrySize, maxBytes)
	if err != nil {
		return nil, err
	}
	return &TimeIndex{file: f, base: base}, nil
}

// Entry returns entry i (0 <= i < Entries()).
func (x *TimeIndex) Entry(i int) (timestamp, offset int64) {
	return x.key(i, 0, true), x.base + x.key(i, 8, false)
}

// Last returns the last entry; ok is false when the index is empty.
func (x *TimeIndex) Last() (timestamp, offset int64, ok bool) {
	n := int(x.n.Load())
	if n == 0 {
		return 0, 0, false
	}
	t, o := x.Entry(n - 1)
	return t, o, true
}

// Lookup returns the entry with the greatest timestamp <= ts; ok is false
// when there is none. It does not allocate.
func (x *TimeIndex) Lookup(ts int64) (timestamp, offset int64, ok bool) {
	i := x.floor(int(x.n.Load()), 0, true, ts)
	if i < 0 {
		return 0, 0, false
	}
	t, o := x.Entry(i)
	return t, o, true
}

// MaybeAppend adds (ts, offset) if ts is above the last entry's timestamp
// (Kafka's TimeIndex.maybeAppend); it reports whether it did. offset must
// not be below the last entry's.
func (x *TimeIndex) MaybeAppend(ts, offset int64) (bool, error) {
	rel := offset - x.base
	if rel < 0 || rel > math.MaxInt32 {
		return false, fmt.Errorf("%w: %s: offset %d out of range for base %d", ErrNotMonotonic, x.path, offset, x.base)
	}
	if lt, lo, ok := x.Last(); ok {
		if ts <= lt {
			return false, nil
		}
		if offset < lo {
			return false, fmt.Errorf("%w: %s: offset %d below %d", ErrNotMonotonic, x.path, offset, lo)
		}
	}
	var e [TimeEntrySize]byte
	binary.BigEndian.PutUint64(e[0:], uint64(ts))
	binary.BigEndian.PutUint32(e[8:], uint32(rel))
	return true, x.put(e[:])
}

// TruncateTo removes every entry with an offset >= offset.
func (x *TimeIndex) TruncateTo(offset int64) {
	n := int(x.n.Load())
	for n > 0 {
		if _, o := x.Entry(n - 1); o < offset {
			break
		}
		n--
	}
	x.truncateEntries(n)
}

// Reset removes every entry.
func (x *TimeIndex) Reset() { x.truncateEntries(0) }

// Check reports ErrCorrupt unless timestamps are strictly ascending and
// relative offsets non-decreasing, non-negative and below maxRel (< 0: no
// bound).
func (x *TimeIndex) Check(maxRel int64) error {
	n := int(x.n.Load())
	prevRel := int64(0)
	for i := 0; i < n; i++ {
		ts, rel := x.key(i, 0, true), x.key(i, 8, false)
		if i > 0 && ts <= x.key(i-1, 0, true) {
			return fmt.Errorf("%w: %s: entry %d timestamp %d not above %d", ErrCorrupt, x.path, i, ts, x.key(i-1, 0, true))
		}
		if rel < prevRel || (maxRel >= 0 && rel >= maxRel) {
			return fmt.Errorf("%w: %s: entry %d relative offset %d out of order or range (previous %d, span %d)", ErrCorrupt, x.path, i, rel, prevRel, maxRel)
		}
		prevRel = rel
	}
	return nil
}
