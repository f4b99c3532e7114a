package server

// Records of the internal __consumer_offsets topic, in Kafka's own layout
// (the OffsetCommitKey and OffsetCommitValue schemas of Kafka's
// group-coordinator json files), so Kafka's tools could read our logs.
// Integers big-endian; a string is an int16 length then UTF-8 bytes.
//
// Key, version 1 (an offset commit; versions 0 and 1 share the layout,
// version 2 is a group metadata key, which Sluice does not write yet and
// skips when loading):
//
//	+---------+-------------+-------------+-----------+
//	| int16 1 | group str   | topic str   | int32 par |
//	+---------+-------------+-------------+-----------+
//
// Value, version 3 (a null value is a tombstone: the offset is deleted):
//
//	+---------+--------------+-------------------+--------------+------------------+
//	| int16 3 | int64 offset | int32 leaderEpoch | metadata str | int64 commit ms  |
//	+---------+--------------+-------------------+--------------+------------------+
//
// Versions 0-2 of the value (no leader epoch; version 1 adds an int64
// expire timestamp after the commit timestamp) are read too.
//
// Part of the on-disk format: do not change the written versions.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/sluice/sluice/metastore"
)

const (
	offsetCommitKeyVersion   = 1 // part of the on-disk format
	groupMetadataKeyVersion  = 2
	offsetCommitValueVersion = 3 // part of the on-disk format
)

// errOffsetsRecord marks an undecodable __consumer_offsets record.
var errOffsetsRecord = errors.New("server: bad __consumer_offsets record")

// offsetKey is a decoded offset commit key.
type offsetKey struct {
	Group     string
	Topic     string
	Partition int32
}

func appendKafkaString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

// appendOffsetKey appends the version 1 offset commit key.
func appendOffsetKey(b []byte, k offsetKey) []byte {
	b = binary.BigEndian.AppendUint16(b, offsetCommitKeyVersion)
	b = appendKafkaString(b, k.Group)
	b = appendKafkaString(b, k.Topic)
	return binary.BigEndian.AppendUint32(b, uint32(k.Partition))
}

// appendOffsetValue appends the version 3 offset commit value.
func appendOffsetValue(b []byte, o metastore.CommittedOffset) []byte {
	b = binary.BigEndian.AppendUint16(b, offsetCommitValueVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(o.Offset))
	b = binary.BigEndian.AppendUint32(b, uint32(o.LeaderEpoch))
	b = appendKafkaString(b, o.Metadata)
	return binary.BigEndian.AppendUint64(b, uint64(o.CommitTime.UnixMilli()))
}

// kreader reads big-endian fields with a sticky error.
type kreader struct {
	b   []byte
	err error
}

func (r *kreader) take(n int) []byte {
	if r.err != nil || n < 0 || len(r.b) < n {
		if r.err == nil {
			r.err = fmt.Errorf("%w: %d bytes needed, %d left", errOffsetsRecord, n, len(r.b))
		}
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *kreader) int16() int16 {
	if v := r.take(2); v != nil {
		return int16(binary.BigEndian.Uint16(v))
	}
	return 0
}

func (r *kreader) int32() int32 {
	if v := r.take(4); v != nil {
		return int32(binary.BigEndian.Uint32(v))
	}
	return 0
}

func (r *kreader) int64() int64 {
	if v := r.take(8); v != nil {
		return int64(binary.BigEndian.Uint64(v))
	}
	return 0
}

func (r *kreader) str() string {
	n := r.int16()
	return string(r.take(int(n)))
}

// decodeOffsetKey decodes a key; isOffset is false for other key versions
// (group metadata), which the caller skips.
func decodeOffsetKey(b []byte) (k offsetKey, isOffset bool, err error) {
	r := kreader{b: b}
	v := r.int16()
	if r.err != nil {
		return k, false, r.err
	}
	switch v {
	case 0, 1:
	case groupMetadataKeyVersion:
		return k, false, nil
	default:
		return k, false, fmt.Errorf("%w: key version %d", errOffsetsRecord, v)
	}
	k.Group, k.Topic, k.Partition = r.str(), r.str(), r.int32()
	return k, true, r.err
}

// decodeOffsetValue decodes an offset commit value of versions 0-3.
func decodeOffsetValue(b []byte) (metastore.CommittedOffset, error) {
	r := kreader{b: b}
	o := metastore.CommittedOffset{LeaderEpoch: -1}
	v := r.int16()
	if r.err == nil && (v < 0 || v > 3) {
		return o, fmt.Errorf("%w: value version %d", errOffsetsRecord, v)
	}
	o.Offset = r.int64()
	if v >= 3 {
		o.LeaderEpoch = r.int32()
	}
	o.Metadata = r.str()
	o.CommitTime = time.UnixMilli(r.int64())
	if v == 1 {
		if exp := r.int64(); exp >= 0 {
			o.ExpireTime = time.UnixMilli(exp)
		}
	}
	return o, r.err
}

// javaStringHashCode is Java's String.hashCode: s[0]*31^(n-1) + ... +
// s[n-1] over the UTF-16 code units of s, in int32 arithmetic.
func javaStringHashCode(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			// A surrogate pair: two code units.
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}

// offsetsPartitionFor is Kafka's partitionFor:
// Utils.abs(groupId.hashCode) % offsets.topic.num.partitions, where
// Utils.abs maps Integer.MIN_VALUE to 0.
func offsetsPartitionFor(group string, n int32) int32 {
	h := javaStringHashCode(group)
	if h == -1<<31 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % n
}
