package compact

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/sluice/sluice/record"
)

// ErrCorrupt marks log bytes the cleaner cannot read: a batch header, CRC
// or record that does not parse. The cleaner stops and writes nothing for
// the range; the integrator decides (Kafka marks the partition uncleanable).
var ErrCorrupt = errors.New("compact: corrupt batch")

// Header field offsets, mirroring record/format.go (RecordBatch v2; part of
// the on-disk format: do not change).
const (
	offBatchLength     = 8
	offMagic           = 16
	offCRC             = 17
	offAttributes      = 21
	offLastOffsetDelta = 23
	offBaseTimestamp   = 27
	offMaxTimestamp    = 35
	offRecordCount     = 57
	crcStart           = 21
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// nextBatch checks the batch at the start of buf (pos is its position in
// the log bytes, for errors) and returns it. It checks what the cleaner
// relies on: the header fits, batchLength fits in buf, magic 2, the CRC,
// a codec it knows, and 0 <= recordCount <= lastOffsetDelta+1. It does not
// require recordCount == lastOffsetDelta+1 as record.Validate does: a
// cleaned batch has gaps, and a batch kept only for its producer state has
// no records at all.
//
// next is the offset the batch may start at (the previous batch's next
// offset; 0 for the first): batches must be in offset order, which Build
// relies on.
func nextBatch(buf []byte, pos int, next int64) (record.Batch, error) {
	if len(buf) < record.HeaderSize {
		return nil, fmt.Errorf("%w at byte %d: %d bytes left, a header needs %d", ErrCorrupt, pos, len(buf), record.HeaderSize)
	}
	b := record.Batch(buf)
	length := b.BatchLength()
	if length < record.HeaderSize-record.LogOverhead || length > record.MaxBatchSize ||
		int(length) > len(buf)-record.LogOverhead {
		return nil, fmt.Errorf("%w at byte %d: batchLength %d with %d bytes left", ErrCorrupt, pos, length, len(buf)-record.LogOverhead)
	}
	b = b[:b.Size()]
	if m := b.Magic(); m != record.Magic {
		return nil, fmt.Errorf("%w at byte %d: magic %d", ErrCorrupt, pos, m)
	}
	if got, want := b.ComputeCRC(), b.CRC(); got != want {
		return nil, fmt.Errorf("%w at byte %d (offset %d): crc stored %08x, computed %08x", ErrCorrupt, pos, b.BaseOffset(), want, got)
	}
	if c := b.Codec(); c > record.CodecZstd {
		return nil, fmt.Errorf("%w at byte %d: codec %d", ErrCorrupt, pos, c)
	}
	lod, n := int64(b.LastOffsetDelta()), int64(b.RecordCount())
	if lod < 0 || n < 0 || n > lod+1 || b.BaseOffset() < 0 || b.BaseOffset() > 1<<62 {
		return nil, fmt.Errorf("%w at byte %d: baseOffset %d, lastOffsetDelta %d, recordCount %d", ErrCorrupt, pos, b.BaseOffset(), lod, n)
	}
	if b.BaseOffset() < next {
		return nil, fmt.Errorf("%w at byte %d: base offset %d below the previous batch's next offset %d", ErrCorrupt, pos, b.BaseOffset(), next)
	}
	return b, nil
}

// rawRecord is one record of an uncompressed records block, located in
// place: raw[:size] is the whole record, raw[tail:size] its key, value and
// headers, which the cleaner copies unchanged.
type rawRecord struct {
	size      int
	tail      int
	tsDelta   int64
	offDelta  int64
	key       []byte // nil: no key
	tombstone bool   // the value is null
}

// parseRaw decodes the record at the start of b, checking it as
// record.Iter does (lengths in bounds, header keys present, nothing after
// the last header), so that whatever Filter copies a reader can parse.
func parseRaw(b []byte, r *rawRecord) error {
	length, n := binary.Varint(b)
	if n <= 0 || length < 0 || length > int64(len(b)-n) {
		return errors.New("bad record length")
	}
	r.size = n + int(length)
	body := b[n:r.size]
	if len(body) < 1 {
		return errors.New("empty record")
	}
	p := 1 // attributes
	if r.tsDelta, n = binary.Varint(body[p:]); n <= 0 {
		return errors.New("bad timestamp delta")
	}
	p += n
	if r.offDelta, n = binary.Varint(body[p:]); n <= 0 || r.offDelta < 0 {
		return errors.New("bad offset delta")
	}
	p += n
	r.tail = len(b[:r.size]) - len(body) + p
	rest := body[p:]
	var v []byte
	var err error
	if r.key, rest, err = lenBytes(rest); err != nil {
		return fmt.Errorf("key: %w", err)
	}
	if v, rest, err = lenBytes(rest); err != nil {
		return fmt.Errorf("value: %w", err)
	}
	r.tombstone = v == nil
	hc, n := binary.Varint(rest)
	if n <= 0 || hc < 0 || hc > int64(len(rest)) {
		return errors.New("bad header count")
	}
	rest = rest[n:]
	for i := int64(0); i < hc; i++ {
		var k []byte
		if k, rest, err = lenBytes(rest); err != nil || k == nil {
			return fmt.Errorf("header %d key: bad length", i)
		}
		if _, rest, err = lenBytes(rest); err != nil {
			return fmt.Errorf("header %d value: %w", i, err)
		}
	}
	if len(rest) != 0 {
		return fmt.Errorf("%d bytes after the last header", len(rest))
	}
	return nil
}

// lenBytes reads a varint length and that many bytes; -1 is null.
func lenBytes(b []byte) (v, rest []byte, err error) {
	l, n := binary.Varint(b)
	if n <= 0 {
		return nil, nil, errors.New("truncated")
	}
	b = b[n:]
	if l == -1 {
		return nil, b, nil
	}
	if l < -1 || l > int64(len(b)) {
		return nil, nil, fmt.Errorf("length %d with %d bytes left", l, len(b))
	}
	return b[:l:l], b[l:], nil
}

// varintLen is the size of v as a zig-zag varint.
func varintLen(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

// appendRecord appends r (raw is its bytes) with timestamp delta tsDelta:
// the bytes unchanged when the delta is the same, otherwise re-framed with
// the new delta and the rest of the record copied.
func appendRecord(dst, raw []byte, r *rawRecord, tsDelta int64) []byte {
	if tsDelta == r.tsDelta {
		return append(dst, raw[:r.size]...)
	}
	tail := raw[r.tail:r.size]
	attrs := raw[varintLenAt(raw)]
	body := 1 + varintLen(tsDelta) + varintLen(r.offDelta) + len(tail)
	dst = binary.AppendVarint(dst, int64(body))
	dst = append(dst, attrs)
	dst = binary.AppendVarint(dst, tsDelta)
	dst = binary.AppendVarint(dst, r.offDelta)
	return append(dst, tail...)
}

// varintLenAt is the size of the varint at the start of b (already parsed).
func varintLenAt(b []byte) int {
	_, n := binary.Varint(b)
	return n
}

// finishHeader fills in the header of the batch that starts at dst[start:]
// (its first HeaderSize bytes a copy of src's header, the records after
// it) with the given fields, and sets batchLength and the CRC.
func finishHeader(dst []byte, start int, attrs int16, baseTs, maxTs int64, count int32) {
	b := dst[start:]
	be := binary.BigEndian
	be.PutUint32(b[offBatchLength:], uint32(len(b)-record.LogOverhead))
	be.PutUint16(b[offAttributes:], uint16(attrs))
	be.PutUint64(b[offBaseTimestamp:], uint64(baseTs))
	be.PutUint64(b[offMaxTimestamp:], uint64(maxTs))
	be.PutUint32(b[offRecordCount:], uint32(count))
	be.PutUint32(b[offCRC:], crc32.Checksum(b[crcStart:], castagnoli))
}

// ValidateCleaned checks log bytes that may have been cleaned: whole
// batches back to back, each with a good header and CRC and, once
// decompressed, exactly recordCount well-formed records whose offset
// deltas increase strictly within [0, lastOffsetDelta], and batches whose
// offsets increase. It is record.ValidateAll with Kafka's allowance for
// cleaned batches (gaps, and empty batches kept for producer state). It
// returns the number of batches and records. Errors wrap ErrCorrupt or a
// record decompression error.
func ValidateCleaned(buf []byte) (batches int, records int64, err error) {
	var c Cleaner
	next := int64(0)
	for pos := 0; pos < len(buf); {
		b, err := nextBatch(buf[pos:], pos, next)
		if err != nil {
			return batches, records, err
		}
		raw, err := c.records(b, pos)
		if err != nil {
			return batches, records, err
		}
		for c.it.reset(b, raw); c.it.next(); {
		}
		if err := c.it.done(); err != nil {
			return batches, records, fmt.Errorf("%w at byte %d (offset %d): %v", ErrCorrupt, pos, b.BaseOffset(), err)
		}
		batches++
		records += int64(b.RecordCount())
		next = b.NextOffset()
		pos += b.Size()
	}
	return batches, records, nil
}
