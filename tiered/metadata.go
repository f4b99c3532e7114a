package tiered

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/sluice/sluice/engine"
)

// ErrCorruptMetadata marks remote log metadata that does not decode: a
// fetch that needs it fails with a storage error, never a panic.
var ErrCorruptMetadata = errors.New("tiered: corrupt remote log metadata")

// State is a remote segment's state, Kafka's RemoteLogSegmentState with its
// ids. Transitions: COPY_SEGMENT_STARTED -> COPY_SEGMENT_FINISHED ->
// DELETE_SEGMENT_STARTED -> DELETE_SEGMENT_FINISHED, or
// COPY_SEGMENT_STARTED -> DELETE_SEGMENT_STARTED for a copy that never
// finished (a crash): such a segment is cleaned up, never read.
type State int8

// Part of the metadata format: do not change.
const (
	CopySegmentStarted    State = 0
	CopySegmentFinished   State = 1
	DeleteSegmentStarted  State = 2
	DeleteSegmentFinished State = 3
)

func (s State) String() string {
	switch s {
	case CopySegmentStarted:
		return "COPY_SEGMENT_STARTED"
	case CopySegmentFinished:
		return "COPY_SEGMENT_FINISHED"
	case DeleteSegmentStarted:
		return "DELETE_SEGMENT_STARTED"
	case DeleteSegmentFinished:
		return "DELETE_SEGMENT_FINISHED"
	}
	return fmt.Sprintf("State(%d)", int8(s))
}

// validNext reports whether a segment in state s may move to next, as
// Kafka's RemoteLogSegmentState.isValidTransition.
func (s State) validNext(next State) bool {
	switch s {
	case CopySegmentStarted:
		return next == CopySegmentFinished || next == DeleteSegmentStarted
	case CopySegmentFinished:
		return next == DeleteSegmentStarted
	case DeleteSegmentStarted:
		return next == DeleteSegmentFinished
	}
	return false
}

// UUID is a 16-byte id (a topic id, a remote segment id), printed as
// Kafka's Uuid.toString: URL-safe base64 without padding.
type UUID [16]byte

func (u UUID) String() string { return base64.RawURLEncoding.EncodeToString(u[:]) }

// TopicIDPartition names a partition by its topic id and name, as Kafka's
// TopicIdPartition: a topic deleted and created again under the same name
// is another partition.
type TopicIDPartition struct {
	TopicID   UUID
	Topic     string
	Partition int32
}

func (tp TopicIDPartition) String() string {
	return fmt.Sprintf("%s-%d(%s)", tp.Topic, tp.Partition, tp.TopicID)
}

// SegmentMetadata is Kafka's RemoteLogSegmentMetadata for one segment of a
// partition, its latest state applied.
type SegmentMetadata struct {
	Partition TopicIDPartition
	SegmentID UUID
	// StartOffset and EndOffset are the segment's first and last offsets,
	// both inclusive as in Kafka.
	StartOffset, EndOffset int64
	MaxTimestamp           int64 // largest batch maxTimestamp, -1: none
	EventTimestamp         int64 // when the latest state was recorded (ms)
	BrokerID               int32
	// LeaderEpochs are the leader epochs the segment covers with the
	// first offset of each, ascending (Kafka's segmentLeaderEpochs).
	LeaderEpochs  []engine.EpochEntry
	SizeInBytes   int64 // the .log object's size
	State         State
	TxnIndexEmpty bool
}

// Metadata format, one value per partition (metastore checkpoint
// "tiered/<topic id>/<partition>"), all integers big-endian:
//
//	+---------+----------+-----------+----------+------+--------+----------+
//	| version | topic id | partition | name len | name | count  | records  |
//	| int8 =0 | 16 bytes | int32     | int16    | ...  | int32  | count of |
//	+---------+----------+-----------+----------+------+--------+----------+
//
// a record:
//
//	+--------+--------+----------------------------------------------------+
//	| length | crc32c | body (length bytes; crc32c Castagnoli of the body) |
//	| int32  | uint32 |                                                    |
//	+--------+--------+----------------------------------------------------+
//
// a body: segment id [16], start offset int64, end offset int64, max
// timestamp int64, event timestamp int64, broker id int32, size int64,
// state int8, txn index empty int8, epoch count int32, then per epoch
// (epoch int32, start offset int64).
//
// Part of the on-disk format: do not change; a new layout takes version 1.
const (
	metadataVersion = 0
	recordFixed     = 16 + 8 + 8 + 8 + 8 + 4 + 8 + 1 + 1 + 4
	epochEntrySize  = 4 + 8
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encodePartition appends the encoding of a partition's segments to dst.
func encodePartition(dst []byte, tp TopicIDPartition, segs []SegmentMetadata) []byte {
	be := binary.BigEndian
	dst = append(dst, metadataVersion)
	dst = append(dst, tp.TopicID[:]...)
	dst = be.AppendUint32(dst, uint32(tp.Partition))
	dst = be.AppendUint16(dst, uint16(len(tp.Topic)))
	dst = append(dst, tp.Topic...)
	dst = be.AppendUint32(dst, uint32(len(segs)))
	for i := range segs {
		s := &segs[i]
		body := recordFixed + epochEntrySize*len(s.LeaderEpochs)
		dst = be.AppendUint32(dst, uint32(body))
		crcAt := len(dst)
		dst = be.AppendUint32(dst, 0)
		start := len(dst)
		dst = append(dst, s.SegmentID[:]...)
		dst = be.AppendUint64(dst, uint64(s.StartOffset))
		dst = be.AppendUint64(dst, uint64(s.EndOffset))
		dst = be.AppendUint64(dst, uint64(s.MaxTimestamp))
		dst = be.AppendUint64(dst, uint64(s.EventTimestamp))
		dst = be.AppendUint32(dst, uint32(s.BrokerID))
		dst = be.AppendUint64(dst, uint64(s.SizeInBytes))
		dst = append(dst, byte(s.State))
		empty := byte(0)
		if s.TxnIndexEmpty {
			empty = 1
		}
		dst = append(dst, empty)
		dst = be.AppendUint32(dst, uint32(len(s.LeaderEpochs)))
		for _, e := range s.LeaderEpochs {
			dst = be.AppendUint32(dst, uint32(e.Epoch))
			dst = be.AppendUint64(dst, uint64(e.StartOffset))
		}
		be.PutUint32(dst[crcAt:], crc32.Checksum(dst[start:], castagnoli))
	}
	return dst
}

// decodePartition decodes a value encodePartition wrote. Any damage (short
// input, bad CRC, unknown version or state, trailing bytes, offsets out of
// order) gives an error wrapping ErrCorruptMetadata that says where.
func decodePartition(b []byte) (TopicIDPartition, []SegmentMetadata, error) {
	be := binary.BigEndian
	var tp TopicIDPartition
	corrupt := func(format string, args ...any) (TopicIDPartition, []SegmentMetadata, error) {
		return TopicIDPartition{}, nil, fmt.Errorf("%w: %s", ErrCorruptMetadata, fmt.Sprintf(format, args...))
	}
	if len(b) < 1+16+4+2 {
		return corrupt("header of %d bytes", len(b))
	}
	if b[0] != metadataVersion {
		return corrupt("version %d", b[0])
	}
	copy(tp.TopicID[:], b[1:17])
	tp.Partition = int32(be.Uint32(b[17:]))
	n := int(be.Uint16(b[21:]))
	b = b[23:]
	if len(b) < n+4 {
		return corrupt("topic name of %d bytes in %d", n, len(b))
	}
	tp.Topic = string(b[:n])
	count := int(be.Uint32(b[n:]))
	b = b[n+4:]
	if count < 0 || count > len(b)/(8+recordFixed) {
		return corrupt("%d records in %d bytes", count, len(b))
	}
	segs := make([]SegmentMetadata, 0, count)
	for i := 0; i < count; i++ {
		if len(b) < 8 {
			return corrupt("record %d: %d bytes left", i, len(b))
		}
		size := int(be.Uint32(b))
		crc := be.Uint32(b[4:])
		b = b[8:]
		if size < recordFixed || size > len(b) || (size-recordFixed)%epochEntrySize != 0 {
			return corrupt("record %d: length %d with %d bytes left", i, size, len(b))
		}
		body := b[:size]
		b = b[size:]
		if got := crc32.Checksum(body, castagnoli); got != crc {
			return corrupt("record %d: crc %08x, want %08x", i, got, crc)
		}
		s := SegmentMetadata{Partition: tp}
		copy(s.SegmentID[:], body)
		s.StartOffset = int64(be.Uint64(body[16:]))
		s.EndOffset = int64(be.Uint64(body[24:]))
		s.MaxTimestamp = int64(be.Uint64(body[32:]))
		s.EventTimestamp = int64(be.Uint64(body[40:]))
		s.BrokerID = int32(be.Uint32(body[48:]))
		s.SizeInBytes = int64(be.Uint64(body[52:]))
		s.State = State(body[60])
		s.TxnIndexEmpty = body[61] == 1
		ne := int(be.Uint32(body[62:]))
		if ne != (size-recordFixed)/epochEntrySize {
			return corrupt("record %d: %d epochs in %d bytes", i, ne, size-recordFixed)
		}
		if s.State < CopySegmentStarted || s.State > DeleteSegmentFinished {
			return corrupt("record %d: state %d", i, s.State)
		}
		if s.StartOffset < 0 || s.EndOffset < s.StartOffset || s.SizeInBytes < 0 {
			return corrupt("record %d: offsets [%d, %d], size %d", i, s.StartOffset, s.EndOffset, s.SizeInBytes)
		}
		for j := 0; j < ne; j++ {
			e := body[recordFixed+j*epochEntrySize:]
			s.LeaderEpochs = append(s.LeaderEpochs, engine.EpochEntry{Epoch: int32(be.Uint32(e)), StartOffset: int64(be.Uint64(e[4:]))})
		}
		segs = append(segs, s)
	}
	if len(b) != 0 {
		return corrupt("%d trailing bytes", len(b))
	}
	return tp, segs, nil
}
