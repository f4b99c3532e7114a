package pebblelog

import (
	"github.com/sluice/sluice/record"
)

// tailLen is how many of a log's latest batches its tail index holds.
const tailLen = 32

// tailIndex holds the data file positions of a log's latest appended
// batches, so that a read at the tail, where a consumer that keeps up
// reads, finds its bytes without a Pebble iterator. With one-record
// batches over 1,000 partitions (sluice perf omb at a fixed rate) the
// iterator's seek through the memtable and the levels' blocks was 16% of
// the broker's CPU. The entries follow the log end: the last one ends at
// it. Every change of the index other than an append (a trim, a
// truncation, a cleaned segment, a restart) empties it, under Log.mu and
// before the bytes it unindexed are punched, so an entry found under
// Log.mu names bytes still indexed. Guarded by Log.mu.
type tailIndex struct {
	ents    [tailLen]tailEntry
	head, n int // the entries are ents[(head+i)%tailLen] for i < n, ascending
}

type tailEntry struct {
	base, pos int64
	size      uint32
	lastDelta uint32
}

func (e *tailEntry) last() int64 { return e.base + int64(e.lastDelta) }

func (t *tailIndex) at(i int) *tailEntry { return &t.ents[(t.head+i)%tailLen] }

func (t *tailIndex) reset() { t.head, t.n = 0, 0 }

// push adds the batches (whole, offsets assigned) written at data file
// position pos, dropping the oldest entries past tailLen.
func (t *tailIndex) push(batches []byte, pos int64) {
	for off := 0; off < len(batches); {
		b := record.Batch(batches[off:])
		size := b.Size()
		if t.n == tailLen {
			t.head = (t.head + 1) % tailLen
			t.n--
		}
		*t.at(t.n) = tailEntry{base: b.BaseOffset(), pos: pos + int64(off), size: uint32(size), lastDelta: uint32(b.LastOffsetDelta())}
		t.n++
		off += size
	}
}

// find returns the data file run that Log.read would return for offset
// (offset < the log end, which the last entry ends at): the batch holding
// offset, or the first after it in a gap, then the batches that follow it
// contiguously in the file, up to maxBytes (the first always), none at or
// past upTo (>= 0), none past fileSize. ok is false when the index cannot
// tell: offset lies before its first entry, or an entry names bytes past
// fileSize (the iterator's path reports that).
func (t *tailIndex) find(offset int64, maxBytes int, upTo, fileSize int64) (pos, n int64, ok bool) {
	if t.n == 0 || offset < t.at(0).base {
		return 0, 0, false
	}
	// The last entry whose base is <= offset.
	lo, hi := 0, t.n-1
	for lo < hi {
		m := int(uint(lo+hi+1) >> 1)
		if t.at(m).base <= offset {
			lo = m
		} else {
			hi = m - 1
		}
	}
	i := lo
	if t.at(i).last() < offset {
		i++ // a gap: the next batch
	}
	if i == t.n {
		return 0, 0, false
	}
	e := t.at(i)
	if upTo >= 0 && e.last() >= upTo {
		return 0, 0, true
	}
	if e.pos+int64(e.size) > fileSize {
		return 0, 0, false
	}
	pos, n = e.pos, int64(e.size)
	for i++; i < t.n; i++ {
		e := t.at(i)
		if (upTo >= 0 && e.last() >= upTo) || e.pos != pos+n || n+int64(e.size) > int64(maxBytes) || e.pos+int64(e.size) > fileSize {
			break
		}
		n += int64(e.size)
	}
	return pos, n, true
}
