package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Decompression
//
// The records block of a compressed batch is one compressed stream. The
// broker reads it through a pooled streaming decoder (openDecoder) that
// never yields more than a caller-given number of bytes, so that validating
// a batch costs a fixed buffer, not the decompressed size, and a small batch
// that expands without end (a decompression bomb) is refused after at most
// its bound, without allocating the expansion. Memory a decoder may hold:
//
//	gzip    the 32 KiB deflate window and its buffers
//	lz4     one block of the frame's block size (64 KiB..4 MiB)
//	zstd    its window, at most MaxZstdWindow (frames asking for more are
//	        refused: a window is allocated up front, whatever the content)
//	snappy  xerial framing (the Java client): one chunk (32 KiB as the
//	        Java client writes them); a raw block (franz-go, librdkafka):
//	        the whole block, whose decoded size is read from its header
//	        and checked against the bound before anything is allocated
//
// Decoders are kept in one sync.Pool per codec and reset per use.

// MaxDecompressed bounds what Decompress (and so Iter) expands one stored
// batch to. Batches a client sends are bounded more tightly on append, by
// Rules.MaxDecompressed.
const MaxDecompressed = 256 << 20

// MaxZstdWindow is the largest zstd window (frame header Window_Size, or
// the content size of a single-segment frame) a pooled decoder accepts;
// the decoder allocates it up front, whatever the frame holds. zstd-jni and
// librdkafka stay within it up to level 19. A first frame that asks for
// more gets a one-off decoder if the window is within the caller's bound
// (franz-go writes single-segment frames the size of the batch), and is
// ErrTooLarge otherwise.
const MaxZstdWindow = 8 << 20

// errTooBig is how a decoder reports output past its bound; validation
// turns it into ErrTooLarge.
var errTooBig = errors.New("decompresses past the limit")

// xerialHeader starts snappy data framed the way the Java client frames it:
// the header, two big-endian int32 versions, then (int32 length, raw snappy
// block) chunks.
var xerialHeader = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const xerialPrefix = 16 // header and the two version ints

// decoder is a pooled streaming decompressor. Read never returns more than
// the limit given to reset in total; past it, it fails with errTooBig.
type decoder struct {
	codec int
	raw   []byte // the compressed input
	src   bytes.Reader
	left  int64 // bytes Read may still return; one more than the limit at reset
	r     io.Reader

	gz   *gzip.Reader
	lz   *lz4.Reader
	zs   *zstd.Decoder
	big  *zstd.Decoder // one-off, for a frame whose window pooled decoders refuse
	snap snappyReader
}

var decoderPools [CodecZstd + 1]sync.Pool

// openDecoder returns a decoder for src, a records block compressed with
// codec, that yields at most limit bytes. The caller must call close.
// An error here (a bad gzip header, an unknown codec) is the caller's to
// classify; src is not retained past close.
func openDecoder(codec int, src []byte, limit int64) (*decoder, error) {
	if codec <= CodecNone || codec > CodecZstd {
		return nil, fmt.Errorf("unknown compression codec %d", codec)
	}
	d, _ := decoderPools[codec].Get().(*decoder)
	if d == nil {
		d = &decoder{codec: codec}
	}
	d.raw = src
	d.src.Reset(src)
	d.left = limit + 1
	if err := d.reset(limit); err != nil {
		d.close()
		return nil, err
	}
	return d, nil
}

func (d *decoder) reset(limit int64) error {
	switch d.codec {
	case CodecGzip:
		if d.gz == nil {
			zr, err := gzip.NewReader(&d.src)
			if err != nil {
				return fmt.Errorf("gzip: %w", err)
			}
			d.gz = zr
		} else if err := d.gz.Reset(&d.src); err != nil {
			return fmt.Errorf("gzip: %w", err)
		}
		d.r = d.gz
	case CodecSnappy:
		if err := d.snap.reset(d.raw, limit); err != nil {
			return err
		}
		d.r = &d.snap
	case CodecLZ4:
		if d.lz == nil {
			d.lz = lz4.NewReader(&d.src)
		} else {
			d.lz.Reset(&d.src)
		}
		d.r = d.lz
	case CodecZstd:
		w, ok := zstdWindow(d.raw)
		if ok && w > uint64(limit) {
			// A window larger than the bound is never needed, and would
			// be allocated before a byte is decoded.
			return fmt.Errorf("zstd: window of %d bytes: %w", w, errTooBig)
		}
		if ok && w > MaxZstdWindow {
			// A frame that needs a larger window than pooled decoders
			// keep: a one-off decoder.
			zr, err := zstd.NewReader(&d.src, zstd.WithDecoderConcurrency(1),
				zstd.WithDecoderMaxWindow(w), zstd.WithDecoderLowmem(true))
			if err != nil {
				return fmt.Errorf("zstd: %w", err)
			}
			d.big, d.r = zr, zr
			return nil
		}
		if d.zs == nil {
			zr, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1),
				zstd.WithDecoderMaxWindow(MaxZstdWindow), zstd.WithDecoderLowmem(true))
			if err != nil {
				return fmt.Errorf("zstd: %w", err)
			}
			d.zs = zr
		}
		if err := d.zs.Reset(&d.src); err != nil {
			return fmt.Errorf("zstd: %w", err)
		}
		d.r = d.zs
	}
	return nil
}

// zstdWindow reads the window a zstd frame at the start of b needs (its
// Window_Size, or its Frame_Content_Size for a single-segment frame, per
// RFC 8878 section 3.1.1.1); ok is false when b does not start with a
// frame header that says.
func zstdWindow(b []byte) (w uint64, ok bool) {
	if len(b) < 6 || binary.LittleEndian.Uint32(b) != 0xFD2FB528 {
		return 0, false
	}
	fhd := b[4]
	single := fhd&0x20 != 0
	p := 5
	if !single {
		wd := b[p]
		base := uint64(1) << (10 + wd>>3)
		return base + base/8*uint64(wd&7), true
	}
	p += [4]int{0, 1, 2, 4}[fhd&3] // dictionary id
	switch fhd >> 6 {
	case 0:
		if len(b) < p+1 {
			return 0, false
		}
		return uint64(b[p]), true
	case 1:
		if len(b) < p+2 {
			return 0, false
		}
		return uint64(binary.LittleEndian.Uint16(b[p:])) + 256, true
	case 2:
		if len(b) < p+4 {
			return 0, false
		}
		return uint64(binary.LittleEndian.Uint32(b[p:])), true
	default:
		if len(b) < p+8 {
			return 0, false
		}
		return binary.LittleEndian.Uint64(b[p:]), true
	}
}

// Read reads decompressed bytes, failing with errTooBig once the limit
// given to openDecoder would be passed.
func (d *decoder) Read(p []byte) (int, error) {
	if d.left <= 0 {
		return 0, errTooBig
	}
	if int64(len(p)) > d.left {
		p = p[:d.left]
	}
	n, err := d.r.Read(p)
	d.left -= int64(n)
	if d.left <= 0 {
		return n - 1, errTooBig // the byte past the limit is never handed out
	}
	return n, err
}

// close returns the decoder to its pool.
func (d *decoder) close() {
	d.raw = nil
	d.src.Reset(nil)
	d.r = nil
	if d.big != nil {
		d.big.Close()
		d.big = nil
	}
	d.snap.release()
	decoderPools[d.codec].Put(d)
}

// snappyReader decodes raw snappy blocks and xerial-framed snappy as a
// stream, one block (raw) or one chunk (xerial) at a time.
type snappyReader struct {
	src    []byte // what is left of the compressed input
	xerial bool
	out    []byte // decoded bytes not yet read
	buf    []byte // backing store of out, reused
	left   int64  // decoded bytes still allowed
}

// maxKeptSnappyBuf bounds the decode buffer a pooled snappy reader keeps:
// a raw block of a 1 MiB batch decodes to a few MiB.
const maxKeptSnappyBuf = 4 << 20

func (s *snappyReader) reset(src []byte, limit int64) error {
	s.src, s.out, s.left = src, nil, limit
	s.xerial = bytes.HasPrefix(src, xerialHeader)
	if s.xerial {
		if len(src) < xerialPrefix {
			return fmt.Errorf("snappy: short xerial header")
		}
		s.src = src[xerialPrefix:]
	}
	return nil
}

func (s *snappyReader) release() {
	s.src, s.out = nil, nil
	if cap(s.buf) > maxKeptSnappyBuf {
		s.buf = nil
	}
}

func (s *snappyReader) Read(p []byte) (int, error) {
	for len(s.out) == 0 {
		if len(s.src) == 0 {
			return 0, io.EOF
		}
		if err := s.next(); err != nil {
			return 0, err
		}
	}
	n := copy(p, s.out)
	s.out = s.out[n:]
	return n, nil
}

// next decodes the next block (raw: the whole input; xerial: one chunk).
func (s *snappyReader) next() error {
	block := s.src
	if s.xerial {
		if len(s.src) < 4 {
			return fmt.Errorf("snappy: short xerial chunk length")
		}
		n := binary.BigEndian.Uint32(s.src)
		if uint64(n) > uint64(len(s.src)-4) {
			return fmt.Errorf("snappy: xerial chunk of %d bytes with %d left", n, len(s.src)-4)
		}
		block = s.src[4 : 4+n]
		s.src = s.src[4+n:]
	} else {
		s.src = nil
	}
	n, err := s2.DecodedLen(block)
	if err != nil {
		return fmt.Errorf("snappy: %w", err)
	}
	if int64(n) > s.left {
		return errTooBig
	}
	s.left -= int64(n)
	if cap(s.buf) < n {
		s.buf = make([]byte, n)
	}
	out, err := s2.Decode(s.buf[:n], block)
	if err != nil {
		return fmt.Errorf("snappy: %w", err)
	}
	s.out = out
	return nil
}

// Decompress appends the decompressed form of src (compressed with codec)
// to dst and returns it. Output past MaxDecompressed is ErrTooLarge, bytes
// that do not decompress ErrCorrupt.
func Decompress(codec int, src, dst []byte) ([]byte, error) {
	return decompressLimit(codec, src, dst, MaxDecompressed)
}

// decompressLimit is Decompress with output past limit ErrTooLarge.
func decompressLimit(codec int, src, dst []byte, limit int64) ([]byte, error) {
	d, err := openDecoder(codec, src, limit)
	if err != nil {
		return nil, decodeError(err)
	}
	defer d.close()
	buf := bytes.NewBuffer(dst)
	if _, err := buf.ReadFrom(d); err != nil {
		return nil, decodeError(err)
	}
	return buf.Bytes(), nil
}

// decodeError classifies a decoder error: the bound is ErrTooLarge,
// anything else ErrCorrupt.
func decodeError(err error) error {
	if errors.Is(err, errTooBig) {
		return fmt.Errorf("%w: %v", ErrTooLarge, err)
	}
	return fmt.Errorf("%w: %v", ErrCorrupt, err)
}
