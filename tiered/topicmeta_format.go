package tiered

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/sluice/sluice/engine"
)

// The records of __remote_log_metadata, Kafka's topic-based remote log
// metadata manager (storage/src/main/resources/message/*.json, serialized
// by RemoteLogMetadataSerde over AbstractApiMessageSerde). A record's key
// is null; its value is
//
//	+---------------+-----------------+-----------------+---------------+
//	| frame version | apiKey          | version         | message body  |
//	| uvarint = 1   | uvarint (0..3)  | uvarint = 0     | flexible v0   |
//	+---------------+-----------------+-----------------+---------------+
//
// Every message is a flexible version: strings and arrays are compact
// (uvarint length + 1), nullable bytes are compact with 0 for null, a
// uuid is 16 bytes (most then least significant long, big-endian), and
// every struct (the message, each nested entry and each array element)
// ends with tagged fields (uvarint count, then per field uvarint tag,
// uvarint size, bytes), which this decoder skips.
//
// apiKey 0, RemoteLogSegmentMetadataRecord:
//
//	RemoteLogSegmentId { TopicIdPartition { Name string, Id uuid,
//	  Partition int32 }, Id uuid }, StartOffset int64, EndOffset int64,
//	BrokerId int32, MaxTimestampMs int64, EventTimestampMs int64,
//	SegmentLeaderEpochs [] { LeaderEpoch int32, Offset int64 },
//	SegmentSizeInBytes int32, CustomMetadata nullable bytes,
//	RemoteLogSegmentState int8, tagged field 0: TxnIndexEmpty bool
//
// TxnIndexEmpty is the tagged field Kafka added after 3.9 (KIP-1058,
// KAFKA-16780): written only when true, false when absent (a reader then
// expects a transaction index object). Other tags are skipped.
//
// apiKey 1, RemoteLogSegmentMetadataUpdateRecord:
//
//	RemoteLogSegmentId (as above), BrokerId int32, EventTimestampMs int64,
//	CustomMetadata nullable bytes, RemoteLogSegmentState int8
//
// apiKey 2, RemotePartitionDeleteMetadataRecord:
//
//	TopicIdPartition (as above), BrokerId int32, EventTimestampMs int64,
//	RemotePartitionDeleteState int8
//
// apiKey 3, RemoteLogSegmentMetadataSnapshotRecord (Kafka's snapshot
// files, not the topic; decoded for completeness):
//
//	SegmentId uuid, StartOffset int64, EndOffset int64, BrokerId int32,
//	MaxTimestampMs int64, EventTimestampMs int64, SegmentLeaderEpochs
//	(as above), SegmentSizeInBytes int32, CustomMetadata nullable bytes,
//	RemoteLogSegmentState int8, tagged field 0: TxnIndexEmpty bool
//
// Part of Kafka's format: do not change.
const (
	rlmFrameVersion = 1

	MetadataSegmentKey  = 0 // RemoteLogSegmentMetadataRecord
	MetadataUpdateKey   = 1 // RemoteLogSegmentMetadataUpdateRecord
	MetadataDeleteKey   = 2 // RemotePartitionDeleteMetadataRecord
	MetadataSnapshotKey = 3 // RemoteLogSegmentMetadataSnapshotRecord
)

// PartitionDeleteState is Kafka's RemotePartitionDeleteState with its ids.
type PartitionDeleteState int8

// Part of the format: do not change.
const (
	DeletePartitionMarked   PartitionDeleteState = 0
	DeletePartitionStarted  PartitionDeleteState = 1
	DeletePartitionFinished PartitionDeleteState = 2
)

func (s PartitionDeleteState) String() string {
	switch s {
	case DeletePartitionMarked:
		return "DELETE_PARTITION_MARKED"
	case DeletePartitionStarted:
		return "DELETE_PARTITION_STARTED"
	case DeletePartitionFinished:
		return "DELETE_PARTITION_FINISHED"
	}
	return fmt.Sprintf("PartitionDeleteState(%d)", int8(s))
}

// MetadataRecord is one decoded record of __remote_log_metadata. Kind is
// its apiKey and says which fields are set:
//
//   - MetadataSegmentKey: Segment whole.
//   - MetadataUpdateKey: Segment.Partition, SegmentID, BrokerID,
//     EventTimestamp and State.
//   - MetadataDeleteKey: Delete.
//   - MetadataSnapshotKey: Segment without Partition.
type MetadataRecord struct {
	Kind    int16
	Segment SegmentMetadata
	Delete  PartitionDelete
}

// PartitionDelete is Kafka's RemotePartitionDeleteMetadata.
type PartitionDelete struct {
	Partition      TopicIDPartition
	BrokerID       int32
	EventTimestamp int64
	State          PartitionDeleteState
}

// appendRLMRecord appends r's encoding (the record's value) to dst.
func appendRLMRecord(dst []byte, r *MetadataRecord) []byte {
	dst = binary.AppendUvarint(dst, rlmFrameVersion)
	dst = binary.AppendUvarint(dst, uint64(r.Kind))
	dst = binary.AppendUvarint(dst, 0) // version
	s := &r.Segment
	switch r.Kind {
	case MetadataSegmentKey:
		dst = appendSegmentID(dst, s.Partition, s.SegmentID)
		dst = be64(dst, s.StartOffset)
		dst = be64(dst, s.EndOffset)
		dst = be32(dst, s.BrokerID)
		dst = be64(dst, s.MaxTimestamp)
		dst = be64(dst, s.EventTimestamp)
		dst = appendEpochs(dst, s.LeaderEpochs)
		dst = be32(dst, int32(min(s.SizeInBytes, math.MaxInt32)))
		dst = append(dst, 0) // CustomMetadata: null
		dst = append(dst, byte(s.State))
	case MetadataUpdateKey:
		dst = appendSegmentID(dst, s.Partition, s.SegmentID)
		dst = be32(dst, s.BrokerID)
		dst = be64(dst, s.EventTimestamp)
		dst = append(dst, 0) // CustomMetadata: null
		dst = append(dst, byte(s.State))
	case MetadataDeleteKey:
		d := &r.Delete
		dst = appendTopicIDPartition(dst, d.Partition)
		dst = be32(dst, d.BrokerID)
		dst = be64(dst, d.EventTimestamp)
		dst = append(dst, byte(d.State))
	case MetadataSnapshotKey:
		dst = append(dst, s.SegmentID[:]...)
		dst = be64(dst, s.StartOffset)
		dst = be64(dst, s.EndOffset)
		dst = be32(dst, s.BrokerID)
		dst = be64(dst, s.MaxTimestamp)
		dst = be64(dst, s.EventTimestamp)
		dst = appendEpochs(dst, s.LeaderEpochs)
		dst = be32(dst, int32(min(s.SizeInBytes, math.MaxInt32)))
		dst = append(dst, 0)
		dst = append(dst, byte(s.State))
	}
	if (r.Kind == MetadataSegmentKey || r.Kind == MetadataSnapshotKey) && s.TxnIndexEmpty {
		return append(dst, 1, txnIndexEmptyTag, 1, 1) // one tagged field: tag 0, 1 byte, true
	}
	return append(dst, 0) // the message's tagged fields: none
}

// txnIndexEmptyTag is TxnIndexEmpty's tag. Part of the format.
const txnIndexEmptyTag = 0

func be64(dst []byte, v int64) []byte { return binary.BigEndian.AppendUint64(dst, uint64(v)) }
func be32(dst []byte, v int32) []byte { return binary.BigEndian.AppendUint32(dst, uint32(v)) }

func appendTopicIDPartition(dst []byte, tp TopicIDPartition) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(tp.Topic))+1)
	dst = append(dst, tp.Topic...)
	dst = append(dst, tp.TopicID[:]...)
	dst = be32(dst, tp.Partition)
	return append(dst, 0)
}

func appendSegmentID(dst []byte, tp TopicIDPartition, id UUID) []byte {
	dst = appendTopicIDPartition(dst, tp)
	dst = append(dst, id[:]...)
	return append(dst, 0)
}

func appendEpochs(dst []byte, es []engine.EpochEntry) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(es))+1)
	for _, e := range es {
		dst = be32(dst, e.Epoch)
		dst = be64(dst, e.StartOffset)
		dst = append(dst, 0)
	}
	return dst
}

// rlmReader reads a flexible message with a sticky error: the first
// short or bad read sets err and every later read returns zero.
type rlmReader struct {
	b   []byte
	err error
}

func (r *rlmReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", ErrCorruptMetadata, fmt.Sprintf(format, args...))
	}
}

func (r *rlmReader) take(n int, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.fail("%s: %d bytes wanted, %d left", what, n, len(r.b))
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *rlmReader) uvarint(what string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("%s: bad uvarint", what)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *rlmReader) int8(what string) int8 {
	if v := r.take(1, what); v != nil {
		return int8(v[0])
	}
	return 0
}

func (r *rlmReader) int32(what string) int32 {
	if v := r.take(4, what); v != nil {
		return int32(binary.BigEndian.Uint32(v))
	}
	return 0
}

func (r *rlmReader) int64(what string) int64 {
	if v := r.take(8, what); v != nil {
		return int64(binary.BigEndian.Uint64(v))
	}
	return 0
}

func (r *rlmReader) uuid(what string) (u UUID) {
	copy(u[:], r.take(16, what))
	return u
}

// compactLen reads a compact length (uvarint n+1); nullable allows 0
// (null, returned as -1).
func (r *rlmReader) compactLen(what string, nullable bool) int {
	v := r.uvarint(what)
	switch {
	case r.err != nil:
		return 0
	case v == 0 && nullable:
		return -1
	case v == 0:
		r.fail("%s: null where not nullable", what)
		return 0
	case v-1 > uint64(len(r.b)):
		r.fail("%s: length %d with %d bytes left", what, v-1, len(r.b))
		return 0
	}
	return int(v - 1)
}

// tags skips a struct's tagged fields.
func (r *rlmReader) tags(what string) { r.tagsWith(what, nil) }

// tagsWith reads a struct's tagged fields, handing each to field (nil:
// skip them all).
func (r *rlmReader) tagsWith(what string, field func(tag uint64, v []byte)) {
	n := r.uvarint(what + " tagged fields")
	if n > uint64(len(r.b)) {
		r.fail("%s: %d tagged fields in %d bytes", what, n, len(r.b))
		return
	}
	for i := uint64(0); i < n && r.err == nil; i++ {
		tag := r.uvarint(what + " tag")
		size := r.uvarint(what + " tag size")
		if size > uint64(len(r.b)) {
			r.fail("%s: tagged field of %d bytes in %d", what, size, len(r.b))
			return
		}
		v := r.take(int(size), what+" tagged field")
		if field != nil && r.err == nil {
			field(tag, v)
		}
	}
}

func (r *rlmReader) topicIDPartition() (tp TopicIDPartition) {
	n := r.compactLen("topic name", false)
	tp.Topic = string(r.take(n, "topic name"))
	tp.TopicID = r.uuid("topic id")
	tp.Partition = r.int32("partition")
	r.tags("TopicIdPartition")
	return tp
}

func (r *rlmReader) segmentID() (TopicIDPartition, UUID) {
	tp := r.topicIDPartition()
	id := r.uuid("segment id")
	r.tags("RemoteLogSegmentId")
	return tp, id
}

func (r *rlmReader) epochs() []engine.EpochEntry {
	n := r.compactLen("segment leader epochs", false)
	if r.err != nil {
		return nil
	}
	// An entry is at least 13 bytes: a length past that is damage, not
	// an allocation to make.
	if n > len(r.b)/13 {
		r.fail("%d leader epochs in %d bytes", n, len(r.b))
		return nil
	}
	out := make([]engine.EpochEntry, 0, n)
	for i := 0; i < n && r.err == nil; i++ {
		e := engine.EpochEntry{Epoch: r.int32("leader epoch"), StartOffset: r.int64("leader epoch offset")}
		r.tags("SegmentLeaderEpochEntry")
		out = append(out, e)
	}
	return out
}

func (r *rlmReader) customMetadata() {
	if n := r.compactLen("custom metadata", true); n > 0 {
		r.take(n, "custom metadata")
	}
}

func (r *rlmReader) segmentState() State {
	s := State(r.int8("segment state"))
	if r.err == nil && (s < CopySegmentStarted || s > DeleteSegmentFinished) {
		r.fail("segment state %d", s)
	}
	return s
}

// DecodeMetadataRecord decodes the value of a __remote_log_metadata
// record (tools and tests read the topic with it); see decodeRLMRecord.
func DecodeMetadataRecord(b []byte) (MetadataRecord, error) { return decodeRLMRecord(b) }

// decodeRLMRecord decodes a record's value. Anything Kafka's serde would
// refuse (a frame version other than 1, an unknown apiKey or version,
// short input, trailing bytes) and values that cannot be (an unknown
// state, a negative size or offset range) give an error wrapping
// ErrCorruptMetadata; it never panics and allocates at most in
// proportion to len(b).
func decodeRLMRecord(b []byte) (MetadataRecord, error) {
	r := rlmReader{b: b}
	var rec MetadataRecord
	if fv := r.uvarint("frame version"); r.err == nil && fv != rlmFrameVersion {
		r.fail("frame version %d", fv)
	}
	key := r.uvarint("apiKey")
	if v := r.uvarint("version"); r.err == nil && v != 0 {
		r.fail("apiKey %d version %d", key, v)
	}
	if r.err != nil {
		return MetadataRecord{}, r.err
	}
	rec.Kind = int16(min(key, math.MaxInt16))
	s := &rec.Segment
	switch key {
	case MetadataSegmentKey, MetadataSnapshotKey:
		if key == MetadataSegmentKey {
			s.Partition, s.SegmentID = r.segmentID()
		} else {
			s.SegmentID = r.uuid("segment id")
		}
		s.StartOffset = r.int64("start offset")
		s.EndOffset = r.int64("end offset")
		s.BrokerID = r.int32("broker id")
		s.MaxTimestamp = r.int64("max timestamp")
		s.EventTimestamp = r.int64("event timestamp")
		s.LeaderEpochs = r.epochs()
		s.SizeInBytes = int64(r.int32("segment size"))
		r.customMetadata()
		s.State = r.segmentState()
		if r.err == nil && (s.StartOffset < 0 || s.EndOffset < s.StartOffset || s.SizeInBytes < 0) {
			r.fail("offsets [%d, %d], size %d", s.StartOffset, s.EndOffset, s.SizeInBytes)
		}
	case MetadataUpdateKey:
		s.Partition, s.SegmentID = r.segmentID()
		s.BrokerID = r.int32("broker id")
		s.EventTimestamp = r.int64("event timestamp")
		r.customMetadata()
		s.State = r.segmentState()
	case MetadataDeleteKey:
		d := &rec.Delete
		d.Partition = r.topicIDPartition()
		d.BrokerID = r.int32("broker id")
		d.EventTimestamp = r.int64("event timestamp")
		d.State = PartitionDeleteState(r.int8("partition delete state"))
		if r.err == nil && (d.State < DeletePartitionMarked || d.State > DeletePartitionFinished) {
			r.fail("partition delete state %d", d.State)
		}
	default:
		r.fail("apiKey %d", key)
	}
	r.tagsWith("message", func(tag uint64, v []byte) {
		if tag == txnIndexEmptyTag && (key == MetadataSegmentKey || key == MetadataSnapshotKey) {
			if len(v) != 1 || v[0] > 1 {
				r.fail("TxnIndexEmpty of %d bytes", len(v))
				return
			}
			s.TxnIndexEmpty = v[0] == 1
		}
	})
	if r.err == nil && len(r.b) != 0 {
		r.fail("%d trailing bytes after apiKey %d", len(r.b), key)
	}
	if r.err != nil {
		return MetadataRecord{}, r.err
	}
	return rec, nil
}

// metadataPartition is the __remote_log_metadata partition of tp among n,
// Kafka's RemoteLogMetadataTopicPartitioner: murmur2 of the 4 big-endian
// bytes of Java's Objects.hash(id's least significant long, its most
// significant long, partition), made positive, modulo n.
func metadataPartition(tp TopicIDPartition, n int32) int32 {
	msb := int64(binary.BigEndian.Uint64(tp.TopicID[:8]))
	lsb := int64(binary.BigEndian.Uint64(tp.TopicID[8:]))
	longHash := func(v int64) int32 { return int32(v ^ int64(uint64(v)>>32)) }
	h := int32(1)
	h = 31*h + longHash(lsb)
	h = 31*h + longHash(msb)
	h = 31*h + tp.Partition
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], uint32(h))
	return int32(murmur2(b[:])&0x7fffffff) % n
}

// murmur2 is Kafka's Utils.murmur2.
func murmur2(data []byte) int32 {
	const (
		seed = uint32(0x9747b28c)
		m    = uint32(0x5bd1e995)
		r    = 24
	)
	length := len(data)
	h := seed ^ uint32(length)
	for i := 0; i+4 <= length; i += 4 {
		k := uint32(data[i]) | uint32(data[i+1])<<8 | uint32(data[i+2])<<16 | uint32(data[i+3])<<24
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	tail := length &^ 3
	switch length % 4 {
	case 3:
		h ^= uint32(data[tail+2]) << 16
		fallthrough
	case 2:
		h ^= uint32(data[tail+1]) << 8
		fallthrough
	case 1:
		h ^= uint32(data[tail])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return int32(h)
}
