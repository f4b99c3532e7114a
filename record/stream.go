package record

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
)

// recordStream walks the varint-framed records of a decompressed records
// block as it streams out of a decoder, through a fixed buffer: key, value
// and header bytes are skipped, never copied out, so a record of any size
// costs the buffer and nothing more. It checks what parseRecord checks, in
// the same terms, so that a compressed batch is accepted exactly when its
// uncompressed twin is (FuzzValidateCompressed holds the two together).
type recordStream struct {
	r        io.Reader
	buf      [streamBufSize]byte
	pos, end int   // buf[pos:end] is read but not consumed
	off      int64 // bytes consumed since reset
	err      error // sticky: the error that ended the input (io.EOF at its end)
}

// streamBufSize is the read buffer of a recordStream: large enough that a
// decoder is called once per ~32 KiB, small enough to pool freely.
const streamBufSize = 32 << 10

var streamPool = sync.Pool{New: func() any { return new(recordStream) }}

func (s *recordStream) reset(r io.Reader) {
	s.r, s.pos, s.end, s.off, s.err = r, 0, 0, 0, nil
}

// fill reads more input when the buffer is empty; false when there is none
// (s.err says why).
func (s *recordStream) fill() bool {
	for s.pos == s.end {
		if s.err != nil {
			return false
		}
		n, err := s.r.Read(s.buf[:])
		s.pos, s.end = 0, n
		if err != nil {
			s.err = err
		} else if n == 0 {
			s.err = io.ErrNoProgress
		}
	}
	return true
}

func (s *recordStream) readByte() (byte, bool) {
	if s.pos == s.end && !s.fill() {
		return 0, false
	}
	c := s.buf[s.pos]
	s.pos++
	s.off++
	return c, true
}

// varint reads a zig-zag varint as binary.Varint does: false when the
// input ends inside it or it overflows 64 bits.
func (s *recordStream) varint() (int64, bool) {
	if s.end-s.pos >= binary.MaxVarintLen64 {
		// Fast path: the whole varint is in the buffer.
		v, n := binary.Varint(s.buf[s.pos:s.end])
		if n <= 0 {
			return 0, false
		}
		s.pos += n
		s.off += int64(n)
		return v, true
	}
	var x uint64
	var shift uint
	for i := 0; i < binary.MaxVarintLen64; i++ {
		c, ok := s.readByte()
		if !ok {
			return 0, false
		}
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				return 0, false
			}
			x |= uint64(c) << shift
			return int64(x>>1) ^ -int64(x&1), true
		}
		x |= uint64(c&0x7f) << shift
		shift += 7
	}
	return 0, false
}

// skip consumes n bytes; false when the input ends first.
func (s *recordStream) skip(n int64) bool {
	for n > 0 {
		if s.pos == s.end && !s.fill() {
			return false
		}
		k := int64(s.end - s.pos)
		if k > n {
			k = n
		}
		s.pos += int(k)
		s.off += k
		n -= k
	}
	return true
}

// atEnd reports whether the input is exhausted. It reads one byte past the
// records if there is one, which is also what makes a decoder check its
// trailing checksum.
func (s *recordStream) atEnd() bool {
	if s.pos < s.end {
		return false
	}
	return !s.fill() && errors.Is(s.err, io.EOF)
}

// drain reads the rest of the input and returns the error that ended it,
// nil at a clean end of stream.
func (s *recordStream) drain() error {
	for s.fill() {
		s.off += int64(s.end - s.pos)
		s.pos = s.end
	}
	if errors.Is(s.err, io.EOF) {
		return nil
	}
	return s.err
}

// streamRecord is what next reports of a record: what the batch rules
// check. Key, value and headers are skipped.
type streamRecord struct {
	TimestampDelta int64
	OffsetDelta    int64
	NullKey        bool // keyLength was -1
}

// next reads one record. Its errors are the record's structural faults,
// or the decoder's error (errTooBig included) wrapped; the caller
// classifies.
func (s *recordStream) next(r *streamRecord) error {
	length, ok := s.varint()
	if !ok {
		return s.shortOr(errShort)
	}
	if length < 0 {
		return fmt.Errorf("record length %d", length)
	}
	end := s.off + length
	// Every field read below must end inside the record: a varint may run
	// past end before that is noticed, and is then refused.
	inside := func() bool { return s.off <= end }
	if _, ok := s.readByte(); !ok { // attributes
		return s.shortOr(errShort)
	}
	if r.TimestampDelta, ok = s.varint(); !ok || !inside() {
		return s.shortOr(errShort)
	}
	if r.OffsetDelta, ok = s.varint(); !ok || !inside() {
		return s.shortOr(errShort)
	}
	if r.OffsetDelta < 0 {
		return fmt.Errorf("negative offset delta %d", r.OffsetDelta)
	}
	kl, err := s.lenBytes(end, false)
	if err != nil {
		return fmt.Errorf("key: %w", err)
	}
	r.NullKey = kl == -1
	if _, err := s.lenBytes(end, false); err != nil {
		return fmt.Errorf("value: %w", err)
	}
	hc, ok := s.varint()
	if !ok || !inside() || hc < 0 || hc > end-s.off {
		return s.shortOr(fmt.Errorf("bad header count"))
	}
	for i := int64(0); i < hc; i++ {
		if _, err := s.lenBytes(end, true); err != nil {
			return fmt.Errorf("header %d key: %w", i, err)
		}
		if _, err := s.lenBytes(end, false); err != nil {
			return fmt.Errorf("header %d value: %w", i, err)
		}
	}
	if s.off != end {
		return fmt.Errorf("%d bytes after the last header", end-s.off)
	}
	return nil
}

// lenBytes skips a varint length and that many bytes (-1: null, refused
// when notNull), which must end by end, and returns the length.
func (s *recordStream) lenBytes(end int64, notNull bool) (int64, error) {
	l, ok := s.varint()
	if !ok || s.off > end {
		return 0, s.shortOr(errShort)
	}
	if l == -1 && !notNull {
		return -1, nil
	}
	if l < 0 || l > end-s.off {
		return 0, fmt.Errorf("length %d with %d bytes left", l, end-s.off)
	}
	if !s.skip(l) {
		return 0, s.shortOr(errShort)
	}
	return l, nil
}

// shortOr returns the decoder's error when the input failed, else err: a
// record cut short by a decoder fault is the decoder's fault.
func (s *recordStream) shortOr(err error) error {
	if s.pos == s.end && s.err != nil && !errors.Is(s.err, io.EOF) {
		return s.err
	}
	return err
}
