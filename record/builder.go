package record

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// BuildRecord is one record for AppendBatch.
type BuildRecord struct {
	Key, Value []byte // nil encodes as null
	Headers    []Header
	Timestamp  int64 // absolute, ms
}

// BatchOptions set the header fields of a batch built by AppendBatch.
type BatchOptions struct {
	BaseOffset    int64
	LeaderEpoch   int32
	ProducerID    int64 // -1 when not idempotent
	ProducerEpoch int16
	BaseSequence  int32
	Attributes    int16 // codec bits are ignored: Codec sets them
	// Codec compresses the records block: CodecNone, CodecGzip,
	// CodecSnappy, CodecLZ4 or CodecZstd.
	Codec int
	// XerialSnappy frames snappy as the Java client does (two chunks, so
	// that readers meet the chunk loop); otherwise one raw block, as
	// franz-go and librdkafka write it.
	XerialSnappy bool
}

// AppendBatch encodes records as one RecordBatch v2, compressed with
// opts.Codec, and appends it to dst. It is for tests, tools and the broker's
// own internal records; clients bring their own encoders. recs must not be
// empty.
func AppendBatch(dst []byte, opts BatchOptions, recs []BuildRecord) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, HeaderSize)...)
	base := recs[0].Timestamp
	maxTs := base
	for _, r := range recs {
		if r.Timestamp < base {
			base = r.Timestamp
		}
		if r.Timestamp > maxTs {
			maxTs = r.Timestamp
		}
	}
	var body []byte
	for i, r := range recs {
		body = body[:0]
		body = append(body, 0) // attributes
		body = binary.AppendVarint(body, r.Timestamp-base)
		body = binary.AppendVarint(body, int64(i))
		body = appendVarBytes(body, r.Key)
		body = appendVarBytes(body, r.Value)
		body = binary.AppendVarint(body, int64(len(r.Headers)))
		for _, h := range r.Headers {
			body = appendVarBytes(body, []byte(h.Key))
			body = appendVarBytes(body, h.Value)
		}
		dst = binary.AppendVarint(dst, int64(len(body)))
		dst = append(dst, body...)
	}
	if opts.Codec != CodecNone {
		raw := append([]byte(nil), dst[start+HeaderSize:]...)
		dst = CompressRecords(dst[:start+HeaderSize], opts.Codec, raw, opts.XerialSnappy)
	}
	b := Batch(dst[start:])
	be := binary.BigEndian
	be.PutUint64(b[offBaseOffset:], uint64(opts.BaseOffset))
	be.PutUint32(b[offBatchLength:], uint32(len(b)-LogOverhead))
	be.PutUint32(b[offLeaderEpoch:], uint32(opts.LeaderEpoch))
	b[offMagic] = Magic
	be.PutUint16(b[offAttributes:], uint16(opts.Attributes&^CodecMask)|uint16(opts.Codec&CodecMask))
	be.PutUint32(b[offLastOffsetDelta:], uint32(len(recs)-1))
	be.PutUint64(b[offBaseTimestamp:], uint64(base))
	be.PutUint64(b[offMaxTimestamp:], uint64(maxTs))
	be.PutUint64(b[offProducerID:], uint64(opts.ProducerID))
	be.PutUint16(b[offProducerEpoch:], uint16(opts.ProducerEpoch))
	be.PutUint32(b[offBaseSequence:], uint32(opts.BaseSequence))
	be.PutUint32(b[offRecordCount:], uint32(len(recs)))
	be.PutUint32(b[offCRC:], crc32.Checksum(b[crcStart:], castagnoli))
	return dst
}

func appendVarBytes(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	dst = binary.AppendVarint(dst, int64(len(b)))
	return append(dst, b...)
}

// CompressRecords appends raw, a records block, compressed with codec as
// Kafka clients compress it, to dst. It panics on an unknown codec.
func CompressRecords(dst []byte, codec int, raw []byte, xerial bool) []byte {
	buf := bytes.NewBuffer(dst)
	switch codec {
	case CodecGzip:
		w := gzip.NewWriter(buf)
		mustWrite(w.Write(raw))
		mustWrite(0, w.Close())
	case CodecSnappy:
		if !xerial {
			return append(dst, s2.EncodeSnappy(nil, raw)...)
		}
		buf.Write(xerialHeader)
		buf.Write([]byte{0, 0, 0, 1, 0, 0, 0, 1}) // version, compatible version
		half := len(raw) / 2
		for _, part := range [][]byte{raw[:half], raw[half:]} {
			blk := s2.EncodeSnappy(nil, part)
			buf.Write(binary.BigEndian.AppendUint32(nil, uint32(len(blk))))
			buf.Write(blk)
		}
	case CodecLZ4:
		w := lz4.NewWriter(buf)
		mustWrite(w.Write(raw))
		mustWrite(0, w.Close())
	case CodecZstd:
		// One single-segment frame, as franz-go writes it.
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
		mustWrite(0, err)
		dst = enc.EncodeAll(raw, dst)
		mustWrite(0, enc.Close())
		return dst
	default:
		panic(fmt.Sprintf("record: CompressRecords: codec %d", codec))
	}
	return buf.Bytes()
}

// mustWrite panics on an error writing to memory, which cannot happen.
func mustWrite(_ int, err error) {
	if err != nil {
		panic(fmt.Sprintf("record: compress: %v", err))
	}
}
