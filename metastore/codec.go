package metastore

import (
	"encoding/binary"
	"math"
	"time"
)

// This file holds the primitive encoders and the decoder shared by the
// topic and group values (layouts in format.go). All integers are big
// endian. Part of the on-disk format: do not change what a primitive writes.
//
//	str, bytes: u32 length, then that many bytes
//	time:       i64 Unix milliseconds, -1 for the zero time
//	count:      u32 number of elements that follow

func appendU32(dst []byte, v uint32) []byte { return binary.BigEndian.AppendUint32(dst, v) }
func appendI64(dst []byte, v int64) []byte  { return binary.BigEndian.AppendUint64(dst, uint64(v)) }

func appendStr(dst []byte, s string) []byte {
	return append(appendU32(dst, uint32(len(s))), s...)
}

func appendBytes(dst, b []byte) []byte {
	return append(appendU32(dst, uint32(len(b))), b...)
}

func appendTime(dst []byte, t time.Time) []byte { return appendI64(dst, timeToMillis(t)) }

// decoder reads primitives from b with a sticky error: after the first
// short or malformed read every read returns a zero value and bad stays
// set, so a decode function checks once at the end (kbin.Reader style).
// Strings and byte slices are copies; the decoder never retains b past use.
type decoder struct {
	b   []byte
	bad bool
}

func (d *decoder) take(n int) []byte {
	if d.bad || n < 0 || n > len(d.b) {
		d.bad = true
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) u8() byte {
	if v := d.take(1); v != nil {
		return v[0]
	}
	return 0
}

func (d *decoder) i16() int16 {
	if v := d.take(2); v != nil {
		return int16(binary.BigEndian.Uint16(v))
	}
	return 0
}

func (d *decoder) u32() uint32 {
	if v := d.take(4); v != nil {
		return binary.BigEndian.Uint32(v)
	}
	return 0
}

func (d *decoder) i32() int32 { return int32(d.u32()) }

func (d *decoder) i64() int64 {
	if v := d.take(8); v != nil {
		return int64(binary.BigEndian.Uint64(v))
	}
	return 0
}

func (d *decoder) str() string { return string(d.take(d.length())) }

// bytes returns a copy of the next byte string, nil when it is empty.
func (d *decoder) bytes() []byte {
	v := d.take(d.length())
	if len(v) == 0 {
		return nil
	}
	return append([]byte(nil), v...)
}

func (d *decoder) time() time.Time { return millisToTime(d.i64()) }

// length reads a u32 length that must fit in what remains.
func (d *decoder) length() int {
	n := d.u32()
	if uint64(n) > uint64(len(d.b)) || n > math.MaxInt32 {
		d.bad = true
		return 0
	}
	return int(n)
}

// count reads a u32 element count where each element takes at least
// minSize bytes, so a damaged count cannot make the caller allocate more
// than the input could hold.
func (d *decoder) count(minSize int) int {
	n := d.u32()
	if d.bad || uint64(n)*uint64(minSize) > uint64(len(d.b)) {
		d.bad = true
		return 0
	}
	return int(n)
}

// done reports whether every byte was consumed without error.
func (d *decoder) done() bool { return !d.bad && len(d.b) == 0 }
