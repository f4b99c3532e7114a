// Package sharecoord is the share coordinator (KIP-932): the durable state
// of share partitions in the internal topic __share_group_state, as
// Kafka's ShareCoordinatorShard keeps it, on the shared coordinator runtime
// (coordlog). A share partition's state (group/share Snapshot: its state
// epoch, start offset and the delivery state and count of the offsets in
// flight that are not fresh) is written before an acknowledgement is
// answered, and read back when the group next uses the partition, so a
// restart loses no acknowledgement and redelivers only what was not
// acknowledged.
package sharecoord

// The records of __share_group_state, Kafka's ShareSnapshot and ShareUpdate
// coordinator records (share-coordinator/src/main/resources/common/message).
// Part of the on-disk format: do not change. Integers are big-endian;
// "compact" arrays carry uvarint(length+1); "tags" is a uvarint count of
// tagged fields (each uvarint tag, uvarint size, bytes), written as 0 and
// skipped on read.
//
//	key (both types, not flexible):
//	+------------+----------------------+-----------+-------------+
//	| type int16 | group int16 len+utf8 | topic 16B | part int32  |
//	+------------+----------------------+-----------+-------------+
//	  type 0: ShareSnapshotKey, 1: ShareUpdateKey
//
//	ShareSnapshotValue (version int16 = 0, flexible):
//	+---------+--------------+------------+-------------+-------------+
//	| version | snapEpoch i32| stateEpoch | leaderEpoch | startOffset |
//	+---------+--------------+------------+-------------+-------------+
//	| createTimestamp i64 | writeTimestamp i64 | batches | tags |
//	  tags: Sluice's dead-letter bookkeeping under TagDLQ (dlq.go) when
//	  there is any; other tags are skipped
//
//	ShareUpdateValue (version int16 = 0, flexible):
//	| version | snapEpoch i32 | leaderEpoch i32 | startOffset i64 (-1: unchanged) | batches | tags |
//
//	Kafka 4.2 (KIP-1226) adds the tagged field 0, DeliveryCompleteCount
//	int32 (default -1), to ShareUpdateValue (share-coordinator's
//	ShareUpdateValue.json): Sluice skips it on read and does not write it
//	(a Kafka reader sees -1, "not counted"); ReadShareGroupStateSummary v1
//	counts it from the batches instead.
//
//	batches: compact array of
//	| firstOffset i64 | lastOffset i64 | deliveryState i8 | deliveryCount i16 | tags |
//
// A null value is a tombstone: the share partition's state was deleted.

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"

	"github.com/sluice/sluice/group/share"
)

// Record types (key versions). Part of the on-disk format.
const (
	TypeSnapshot int16 = 0
	TypeUpdate   int16 = 1
)

// ErrCorrupt marks a record that does not decode.
var ErrCorrupt = errors.New("sharecoord: corrupt record")

// stateBatchSize is the least a state batch takes on the wire.
const stateBatchSize = 8 + 8 + 1 + 2 + 1

// Value is a decoded ShareSnapshotValue or ShareUpdateValue.
type Value struct {
	SnapshotEpoch  int32
	StateEpoch     int32 // snapshots only
	LeaderEpoch    int32
	StartOffset    int64 // -1 in an update: unchanged
	CreateTime     int64 // snapshots only, Unix ms
	WriteTime      int64 // snapshots only, Unix ms
	Batches        []share.StateBatch
	DLQ            *DLQState // snapshots only: tag TagDLQ (dlq.go), nil when absent
	UnknownTagData int       // bytes of tagged fields skipped
}

// AppendKey appends the key of type typ for k.
func AppendKey(dst []byte, typ int16, k share.Key) []byte {
	dst = kbin.AppendInt16(dst, typ)
	dst = kbin.AppendString(dst, k.Group)
	dst = kbin.AppendUuid(dst, k.Topic)
	return kbin.AppendInt32(dst, k.Partition)
}

// DecodeKey decodes a key.
func DecodeKey(b []byte) (int16, share.Key, error) {
	r := kbin.Reader{Src: b}
	typ := r.Int16()
	var k share.Key
	k.Group = r.String()
	k.Topic = r.Uuid()
	k.Partition = r.Int32()
	if err := r.Complete(); err != nil || len(r.Src) != 0 || (typ != TypeSnapshot && typ != TypeUpdate) {
		return 0, share.Key{}, fmt.Errorf("%w: key of %d bytes (type %d)", ErrCorrupt, len(b), typ)
	}
	return typ, k, nil
}

func appendBatches(dst []byte, bs []share.StateBatch) []byte {
	dst = kbin.AppendCompactArrayLen(dst, len(bs))
	for _, b := range bs {
		dst = kbin.AppendInt64(dst, b.First)
		dst = kbin.AppendInt64(dst, b.Last)
		dst = kbin.AppendInt8(dst, int8(b.DeliveryState))
		dst = kbin.AppendInt16(dst, b.DeliveryCount)
		dst = kbin.AppendUvarint(dst, 0)
	}
	return dst
}

// AppendSnapshotValue appends a ShareSnapshotValue.
func AppendSnapshotValue(dst []byte, v Value) []byte {
	dst = kbin.AppendInt16(dst, 0)
	dst = kbin.AppendInt32(dst, v.SnapshotEpoch)
	dst = kbin.AppendInt32(dst, v.StateEpoch)
	dst = kbin.AppendInt32(dst, v.LeaderEpoch)
	dst = kbin.AppendInt64(dst, v.StartOffset)
	dst = kbin.AppendInt64(dst, v.CreateTime)
	dst = kbin.AppendInt64(dst, v.WriteTime)
	dst = appendBatches(dst, v.Batches)
	if v.DLQ == nil {
		return kbin.AppendUvarint(dst, 0)
	}
	tag := AppendDLQ(nil, v.DLQ)
	dst = kbin.AppendUvarint(dst, 1)
	dst = kbin.AppendUvarint(dst, TagDLQ)
	dst = kbin.AppendUvarint(dst, uint32(len(tag)))
	return append(dst, tag...)
}

// AppendUpdateValue appends a ShareUpdateValue.
func AppendUpdateValue(dst []byte, v Value) []byte {
	dst = kbin.AppendInt16(dst, 0)
	dst = kbin.AppendInt32(dst, v.SnapshotEpoch)
	dst = kbin.AppendInt32(dst, v.LeaderEpoch)
	dst = kbin.AppendInt64(dst, v.StartOffset)
	dst = appendBatches(dst, v.Batches)
	return kbin.AppendUvarint(dst, 0)
}

// skipTags skips a tagged-field section and returns the bytes skipped.
func skipTags(r *kbin.Reader) int { return readTags(r, nil) }

// readTags reads a tagged-field section: TagDLQ into v.DLQ (when v is not
// nil), the others skipped; it returns the bytes skipped. A TagDLQ that
// does not decode fails the reader.
func readTags(r *kbin.Reader, v *Value) int {
	n := int(r.Uvarint())
	skipped := 0
	for i := 0; i < n && r.Ok(); i++ {
		tag := r.Uvarint()
		size := int(r.Uvarint())
		if size < 0 || size > len(r.Src) {
			r.Span(len(r.Src) + 1) // fail the reader
			return skipped
		}
		b := r.Span(size)
		if v != nil && tag == TagDLQ {
			d, err := DecodeDLQ(b)
			if err != nil {
				r.Span(len(r.Src) + 1)
				return skipped
			}
			v.DLQ = d
			continue
		}
		skipped += size
	}
	return skipped
}

func readBatches(r *kbin.Reader, v *Value) {
	n := int(r.Uvarint()) - 1
	if n < 0 {
		return // null or empty
	}
	// Each batch takes at least stateBatchSize bytes: a count beyond what
	// is left cannot be honest, so it allocates nothing.
	if n > len(r.Src)/stateBatchSize {
		r.Span(len(r.Src) + 1)
		return
	}
	v.Batches = make([]share.StateBatch, 0, n)
	for range n {
		var b share.StateBatch
		b.First = r.Int64()
		b.Last = r.Int64()
		b.DeliveryState = share.RecordState(r.Int8())
		b.DeliveryCount = r.Int16()
		v.UnknownTagData += skipTags(r)
		if !r.Ok() {
			return
		}
		v.Batches = append(v.Batches, b)
	}
}

// DecodeValue decodes the value of a record of type typ.
func DecodeValue(typ int16, b []byte) (Value, error) {
	r := kbin.Reader{Src: b}
	var v Value
	version := r.Int16()
	if r.Ok() && version != 0 {
		return Value{}, fmt.Errorf("%w: value version %d", ErrCorrupt, version)
	}
	v.SnapshotEpoch = r.Int32()
	if typ == TypeSnapshot {
		v.StateEpoch = r.Int32()
		v.LeaderEpoch = r.Int32()
		v.StartOffset = r.Int64()
		v.CreateTime = r.Int64()
		v.WriteTime = r.Int64()
	} else {
		v.LeaderEpoch = r.Int32()
		v.StartOffset = r.Int64()
	}
	readBatches(&r, &v)
	if typ == TypeSnapshot {
		v.UnknownTagData += readTags(&r, &v)
	} else {
		v.UnknownTagData += skipTags(&r)
	}
	if err := r.Complete(); err != nil || len(r.Src) != 0 {
		return Value{}, fmt.Errorf("%w: type %d value of %d bytes (%d left): %v", ErrCorrupt, typ, len(b), len(r.Src), err)
	}
	return v, nil
}
