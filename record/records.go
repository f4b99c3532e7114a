package record

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Record is one record of a batch, decoded in place: Key, Value and the raw
// headers point into the batch (or decompressed) bytes and stay valid as long
// as those bytes do.
//
// Record v2 layout (varints are zig-zag, as in protobuf sint):
//
//	length varint | attributes int8 | timestampDelta varlong | offsetDelta varint |
//	keyLength varint | key | valueLength varint | value |
//	headerCount varint | [keyLength varint | key | valueLength varint | value]...
type Record struct {
	Attributes     int8
	TimestampDelta int64
	OffsetDelta    int64
	Key            []byte // nil when keyLength is -1
	Value          []byte // nil when valueLength is -1
	HeaderCount    int
	headers        []byte
}

// Header is one record header.
type Header struct {
	Key   string
	Value []byte
}

var errShort = errors.New("truncated")

// varint reads a zig-zag varint; n <= 0 means malformed, as binary.Varint.
func varint(b []byte) (int64, int) { return binary.Varint(b) }

// parseRecord decodes the record at the start of b into r and returns its
// encoded size. It does not allocate.
func parseRecord(b []byte, r *Record) (int, error) {
	length, n := varint(b)
	if n <= 0 {
		return 0, errShort
	}
	if length < 0 || length > int64(len(b)-n) {
		return 0, fmt.Errorf("record length %d exceeds the %d bytes left", length, len(b)-n)
	}
	total := n + int(length)
	body := b[n:total]
	if len(body) < 1 {
		return 0, errShort
	}
	r.Attributes = int8(body[0])
	body = body[1:]
	if r.TimestampDelta, n = varint(body); n <= 0 {
		return 0, errShort
	}
	body = body[n:]
	if r.OffsetDelta, n = varint(body); n <= 0 {
		return 0, errShort
	}
	if r.OffsetDelta < 0 {
		return 0, fmt.Errorf("negative offset delta %d", r.OffsetDelta)
	}
	body = body[n:]
	var err error
	if r.Key, body, err = lenBytes(body); err != nil {
		return 0, fmt.Errorf("key: %w", err)
	}
	if r.Value, body, err = lenBytes(body); err != nil {
		return 0, fmt.Errorf("value: %w", err)
	}
	hc, n := varint(body)
	if n <= 0 || hc < 0 || hc > int64(len(body)) {
		return 0, fmt.Errorf("bad header count")
	}
	body = body[n:]
	r.HeaderCount = int(hc)
	r.headers = body
	for i := int64(0); i < hc; i++ {
		var k []byte
		if k, body, err = lenBytes(body); err != nil || k == nil {
			return 0, fmt.Errorf("header %d key: bad length", i)
		}
		if _, body, err = lenBytes(body); err != nil {
			return 0, fmt.Errorf("header %d value: %w", i, err)
		}
	}
	if len(body) != 0 {
		return 0, fmt.Errorf("%d bytes after the last header", len(body))
	}
	r.headers = r.headers[:len(r.headers)-len(body)]
	return total, nil
}

// lenBytes reads a varint length and that many bytes; -1 means null.
func lenBytes(b []byte) (v, rest []byte, err error) {
	l, n := varint(b)
	if n <= 0 {
		return nil, nil, errShort
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

// Headers calls fn for each header of r, in order.
func (r *Record) Headers(fn func(key, value []byte)) {
	b := r.headers
	for i := 0; i < r.HeaderCount; i++ {
		k, rest, _ := lenBytes(b)
		v, rest2, _ := lenBytes(rest)
		fn(k, v)
		b = rest2
	}
}

// Iter walks the records of a batch. For compressed batches it decompresses
// the records block once, into a buffer it keeps and reuses across Reset.
//
//	var it record.Iter
//	it.Reset(batch)
//	for it.Next() { r := it.Record(); ... }
//	if err := it.Err(); err != nil { ... }
type Iter struct {
	batch Batch
	raw   []byte
	left  int32
	rec   Record
	err   error
	buf   []byte
}

// Reset points the iterator at a batch that has passed Validate.
func (it *Iter) Reset(b Batch) { it.ResetLimit(b, MaxDecompressed) }

// ResetLimit is Reset for a batch whose records must not decompress past
// limit bytes (ErrTooLarge from Err), such as a client's batch not yet
// validated (a topic's Rules.MaxDecompressed).
func (it *Iter) ResetLimit(b Batch, limit int64) {
	it.batch, it.left, it.err = b, b.RecordCount(), nil
	it.raw = b.Records()
	if codec := b.Codec(); codec != CodecNone {
		it.buf, it.err = decompressLimit(codec, it.raw, it.buf[:0], min(limit, MaxDecompressed))
		it.raw = it.buf
	}
}

// Next decodes the next record; false at the end or on error.
func (it *Iter) Next() bool {
	if it.err != nil || it.left <= 0 {
		if it.err == nil && len(it.raw) != 0 {
			it.err = fmt.Errorf("%w: %d bytes after the last record", ErrInvalid, len(it.raw))
		}
		return false
	}
	n, err := parseRecord(it.raw, &it.rec)
	if err != nil {
		it.err = fmt.Errorf("%w: record %d: %v", ErrInvalid, it.batch.RecordCount()-it.left, err)
		return false
	}
	it.raw = it.raw[n:]
	it.left--
	return true
}

// Record returns the current record; valid until the next call to Next or Reset.
func (it *Iter) Record() *Record { return &it.rec }

// Offset is the absolute offset of the current record.
func (it *Iter) Offset() int64 { return it.batch.BaseOffset() + it.rec.OffsetDelta }

// Timestamp is the timestamp of the current record, honouring LogAppendTime.
func (it *Iter) Timestamp() int64 {
	if it.batch.LogAppendTime() {
		return it.batch.MaxTimestamp()
	}
	return it.batch.BaseTimestamp() + it.rec.TimestampDelta
}

// Err reports the first error met.
func (it *Iter) Err() error { return it.err }

// varint2 decodes the zig-zag varint at b[p:] when it takes one or two
// bytes (values in [-8192, 8191]: every length, delta and count of a
// record of up to 8 KiB), and returns n == 0 otherwise, for the caller
// to decode with varint. Small enough to inline.
func varint2(b []byte, p int) (v int64, n int) {
	if p < 0 || p+1 >= len(b) {
		return 0, 0
	}
	u := uint64(b[p])
	if u < 0x80 {
		return int64(u>>1) ^ -int64(u&1), 1
	}
	if c := b[p+1]; c < 0x80 {
		u = u&0x7f | uint64(c)<<7
		return int64(u>>1) ^ -int64(u&1), 2
	}
	return 0, 0
}

// varintAt decodes the zig-zag varint at b[p:]: n <= 0 means malformed.
// Callers try varint2 first.
func varintAt(b []byte, p int) (int64, int) {
	if p < 0 || p > len(b) {
		return 0, 0
	}
	return varint(b[p:])
}

// scanRecord is parseRecord for the validator: the size of the record at
// the start of b, its timestamp and offset deltas and whether its key is
// null, without filling a Record. ok is false exactly where parseRecord
// fails; walkRecords then asks parseRecord why.
func scanRecord(b []byte) (size int, tsDelta, offsetDelta int64, nullKey, ok bool) {
	length, n := varint2(b, 0)
	if n == 0 {
		length, n = varintAt(b, 0)
	}
	if n <= 0 || length < 1 || length > int64(len(b)-n) {
		return
	}
	size = n + int(length)
	body := b[n:size]
	p := 1 // attributes
	if tsDelta, n = varint2(body, p); n == 0 {
		tsDelta, n = varintAt(body, p)
	}
	if n <= 0 {
		return
	}
	p += n
	if offsetDelta, n = varint2(body, p); n == 0 {
		offsetDelta, n = varintAt(body, p)
	}
	if n <= 0 || offsetDelta < 0 {
		return
	}
	p += n
	// Key, value, then each header's key (never null) and value.
	kl, n := varint2(body, p)
	if n == 0 {
		kl, n = varintAt(body, p)
	}
	if n <= 0 || kl < -1 || kl > int64(len(body)-p-n) {
		return
	}
	p += n + max(0, int(kl))
	nullKey = kl == -1
	vl, n := varint2(body, p)
	if n == 0 {
		vl, n = varintAt(body, p)
	}
	if n <= 0 || vl < -1 || vl > int64(len(body)-p-n) {
		return
	}
	p += n + max(0, int(vl))
	hc, n := varint2(body, p)
	if n == 0 {
		hc, n = varintAt(body, p)
	}
	if n <= 0 || hc < 0 || hc > int64(len(body)-p-n) {
		return
	}
	p += n
	for i := int64(0); i < hc; i++ {
		hk, n := varint2(body, p)
		if n == 0 {
			hk, n = varintAt(body, p)
		}
		if n <= 0 || hk < 0 || hk > int64(len(body)-p-n) {
			return
		}
		p += n + int(hk)
		hv, n := varint2(body, p)
		if n == 0 {
			hv, n = varintAt(body, p)
		}
		if n <= 0 || hv < -1 || hv > int64(len(body)-p-n) {
			return
		}
		p += n + max(0, int(hv))
	}
	return size, tsDelta, offsetDelta, nullKey, p == len(body)
}
