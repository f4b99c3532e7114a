package server

import (
	"cmp"
	"encoding/binary"
	"hash/crc32"
	"slices"

	"github.com/sluice/sluice/record"
)

// Checking a record batch's CRC-32C where the partition validates it costs
// three times what it costs right after the bytes are read: a producer's
// request carries one ~1 MB batch per partition, ~4 MB with four, and by
// the time the handler reaches a batch its bytes have left the CPU's
// caches (perf of the broker: CRC 13-15% of its CPU on 4 partitions, 0.13-
// 0.16 s/GB, against 0.05 s/GB over the same bytes in cache; CRC of a 4 MiB
// buffer 0.05 s/GB hot, 0.15 once 16 MiB passed through the cache).
//
// crcScan follows a Produce request (v3-v11) while its frame arrives,
// checking each batch's CRC over the bytes just read and walking the
// records of uncompressed batches (record.ScanRecord), and records what
// it checked of each partition's records: record.Prechecked, the CRCs
// when every batch is framed as record.Batch frames it (batchLength within
// the records, magic 2) and its CRC matches, and the records walk with
// the timestamps and null keys a topic's rules need. The handler hands
// that to the partition (replication.AppendChecked), which checks the
// rest. A records field the scan could not follow or whose CRC did not
// match is simply not vouched for: the partition checks it and reports the
// error as before. Bytes that do not parse as a Produce request stop the
// scan (kmsg's decode refuses them later). The scan allocates only its
// list of spans, and its work is linear in the frame's length whatever
// its counts claim and however the bytes are split across reads.
type crcScan struct {
	flexible bool
	off      bool // not a Produce request this scan follows, or it stopped making sense
	step     scanStep
	pos      int   // where the next unit starts, in the frame
	topics   int64 // topics left, counting the current one
	parts    int64 // partitions left in the current topic, counting the current one
	// The current partition's records, what is vouched for of them so far
	// (pre.CRC false: nothing), and the batch being checked.
	recStart, recEnd int
	pre              record.Prechecked
	batchEnd, crcAt  int
	crc, want        uint32
	// The current batch's records walk: header read (the batch's first
	// HeaderSize bytes), the next record's start, records walked so far,
	// the batch's recordCount and base timestamp.
	walkHeader    bool
	walkAt        int
	walked, count int64
	baseTs        int64
	// spans are the records fields of the frame vouched for (pre.CRC), in
	// order, each with its index among all the request's records fields
	// (fields counts them) and what was checked of it. A field vouched for
	// holds a batch, 61 bytes at least, so the list stays well under the
	// frame's size, whatever null fields a request is made of.
	spans  []scanSpan
	fields int
	// retryAt: a unit that was short of bytes is read again from its
	// start only once the frame has this many, twice what it had, so a
	// unit arriving in many small pieces (a header of many tagged fields
	// over TLS, a byte per record) costs linear time, not quadratic.
	// reread counts the bytes read again (tests).
	retryAt int
	reread  int
}

type scanSpan struct {
	k, start, end int
	pre           record.Prechecked
}

type scanStep uint8

const (
	scanHeader scanStep = iota
	scanTopic
	scanPartition
	scanBatch
	scanCRC
	scanAfterRecords
	scanDone
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// scanPiece is the most a read hands the scan at once: half of this
// machine's L2 per core (512 KiB), so a piece is checked while it is there.
const scanPiece = 256 << 10

// advance goes on with frame[:have] (the frame read so far; bytes already
// seen never change). It may be called with the same have again.
func (s *crcScan) advance(frame []byte) {
	if len(frame) < s.retryAt {
		return
	}
	for !s.off && s.step != scanDone {
		if !s.next(frame) {
			return
		}
	}
}

// finish goes on with the whole frame, whatever retryAt says: no more
// bytes will come.
func (s *crcScan) finish(frame []byte) {
	s.retryAt = 0
	s.advance(frame)
}

// next takes one step; false: it needs bytes not yet read. A step reads
// one unit (the header, a topic's name, a partition's prefix, a batch's
// first bytes, a run of CRC'd bytes) and changes the scan only once the
// unit is whole.
func (s *crcScan) next(frame []byte) bool {
	c := scanCursor{b: frame, p: s.pos}
	switch s.step {
	case scanHeader:
		key, version := c.int16(), c.int16()
		if c.short {
			return false
		}
		if key != apiKeyProduce || version < 3 || version > 11 {
			s.off = true
			return true
		}
		flexible := version >= 9
		c.skip(4)          // correlation id
		c.skip(c.int16L()) // client id (nullable)
		if flexible {
			c.tags()
		}
		c.str(flexible) // transactional id (nullable)
		c.skip(2 + 4)   // acks, timeout
		topics := c.arrayLen(flexible)
		if !s.commit(&c) {
			return c.bad
		}
		s.flexible, s.topics, s.step = flexible, topics, scanTopic
	case scanTopic:
		if s.topics <= 0 {
			s.step = scanDone
			return true
		}
		c.str(s.flexible) // name
		parts := c.arrayLen(s.flexible)
		if !s.commit(&c) {
			return c.bad
		}
		s.parts, s.step = parts, scanPartition
	case scanPartition:
		if s.parts <= 0 { // the topic's tagged fields
			if !s.commitTags(&c) {
				return c.bad
			}
			s.topics, s.step = s.topics-1, scanTopic
			return true
		}
		c.skip(4) // partition index
		n := c.bytesLen(s.flexible)
		if !s.commit(&c) {
			return c.bad
		}
		s.recStart, s.recEnd, s.step = s.pos, s.pos+n, scanBatch
		s.pre = record.Prechecked{CRC: n > 0}
		s.pre.StartRecords()
	case scanBatch:
		if s.pos >= s.recEnd {
			if s.pre.CRC {
				s.spans = append(s.spans, scanSpan{s.fields, s.recStart, s.recEnd, s.pre})
			}
			s.fields++
			s.pos, s.step = s.recEnd, scanAfterRecords
			return true
		}
		const crcStart = 21 // baseOffset, batchLength, leaderEpoch, magic, crc
		if s.recEnd-s.pos < crcStart {
			s.pre.CRC, s.pos = false, s.recEnd // a header runs past the records
			return true
		}
		if len(frame)-s.pos < crcStart {
			return false
		}
		b := frame[s.pos:]
		size := record.LogOverhead + int64(int32(binary.BigEndian.Uint32(b[8:])))
		if size < record.HeaderSize || size > int64(s.recEnd-s.pos) || int8(b[16]) != record.Magic {
			s.pre.CRC, s.pos = false, s.recEnd // record.Batch would not frame it so either
			return true
		}
		s.want = binary.BigEndian.Uint32(b[17:])
		s.crc, s.crcAt, s.batchEnd = 0, s.pos+crcStart, s.pos+int(size)
		s.walkHeader = false
		s.step = scanCRC
	case scanCRC:
		upto := min(len(frame), s.batchEnd)
		if upto <= s.crcAt {
			return false
		}
		s.crc = crc32.Update(s.crc, crcTable, frame[s.crcAt:upto])
		s.crcAt = upto
		s.walk(frame[:upto])
		if upto < s.batchEnd {
			return false
		}
		if s.crc != s.want {
			s.pre.CRC = false
		}
		if s.pre.Records && (s.walkAt != s.batchEnd || s.walked != s.count) {
			s.pre.Records = false // too few records, or bytes after the last
		}
		s.pos, s.step = s.batchEnd, scanBatch
	case scanAfterRecords: // the partition's tagged fields
		if !s.commitTags(&c) {
			return c.bad
		}
		s.parts, s.step = s.parts-1, scanPartition
	}
	return true
}

// walk goes on with the current batch's records in b (the frame up to the
// bytes read so far), as record.ValidateAppend's walk would: each record
// whole and well formed (record.ScanRecord), offset deltas 0, 1, ... up to
// recordCount; s.pre gathers their timestamps and null keys. A compressed
// batch, or anything the walk refuses, leaves the records to the
// partition (s.pre.Records false).
func (s *crcScan) walk(b []byte) {
	if !s.pre.Records {
		return
	}
	if !s.walkHeader {
		if len(b) < s.pos+record.HeaderSize {
			return
		}
		bt := record.Batch(b[s.pos:])
		if bt.Codec() != record.CodecNone {
			s.pre.Records = false
			return
		}
		s.walkHeader, s.walkAt = true, s.pos+record.HeaderSize
		s.walked, s.count, s.baseTs = 0, int64(bt.RecordCount()), bt.BaseTimestamp()
	}
	for s.walkAt < len(b) {
		length, n := binary.Varint(b[s.walkAt:])
		if n == 0 {
			return // the length is not all here yet
		}
		if n < 0 || length < 1 || length > int64(s.batchEnd-s.walkAt-n) {
			s.pre.Records = false
			return
		}
		end := s.walkAt + n + int(length)
		if end > len(b) {
			return
		}
		size, tsDelta, offsetDelta, nullKey, ok := record.ScanRecord(b[s.walkAt:end])
		if !ok || size != end-s.walkAt || offsetDelta != s.walked || s.walked >= s.count {
			s.pre.Records = false
			return
		}
		s.pre.Note(s.baseTs+tsDelta, nullKey)
		s.walked++
		s.walkAt = end
	}
}

// commitTags reads a flexible version's tagged fields, if any, and
// commits.
func (s *crcScan) commitTags(c *scanCursor) bool {
	if s.flexible {
		c.tags()
	}
	return s.commit(c)
}

// commit moves the scan past what c read, if c read it whole; a length no
// request can have turns the scan off.
func (s *crcScan) commit(c *scanCursor) bool {
	if c.bad {
		s.off = true
		return false
	}
	if c.short {
		s.reread += len(c.b) - s.pos
		s.retryAt = s.pos + 2*(len(c.b)-s.pos) + 1
		return false
	}
	s.pos = c.p
	return true
}

// checked is what the scan vouches for of records, the k-th records field
// of the request decoded from frame (nothing: the zero Prechecked). The
// identity of the bytes is checked, not assumed: kmsg's decode hands out
// subslices of the frame, in the order the scan saw them.
func (s *crcScan) checked(frame []byte, k int, records []byte) record.Prechecked {
	i, found := slices.BinarySearchFunc(s.spans, k, func(sp scanSpan, k int) int { return cmp.Compare(sp.k, k) })
	if s.off || !found || len(records) == 0 {
		return record.Prechecked{}
	}
	sp := s.spans[i]
	if sp.end > len(frame) || len(records) != sp.end-sp.start || &records[0] != &frame[sp.start] {
		return record.Prechecked{}
	}
	return sp.pre
}

// scanCursor reads Kafka's primitive types from b at p. short: b ended
// first (more bytes may come); bad: a length no request can have.
type scanCursor struct {
	b     []byte
	p     int
	short bool
	bad   bool
}

func (c *scanCursor) skip(n int) {
	if n < 0 {
		c.bad = true
		return
	}
	if c.short || c.bad || n > len(c.b)-c.p {
		c.short = true
		c.p = len(c.b) + 1 // past the end: any later read is short too
		return
	}
	c.p += n
}

var scanZeros [4]byte

func (c *scanCursor) fixed(n int) []byte {
	if c.short || c.bad || n > len(c.b)-c.p {
		c.short = true
		return scanZeros[:n] // the step is retried with more bytes
	}
	v := c.b[c.p : c.p+n]
	c.p += n
	return v
}

func (c *scanCursor) int16() int16 { return int16(binary.BigEndian.Uint16(c.fixed(2))) }
func (c *scanCursor) int32() int32 { return int32(binary.BigEndian.Uint32(c.fixed(4))) }

// int16L is the length of a non-compact nullable string: -1 (null) skips
// nothing.
func (c *scanCursor) int16L() int { return max(int(c.int16()), 0) }

func (c *scanCursor) uvarint() uint64 {
	if c.short || c.bad {
		return 0
	}
	v, n := binary.Uvarint(c.b[min(c.p, len(c.b)):])
	switch {
	case n == 0:
		c.short = true
	case n < 0 || v > 1<<31:
		c.bad = true
	default:
		c.p += n
	}
	return v
}

// str skips a string or nullable string.
func (c *scanCursor) str(compact bool) {
	if compact {
		c.skip(max(int(c.uvarint())-1, 0))
	} else {
		c.skip(c.int16L())
	}
}

// arrayLen reads an array's length (null: 0).
func (c *scanCursor) arrayLen(compact bool) int64 {
	if compact {
		return max(int64(c.uvarint())-1, 0)
	}
	return max(int64(c.int32()), 0)
}

// bytesLen reads a nullable bytes field's length (null: 0).
func (c *scanCursor) bytesLen(compact bool) int {
	if compact {
		return max(int(c.uvarint())-1, 0)
	}
	return max(int(c.int32()), 0)
}

// tags skips a flexible version's tagged fields.
func (c *scanCursor) tags() {
	for n := c.uvarint(); n > 0 && !c.short && !c.bad; n-- {
		c.uvarint() // tag
		c.skip(int(c.uvarint()))
	}
}
