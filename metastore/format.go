package metastore

// This file holds the on-disk layout of the metastore: the Pebble key space
// and the encoding of every value. Nothing else lives here.
//
// # Keys
//
// Every key starts with one kind byte. Names inside keys are escaped and
// terminated so that no encoded name is a prefix of another (topic "a" vs
// "a.b", group "g" vs "g\x00x") and so that keys sort in the byte order of
// the raw names:
//
//	esc(name) = name with every 0x00 byte written as 0x00 0xFF, then 0x00 0x01
//
// The terminator 0x00 0x01 occurs only at the end of an encoded name (an
// escaped 0x00 is always followed by 0xFF), so esc is prefix-free. The
// terminator sorts below every continuation (a byte > 0x00, or 0x00 0xFF), so
// encoded names sort exactly as the raw names do under bytes.Compare.
//
//	kind  key                                             value
//	----  ----------------------------------------------  ----------------------------
//	0x00  0x00 "format"                                    u8 store format (formatV1)
//	0x01  0x01 esc(topic)                                  u8 ver=1, topic box below
//	0x02  0x02 "next"                                      u8 ver=1, i64 BE next free producer id
//	0x03  0x03 esc(group) esc(topic) u32 BE partition      u8 ver=1, offset box below
//	0x04  0x04 esc(group)                                  u8 ver=1, group box below
//	0x05  0x05 esc(name)                                   u8 ver=1, the caller's bytes
//	0x06  0x06 u8 resource type, u8 pattern type, esc(name) u8 ver=1, acl box below
//	0x07  0x07 esc(user) esc(mechanism)                    u8 ver=1, SCRAM credential (scram.go)
//	0x08  0x08 esc(group) u64 BE producer id esc(topic)    u8 ver=1, pending box below
//	0x09  0x09 u64 BE producer id                          u8 ver=1, i16 BE latest producer epoch
//	      u32 BE partition                                 (txnoffsets.go)
//
// All offsets of one group share the prefix 0x03 esc(group), whose exclusive
// upper bound is the same bytes with the final 0x01 raised to 0x02; FetchOffsets
// scans it and DeleteGroup deletes it with one DeleteRange. Partitions are
// written as uint32 so non-negative partitions sort numerically.
//
// # Committed offset value (version 1), big endian, 33 bytes + metadata
//
//	+--------+-----------+-------------+---------------+---------------+------------+-------------+
//	| ver u8 | offset i64| epoch i32   | commit ms i64 | expire ms i64 | mdlen u32  | metadata    |
//	| 0x01   |           | -1: unknown | -1: zero time | -1: zero time |            | mdlen bytes |
//	+--------+-----------+-------------+---------------+---------------+------------+-------------+
//	0        1           9             13              21              29           33
//
// # Pending transactional offset value (version 1), big endian
//
//	+--------+----------+--------------+----------+-------------------------------+
//	| ver u8 | epoch i16| position i64 | flags u8 | committed offset value (v1)   |
//	| 0x01   | producer | write order  | bit 0:   | as above, its own version     |
//	|        | epoch    |              | supersed.| byte included                 |
//	+--------+----------+--------------+----------+-------------------------------+
//	0        1          3              11         12
//
// All pending offsets of one group share the prefix 0x08 esc(group); those
// of one producer the prefix 0x08 esc(group) u64 producer id. Producer ids
// are non-negative, so they sort numerically. Other flag bits are reserved
// (a value carrying one is corrupt).
//
// Times are Unix milliseconds, as Kafka stores them; sub-millisecond precision
// is dropped. A value longer than 33+mdlen is corrupt (trailing bytes mean a
// newer writer or damage; either way we must not guess).
//
// # Topic and group values (version 1)
//
// Rare writes, but names and member ids are arbitrary client bytes (JSON
// would mangle invalid UTF-8), so these are hand-written binary too, built
// from the primitives in codec.go: str/bytes = u32 length + bytes, time = i64
// Unix ms (-1: zero time), count = u32.
//
//	topic:  u8 ver=1 | str name | [16]byte id | i32 partitions | i16 replication factor
//	        | count n, n x (count r, r x i32 broker id)      assignment
//	        | count c, c x (str key, str value)               configs, keys sorted
//	        | time created
//
//	group:  u8 ver=1 | str name | str state | str protocol type | str protocol
//	        | i32 generation | str leader | time state time
//	        | count m, m x member
//	member: str member id | str group instance id | str client id | str client host
//	        | i64 rebalance timeout ns | i64 session timeout ns | str protocol type
//	        | count p, p x (str name, bytes metadata) | bytes assignment
//
// ACLs: one key per resource pattern (codes are Kafka's, acl.ResourceType
// and acl.PatternType), so keys sort by type, pattern type, then name;
// entries sorted (acl.SortEntries), no duplicates:
//
//	acls:   u8 ver=1 | count n, n x entry
//	entry:  str principal | str host | u8 operation | u8 permission
//
// A value that is truncated, has trailing bytes, or carries a version byte
// this reader does not know returns ErrCorrupt rather than a guess. To
// evolve a value, write a new version byte and keep decoding the old ones.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"
)

// Kind bytes, versions and fixed keys. Part of the on-disk format: do not change.
const (
	kindFormat     byte = 0x00
	kindTopic      byte = 0x01
	kindProducerID byte = 0x02
	kindOffset     byte = 0x03
	kindGroup      byte = 0x04
	kindCheckpoint byte = 0x05
	kindACL        byte = 0x06
	kindScram      byte = 0x07 // layout and codec in scram.go
	kindPendingTxn byte = 0x08 // layout above, codec in txnoffsets.go
	kindTxnEpoch   byte = 0x09 // layout above, codec in txnoffsets.go
	kindQuota      byte = 0x0C // client quotas: layout and codec in quotas.go

	// formatV1 is the store layout described above, recorded under formatKey.
	formatV1 byte = 1

	topicV1      byte = 1
	producerIDV1 byte = 1
	offsetV1     byte = 1
	groupV1      byte = 1
	checkpointV1 byte = 1
	aclV1        byte = 1
	pendingV1    byte = 1
	txnEpochV1   byte = 1

	pendingSuperseded byte = 0x01 // pending value flag: a newer offset was applied

	escByte  byte = 0x00
	escCont  byte = 0xFF // 0x00 0xFF: a literal 0x00 inside a name
	escEnd   byte = 0x01 // 0x00 0x01: end of name
	escLimit byte = 0x02 // 0x00 0x02: exclusive upper bound of a name's prefix range

	offsetFixedLen  = 1 + 8 + 4 + 8 + 8 + 4 // 33
	pendingFixedLen = 1 + 2 + 8 + 1         // 12, then a committed offset value
)

var (
	formatKey     = []byte{kindFormat, 'f', 'o', 'r', 'm', 'a', 't'}
	producerIDKey = []byte{kindProducerID, 'n', 'e', 'x', 't'}
)

// appendName appends esc(name) to dst.
func appendName(dst []byte, name string) []byte {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c == escByte {
			dst = append(dst, escByte, escCont)
			continue
		}
		dst = append(dst, c)
	}
	return append(dst, escByte, escEnd)
}

// decodeName reads one esc(name) from the front of b and returns the name and
// the rest of b. ok is false when b holds no complete, well-formed name.
func decodeName(b []byte) (name string, rest []byte, ok bool) {
	i := bytes.IndexByte(b, escByte)
	if i < 0 || i+1 >= len(b) {
		return "", nil, false
	}
	if b[i+1] == escEnd { // common case: no escaped zero bytes
		return string(b[:i]), b[i+2:], true
	}
	var out []byte
	for {
		if i < 0 || i+1 >= len(b) {
			return "", nil, false
		}
		out = append(out, b[:i]...)
		switch b[i+1] {
		case escEnd:
			return string(out), b[i+2:], true
		case escCont:
			out = append(out, escByte)
			b = b[i+2:]
			i = bytes.IndexByte(b, escByte)
		default:
			return "", nil, false
		}
	}
}

// prefixEnd returns the exclusive upper bound of the key range that starts
// with prefix, where prefix ends in an encoded name (…0x00 0x01).
// REQUIRES: prefix ends with escByte, escEnd.
func prefixEnd(prefix []byte) []byte {
	end := append([]byte(nil), prefix...)
	end[len(end)-1] = escLimit
	return end
}

func topicKey(dst []byte, name string) []byte {
	return appendName(append(dst, kindTopic), name)
}

func groupKey(dst []byte, name string) []byte {
	return appendName(append(dst, kindGroup), name)
}

func checkpointKey(dst []byte, name string) []byte {
	return appendName(append(dst, kindCheckpoint), name)
}

// offsetGroupPrefix is 0x03 esc(group): the prefix of all offsets of group.
func offsetGroupPrefix(dst []byte, group string) []byte {
	return appendName(append(dst, kindOffset), group)
}

func offsetKey(dst []byte, group string, tp TopicPartition) []byte {
	dst = offsetGroupPrefix(dst, group)
	dst = appendName(dst, tp.Topic)
	return binary.BigEndian.AppendUint32(dst, uint32(tp.Partition))
}

// decodeOffsetKey splits an offset key into its group and partition.
func decodeOffsetKey(key []byte) (group string, tp TopicPartition, err error) {
	if len(key) == 0 || key[0] != kindOffset {
		return "", tp, corruptf(key, "not an offset key")
	}
	group, rest, ok := decodeName(key[1:])
	if !ok {
		return "", tp, corruptf(key, "bad group name in offset key")
	}
	tp, err = decodeOffsetTP(key, len(key)-len(rest), "")
	return group, tp, err
}

// decodeOffsetTP decodes the topic-partition of an offset key whose group
// prefix (0x03 esc(group)) is plen bytes long. When the topic equals prev,
// prev itself is returned, so a scan over one topic's partitions allocates
// its name once.
func decodeOffsetTP(key []byte, plen int, prev string) (TopicPartition, error) {
	b := key[plen:]
	if len(b) == len(prev)+2+4 && string(b[:len(prev)]) == prev && b[len(prev)] == escByte && b[len(prev)+1] == escEnd {
		return TopicPartition{Topic: prev, Partition: int32(binary.BigEndian.Uint32(b[len(prev)+2:]))}, nil
	}
	topic, rest, ok := decodeName(b)
	if !ok || len(rest) != 4 {
		return TopicPartition{}, corruptf(key, "bad topic-partition in offset key")
	}
	return TopicPartition{Topic: topic, Partition: int32(binary.BigEndian.Uint32(rest))}, nil
}

// appendOffset appends the version-1 encoding of o to dst.
func appendOffset(dst []byte, o CommittedOffset) []byte {
	dst = append(dst, offsetV1)
	dst = binary.BigEndian.AppendUint64(dst, uint64(o.Offset))
	dst = binary.BigEndian.AppendUint32(dst, uint32(o.LeaderEpoch))
	dst = binary.BigEndian.AppendUint64(dst, uint64(timeToMillis(o.CommitTime)))
	dst = binary.BigEndian.AppendUint64(dst, uint64(timeToMillis(o.ExpireTime)))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(o.Metadata)))
	return append(dst, o.Metadata...)
}

// decodeOffset decodes a value written by appendOffset. key names the value
// in errors only. Damaged input returns an error wrapping ErrCorrupt.
func decodeOffset(key, v []byte) (CommittedOffset, error) {
	if len(v) < offsetFixedLen {
		return CommittedOffset{}, corruptf(key, "offset value is %d bytes, want at least %d", len(v), offsetFixedLen)
	}
	if v[0] != offsetV1 {
		return CommittedOffset{}, corruptf(key, "unknown offset value version %d", v[0])
	}
	mdlen := binary.BigEndian.Uint32(v[29:33])
	if uint64(mdlen) != uint64(len(v)-offsetFixedLen) {
		return CommittedOffset{}, corruptf(key, "metadata length %d, but %d bytes follow", mdlen, len(v)-offsetFixedLen)
	}
	return CommittedOffset{
		Offset:      int64(binary.BigEndian.Uint64(v[1:9])),
		LeaderEpoch: int32(binary.BigEndian.Uint32(v[9:13])),
		CommitTime:  millisToTime(int64(binary.BigEndian.Uint64(v[13:21]))),
		ExpireTime:  millisToTime(int64(binary.BigEndian.Uint64(v[21:29]))),
		Metadata:    string(v[offsetFixedLen:]),
	}, nil
}

func appendProducerID(dst []byte, next int64) []byte {
	return binary.BigEndian.AppendUint64(append(dst, producerIDV1), uint64(next))
}

func decodeProducerID(key, v []byte) (int64, error) {
	if len(v) != 9 || v[0] != producerIDV1 {
		return 0, corruptf(key, "producer id value: %d bytes, version %d", len(v), firstByte(v))
	}
	next := int64(binary.BigEndian.Uint64(v[1:]))
	if next < 0 {
		return 0, corruptf(key, "negative next producer id %d", next)
	}
	return next, nil
}

func appendCheckpoint(dst, value []byte) []byte {
	return append(append(dst, checkpointV1), value...)
}

func decodeCheckpoint(key, v []byte) ([]byte, error) {
	if len(v) < 1 || v[0] != checkpointV1 {
		return nil, corruptf(key, "checkpoint value version %d", firstByte(v))
	}
	return append([]byte{}, v[1:]...), nil
}

// timeToMillis maps the zero time to -1 (none) and anything else to Unix ms.
func timeToMillis(t time.Time) int64 {
	if t.IsZero() {
		return -1
	}
	return t.UnixMilli()
}

// millisToTime is the inverse of timeToMillis.
func millisToTime(ms int64) time.Time {
	if ms == -1 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

func firstByte(b []byte) int {
	if len(b) == 0 {
		return -1
	}
	return int(b[0])
}

// corruptf returns an error wrapping ErrCorrupt that names key.
func corruptf(key []byte, format string, args ...any) error {
	return fmt.Errorf("%w: key %q: %s", ErrCorrupt, key, fmt.Sprintf(format, args...))
}
