package offsets

// Records of the internal __consumer_offsets topic, in Kafka's own layout
// (the OffsetCommitKey and OffsetCommitValue schemas of Kafka's
// group-coordinator json files), so Kafka's tools could read our logs.
// Integers big-endian; a string is an int16 length then UTF-8 bytes, so
// at most 32767 bytes (longer ones are refused: ErrTooLong).
//
// Key, version 1 (an offset commit; versions 0 and 1 share the layout):
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
// Group metadata (a group's state after a rebalance): key version 2,
// {int16 2, group str}; value Kafka's GroupMetadataValue version 3 (protocol
// type, generation, protocol, leader, state timestamp, members with their
// subscription and assignment), encoded with kmsg's codec of that schema;
// a null value deletes the group.
//
// Part of the on-disk format: do not change the written versions.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/metastore"
)

const (
	offsetCommitKeyVersion   = 1 // part of the on-disk format
	groupMetadataKeyVersion  = 2 // part of the on-disk format
	offsetCommitValueVersion = 3 // part of the on-disk format
)

// ErrBadRecord marks an undecodable __consumer_offsets record: every
// decoding error wraps it, and so does a load that met one.
var ErrBadRecord = errors.New("offsets: bad __consumer_offsets record")

// ErrTooLong is what Persist and PersistGroup return, writing nothing, for
// a string (group id, member id, metadata, ...) longer than the int16
// length of Kafka's record schemas can describe: encoded anyway, its
// length would wrap, and the replay would read the rest of it as other
// fields, or other groups.
var ErrTooLong = errors.New("offsets: string too long for a __consumer_offsets record")

// checkLen returns an error wrapping ErrTooLong when some s is longer than
// a record string can be.
func checkLen(what string, ss ...string) error {
	for _, s := range ss {
		if len(s) > math.MaxInt16 {
			return fmt.Errorf("%w: %s of %d bytes (at most %d)", ErrTooLong, what, len(s), math.MaxInt16)
		}
	}
	return nil
}

// checkOffsets checks that the records of one commit of group name are
// encodable.
func checkOffsets(name string, offsets map[metastore.TopicPartition]metastore.CommittedOffset, deleted []metastore.TopicPartition) error {
	if err := checkLen("group id", name); err != nil {
		return err
	}
	for tp, o := range offsets {
		if err := checkLen("topic", tp.Topic); err != nil {
			return err
		}
		if err := checkLen("offset metadata", o.Metadata); err != nil {
			return err
		}
	}
	for _, tp := range deleted {
		if err := checkLen("topic", tp.Topic); err != nil {
			return err
		}
	}
	return nil
}

// checkGroup checks that sg's group metadata record is encodable.
func checkGroup(sg metastore.Group) error {
	if err := checkLen("group field", sg.Name, sg.ProtocolType, sg.Protocol, sg.Leader); err != nil {
		return err
	}
	for _, m := range sg.Members {
		if err := checkLen("member field", m.MemberID, m.GroupInstanceID, m.ClientID, m.ClientHost); err != nil {
			return err
		}
	}
	return nil
}

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

// appendOffsetKey appends the version 1 offset commit key. REQUIRES: its
// strings pass checkLen (as for every append function here).
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

const groupMetadataValueVersion = 3 // part of the on-disk format

// appendGroupKey appends the version 2 group metadata key.
func appendGroupKey(b []byte, group string) []byte {
	b = binary.BigEndian.AppendUint16(b, groupMetadataKeyVersion)
	return appendKafkaString(b, group)
}

// appendGroupValue appends sg as a version 3 GroupMetadataValue. Each
// member's subscription is its metadata for the group's protocol.
func appendGroupValue(b []byte, sg metastore.Group) []byte {
	v := kmsg.NewGroupMetadataValue()
	v.Version = groupMetadataValueVersion
	v.ProtocolType, v.Generation = sg.ProtocolType, sg.Generation
	if sg.Protocol != "" {
		v.Protocol = &sg.Protocol
	}
	if sg.Leader != "" {
		v.Leader = &sg.Leader
	}
	v.CurrentStateTimestamp = sg.StateTime.UnixMilli()
	for _, m := range sg.Members {
		km := kmsg.NewGroupMetadataValueMember()
		km.MemberID, km.ClientID, km.ClientHost = m.MemberID, m.ClientID, m.ClientHost
		if m.GroupInstanceID != "" {
			id := m.GroupInstanceID
			km.InstanceID = &id
		}
		km.RebalanceTimeoutMillis = int32(m.RebalanceTimeout.Milliseconds())
		km.SessionTimeoutMillis = int32(m.SessionTimeout.Milliseconds())
		for _, p := range m.Protocols {
			if p.Name == sg.Protocol {
				km.Subscription = p.Metadata
			}
		}
		km.Assignment = m.Assignment
		v.Members = append(v.Members, km)
	}
	return v.AppendTo(b)
}

// decodeGroupValue decodes a GroupMetadataValue (versions 0-3) of group
// name. A group with members comes back Stable with each member supporting
// the group's protocol only, as Kafka stores it. The group shares no bytes
// with b (kmsg's decoder returns sub-slices of its input, and a replay
// reuses its buffer).
func decodeGroupValue(name string, b []byte) (metastore.Group, error) {
	v := kmsg.NewGroupMetadataValue()
	if len(b) >= 2 {
		v.Version = int16(binary.BigEndian.Uint16(b))
	}
	if v.Version < 0 || v.Version > groupMetadataValueVersion {
		return metastore.Group{}, fmt.Errorf("%w: group value version %d", ErrBadRecord, v.Version)
	}
	if err := v.ReadFrom(b); err != nil {
		return metastore.Group{}, fmt.Errorf("%w: group value: %v", ErrBadRecord, err)
	}
	sg := metastore.Group{
		Name: name, State: "Empty", ProtocolType: v.ProtocolType, Generation: v.Generation,
		StateTime: time.UnixMilli(v.CurrentStateTimestamp),
	}
	if v.Protocol != nil {
		sg.Protocol = *v.Protocol
	}
	if v.Leader != nil {
		sg.Leader = *v.Leader
	}
	for _, km := range v.Members {
		m := metastore.GroupMember{
			MemberID: km.MemberID, ClientID: km.ClientID, ClientHost: km.ClientHost,
			RebalanceTimeout: time.Duration(km.RebalanceTimeoutMillis) * time.Millisecond,
			SessionTimeout:   time.Duration(km.SessionTimeoutMillis) * time.Millisecond,
			ProtocolType:     v.ProtocolType,
			Protocols:        []metastore.GroupProtocol{{Name: sg.Protocol, Metadata: bytes.Clone(km.Subscription)}},
			Assignment:       bytes.Clone(km.Assignment),
		}
		if km.InstanceID != nil {
			m.GroupInstanceID = *km.InstanceID
		}
		sg.Members = append(sg.Members, m)
	}
	if len(sg.Members) > 0 {
		sg.State = "Stable"
	}
	return sg, nil
}

// kreader reads big-endian fields with a sticky error.
type kreader struct {
	b   []byte
	err error
}

func (r *kreader) take(n int) []byte {
	if r.err != nil || n < 0 || len(r.b) < n {
		if r.err == nil {
			r.err = fmt.Errorf("%w: %d bytes needed, %d left", ErrBadRecord, n, len(r.b))
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

// decodeOffsetKey decodes a key; isOffset is false for a group metadata
// key, of which only k.Group is set.
func decodeOffsetKey(b []byte) (k offsetKey, isOffset bool, err error) {
	r := kreader{b: b}
	v := r.int16()
	if r.err != nil {
		return k, false, r.err
	}
	switch v {
	case 0, 1:
	case groupMetadataKeyVersion:
		k.Group = r.str()
		return k, false, r.err
	default:
		return k, false, fmt.Errorf("%w: key version %d", ErrBadRecord, v)
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
		return o, fmt.Errorf("%w: value version %d", ErrBadRecord, v)
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
