package record

import (
	"encoding/binary"
	"hash/crc32"
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
	Attributes    int16 // codec bits must be 0: AppendBatch does not compress
}

// AppendBatch encodes records as one uncompressed RecordBatch v2 and appends
// it to dst. It is for tests, tools and the broker's own internal records;
// clients bring their own encoders. recs must not be empty.
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
	b := Batch(dst[start:])
	be := binary.BigEndian
	be.PutUint64(b[offBaseOffset:], uint64(opts.BaseOffset))
	be.PutUint32(b[offBatchLength:], uint32(len(b)-LogOverhead))
	be.PutUint32(b[offLeaderEpoch:], uint32(opts.LeaderEpoch))
	b[offMagic] = Magic
	be.PutUint16(b[offAttributes:], uint16(opts.Attributes&^CodecMask))
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
