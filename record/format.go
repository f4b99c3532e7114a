// Package record knows the Kafka RecordBatch v2 format: the byte layout of a
// batch header, how to validate a batch the way a Kafka broker does before it
// appends it, how to rewrite the fields a broker owns, and how to walk the
// records inside a batch (decompressing when needed).
//
// Every function here works on byte slices in place and does not allocate,
// except the record iterator when it has to decompress.
//
// RecordBatch v2, all integers big-endian (part of the wire and on-disk
// format: do not change):
//
//	offset  size  field
//	+-------+----+-----------------------+-----------------------------------+
//	|  0    | 8  | baseOffset            | set by the broker on append       |
//	|  8    | 4  | batchLength           | bytes after this field            |
//	| 12    | 4  | partitionLeaderEpoch  | set by the broker                 |
//	| 16    | 1  | magic                 | 2                                 |
//	| 17    | 4  | crc                   | CRC-32C of bytes [21, end)        |
//	| 21    | 2  | attributes            | codec, timestamp type, txn, ctrl  |
//	| 23    | 4  | lastOffsetDelta       |                                   |
//	| 27    | 8  | baseTimestamp         |                                   |
//	| 35    | 8  | maxTimestamp          |                                   |
//	| 43    | 8  | producerId            |                                   |
//	| 51    | 2  | producerEpoch         |                                   |
//	| 53    | 4  | baseSequence          |                                   |
//	| 57    | 4  | recordCount           |                                   |
//	| 61    | .. | records               | varint framed, maybe compressed   |
//	+-------+----+-----------------------+-----------------------------------+
//
// baseOffset, batchLength and partitionLeaderEpoch lie outside the CRC, so a
// broker can rewrite baseOffset and partitionLeaderEpoch without recomputing it.
package record

import (
	"encoding/binary"
	"hash/crc32"
)

// Header field offsets and sizes. Part of the on-disk format: do not change.
const (
	offBaseOffset      = 0
	offBatchLength     = 8
	offLeaderEpoch     = 12
	offMagic           = 16
	offCRC             = 17
	offAttributes      = 21
	offLastOffsetDelta = 23
	offBaseTimestamp   = 27
	offMaxTimestamp    = 35
	offProducerID      = 43
	offProducerEpoch   = 51
	offBaseSequence    = 53
	offRecordCount     = 57

	// HeaderSize is the size of a RecordBatch v2 header, records excluded.
	HeaderSize = 61
	// LogOverhead is the part of a batch before and including batchLength:
	// a batch occupies LogOverhead+batchLength bytes.
	LogOverhead = 12
	// crcStart is where the CRC-covered span begins.
	crcStart = 21

	// Magic is the only record format version Sluice stores.
	Magic = 2
)

// Attribute bits.
const (
	CodecMask         = 0x07
	TimestampTypeBit  = 0x08 // set: LogAppendTime
	TransactionalBit  = 0x10
	ControlBit        = 0x20
	DeleteHorizonBit  = 0x40
	CodecNone         = 0
	CodecGzip         = 1
	CodecSnappy       = 2
	CodecLZ4          = 3
	CodecZstd         = 4
	NoProducerID      = -1
	NoSequence        = -1
	NoPartitionLeader = -1
	NoTimestamp       = -1 // Kafka's RecordBatch.NO_TIMESTAMP
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Batch is a view of one RecordBatch v2 in a byte slice: b[:Size()] is the
// whole batch. Methods read header fields; they do not check bounds beyond
// what Validate or Peek established.
type Batch []byte

func (b Batch) BaseOffset() int64      { return int64(binary.BigEndian.Uint64(b[offBaseOffset:])) }
func (b Batch) BatchLength() int32     { return int32(binary.BigEndian.Uint32(b[offBatchLength:])) }
func (b Batch) Size() int              { return LogOverhead + int(b.BatchLength()) }
func (b Batch) LeaderEpoch() int32     { return int32(binary.BigEndian.Uint32(b[offLeaderEpoch:])) }
func (b Batch) Magic() int8            { return int8(b[offMagic]) }
func (b Batch) CRC() uint32            { return binary.BigEndian.Uint32(b[offCRC:]) }
func (b Batch) Attributes() int16      { return int16(binary.BigEndian.Uint16(b[offAttributes:])) }
func (b Batch) Codec() int             { return int(b.Attributes() & CodecMask) }
func (b Batch) LogAppendTime() bool    { return b.Attributes()&TimestampTypeBit != 0 }
func (b Batch) Transactional() bool    { return b.Attributes()&TransactionalBit != 0 }
func (b Batch) Control() bool          { return b.Attributes()&ControlBit != 0 }
func (b Batch) LastOffsetDelta() int32 { return int32(binary.BigEndian.Uint32(b[offLastOffsetDelta:])) }
func (b Batch) LastOffset() int64      { return b.BaseOffset() + int64(b.LastOffsetDelta()) }
func (b Batch) NextOffset() int64      { return b.LastOffset() + 1 }
func (b Batch) BaseTimestamp() int64   { return int64(binary.BigEndian.Uint64(b[offBaseTimestamp:])) }
func (b Batch) MaxTimestamp() int64    { return int64(binary.BigEndian.Uint64(b[offMaxTimestamp:])) }
func (b Batch) ProducerID() int64      { return int64(binary.BigEndian.Uint64(b[offProducerID:])) }
func (b Batch) ProducerEpoch() int16   { return int16(binary.BigEndian.Uint16(b[offProducerEpoch:])) }
func (b Batch) BaseSequence() int32    { return int32(binary.BigEndian.Uint32(b[offBaseSequence:])) }
func (b Batch) RecordCount() int32     { return int32(binary.BigEndian.Uint32(b[offRecordCount:])) }
func (b Batch) Records() []byte        { return b[HeaderSize:b.Size()] }
func (b Batch) SetBaseOffset(o int64)  { binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(o)) }
func (b Batch) SetLeaderEpoch(e int32) { binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(e)) }
func (b Batch) LastSequence() int32 {
	if b.BaseSequence() < 0 {
		return NoSequence
	}
	return seqAdd(b.BaseSequence(), b.LastOffsetDelta())
}
func (b Batch) ComputeCRC() uint32      { return crc32.Checksum(b[crcStart:b.Size()], castagnoli) }
func (b Batch) setCRC(c uint32)         { binary.BigEndian.PutUint32(b[offCRC:], c) }
func (b Batch) setMaxTimestamp(t int64) { binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(t)) }

// SetLogAppendTime marks the batch as LogAppendTime with maxTimestamp ts and
// recomputes the CRC, as a broker does for topics with
// message.timestamp.type=LogAppendTime.
func (b Batch) SetLogAppendTime(ts int64) {
	attrs := uint16(b.Attributes()) | TimestampTypeBit
	binary.BigEndian.PutUint16(b[offAttributes:], attrs)
	b.setMaxTimestamp(ts)
	b.setCRC(b.ComputeCRC())
}

// seqAdd adds delta to a producer sequence number, wrapping at MaxInt32 as
// Kafka's DefaultRecordBatch.incrementSequence does.
func seqAdd(seq, delta int32) int32 {
	if seq > (1<<31-1)-delta {
		return delta - ((1<<31 - 1) - seq) - 1
	}
	return seq + delta
}

// PeekSize reads the size of the batch at the start of b from its header
// (LogOverhead+batchLength) without validating anything. ok is false when b
// is shorter than LogOverhead.
func PeekSize(b []byte) (size int, ok bool) {
	if len(b) < LogOverhead {
		return 0, false
	}
	return LogOverhead + int(int32(binary.BigEndian.Uint32(b[offBatchLength:]))), true
}

// StoredSizeFits reports whether n, a stored batch's size with its log
// overhead (PeekSize), is one a batch can have (a header at least,
// MaxBatchSize of batch at most) and fits in the left bytes that remain:
// what a scanner of a file checks before it reads or allocates the batch.
func StoredSizeFits(n int, left int64) bool {
	return n >= HeaderSize && n <= LogOverhead+MaxBatchSize && int64(n) <= left
}
