package record

import (
	"bytes"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// MaxDecompressed bounds what one batch may decompress to, so that a small
// malicious batch cannot make the broker allocate without limit.
const MaxDecompressed = 256 << 20

var zstdDec = sync.OnceValue(func() *zstd.Decoder {
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(MaxDecompressed))
	if err != nil {
		panic(err) // only on invalid options
	}
	return d
})

// xerialHeader starts snappy data framed the way the Java client frames it.
var xerialHeader = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// Decompress appends the decompressed form of src (compressed with codec) to
// dst and returns it.
func Decompress(codec int, src, dst []byte) ([]byte, error) {
	switch codec {
	case CodecGzip:
		zr, err := gzip.NewReader(bytes.NewReader(src))
		if err != nil {
			return nil, fmt.Errorf("%w: gzip: %v", ErrCorrupt, err)
		}
		return readAllBounded(zr, dst, "gzip")
	case CodecSnappy:
		return unsnappy(src, dst)
	case CodecLZ4:
		return readAllBounded(lz4.NewReader(bytes.NewReader(src)), dst, "lz4")
	case CodecZstd:
		out, err := zstdDec().DecodeAll(src, dst)
		if err != nil {
			return nil, fmt.Errorf("%w: zstd: %v", ErrCorrupt, err)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w: unknown codec %d", ErrInvalid, codec)
}

func readAllBounded(r io.Reader, dst []byte, name string) ([]byte, error) {
	buf := bytes.NewBuffer(dst)
	n, err := buf.ReadFrom(io.LimitReader(r, MaxDecompressed+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, name, err)
	}
	if n > MaxDecompressed {
		return nil, fmt.Errorf("%w: %s: decompresses past %d bytes", ErrInvalid, name, MaxDecompressed)
	}
	return buf.Bytes(), nil
}

// unsnappy handles both raw snappy blocks and the xerial framing used by the
// Java client: header, two version ints, then (len int32, block) chunks.
func unsnappy(src, dst []byte) ([]byte, error) {
	if !bytes.HasPrefix(src, xerialHeader) {
		return snappyBlock(src, dst)
	}
	if len(src) < 16 {
		return nil, fmt.Errorf("%w: snappy: short xerial header", ErrCorrupt)
	}
	src = src[16:]
	for len(src) > 0 {
		if len(src) < 4 {
			return nil, fmt.Errorf("%w: snappy: short xerial chunk", ErrCorrupt)
		}
		n := int(uint32(src[0])<<24 | uint32(src[1])<<16 | uint32(src[2])<<8 | uint32(src[3]))
		src = src[4:]
		if n < 0 || n > len(src) {
			return nil, fmt.Errorf("%w: snappy: chunk of %d bytes with %d left", ErrCorrupt, n, len(src))
		}
		var err error
		if dst, err = snappyBlock(src[:n], dst); err != nil {
			return nil, err
		}
		src = src[n:]
	}
	return dst, nil
}

func snappyBlock(src, dst []byte) ([]byte, error) {
	n, err := s2.DecodedLen(src)
	if err != nil {
		return nil, fmt.Errorf("%w: snappy: %v", ErrCorrupt, err)
	}
	if n > MaxDecompressed || len(dst)+n > MaxDecompressed {
		return nil, fmt.Errorf("%w: snappy: decompresses past %d bytes", ErrInvalid, MaxDecompressed)
	}
	start := len(dst)
	if cap(dst)-start < n {
		nd := make([]byte, start, start+n)
		copy(nd, dst)
		dst = nd
	}
	out, err := s2.Decode(dst[start:start+n], src)
	if err != nil {
		return nil, fmt.Errorf("%w: snappy: %v", ErrCorrupt, err)
	}
	return dst[:start+len(out)], nil
}
