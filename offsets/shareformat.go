package offsets

// Records of share groups (KIP-932) in __consumer_offsets, in the layout
// Kafka 4.2 writes them (the ShareGroup*Key/Value schemas of
// group-coordinator's src/main/resources/common/message), so a log written
// by Kafka replays here and ours replays in Kafka.
//
// Keys are not flexible, as the consumer group keys (consumerformat.go):
// int16 record type, then the key's strings, each an int16 length and
// UTF-8 bytes.
//
//	type  record                              key fields
//	9     ShareGroupPartitionMetadata         group          (Kafka 4.0 only: read and dropped)
//	10    ShareGroupMemberMetadata            group, member
//	11    ShareGroupMetadata                  group
//	12    ShareGroupTargetAssignmentMetadata  group
//	13    ShareGroupTargetAssignmentMember    group, member
//	14    ShareGroupCurrentMemberAssignment   group, member
//	15    ShareGroupStatePartitionMetadata    group
//
// Values: int16 version 0, then a flexible body (the encodings are those
// drawn in consumerformat.go: compact strings and arrays, uuid 16 bytes,
// a trailing tagged-field section, unknown tags skipped on read):
//
//	9   the layout of ConsumerGroupPartitionMetadata (type 4)
//	10  RackId string?, ClientId string, ClientHost string,
//	    SubscribedTopicNames [string]
//	11  Epoch int32, MetadataHash int64   (4.1+: a plain field, not tagged)
//	12  AssignmentEpoch int32
//	13  TopicPartitions [TopicId uuid, Partitions [int32]]
//	14  MemberEpoch int32, PreviousMemberEpoch int32, State int8,
//	    AssignedPartitions [TopicId uuid, Partitions [int32]]
//	15  InitializingTopics [TopicPartitionsInfo],
//	    InitializedTopics [TopicPartitionsInfo],
//	    DeletingTopics [TopicId uuid, TopicName string];
//	    TopicPartitionsInfo = TopicId uuid, TopicName string, Partitions [int32]
//
// A null value is a tombstone.
//
// Part of the on-disk format: do not change.

import (
	"encoding/binary"
	"fmt"
)

// Record types (key versions) of share group records. Part of the on-disk
// format: do not change.
const (
	ShareGroupPartitionMetadataType        int16 = 9
	ShareGroupMemberMetadataType           int16 = 10
	ShareGroupMetadataType                 int16 = 11
	ShareGroupTargetAssignmentMetadataType int16 = 12
	ShareGroupTargetAssignmentMemberType   int16 = 13
	ShareGroupCurrentMemberAssignmentType  int16 = 14
	ShareGroupStatePartitionMetadataType   int16 = 15
)

// IsShareRecordType reports whether a key version is a share group record
// type (9 included: Kafka 4.0 wrote it).
func IsShareRecordType(t int16) bool {
	return t >= ShareGroupPartitionMetadataType && t <= ShareGroupStatePartitionMetadataType
}

// shareKeyHasMember reports whether keys of type t carry a member id.
func shareKeyHasMember(t int16) bool {
	return t == ShareGroupMemberMetadataType || t == ShareGroupTargetAssignmentMemberType ||
		t == ShareGroupCurrentMemberAssignmentType
}

// ShareKey is the key of a share group record; Member is set for types 10,
// 13 and 14 only.
type ShareKey struct {
	Type   int16
	Group  string
	Member string
}

// AppendShareKey appends k to b. Errors (nothing appended): ErrTooLong for
// a string over 32767 bytes, ErrBadRecord for a type that is not a share
// group record type.
func AppendShareKey(b []byte, k ShareKey) ([]byte, error) {
	if !IsShareRecordType(k.Type) {
		return b, fmt.Errorf("%w: key type %d is not a share group record", ErrBadRecord, k.Type)
	}
	if err := checkLen("share group key field", k.Group, k.Member); err != nil {
		return b, err
	}
	b = binary.BigEndian.AppendUint16(b, uint16(k.Type))
	b = appendKafkaString(b, k.Group)
	if shareKeyHasMember(k.Type) {
		b = appendKafkaString(b, k.Member)
	}
	return b, nil
}

// DecodeShareKey decodes a share group record key. Errors wrap
// ErrBadRecord.
func DecodeShareKey(b []byte) (ShareKey, error) {
	r := kreader{b: b}
	var k ShareKey
	k.Type = r.int16()
	if r.err != nil {
		return k, r.err
	}
	if !IsShareRecordType(k.Type) {
		return k, fmt.Errorf("%w: key type %d is not a share group record", ErrBadRecord, k.Type)
	}
	k.Group = r.keyString()
	if shareKeyHasMember(k.Type) {
		k.Member = r.keyString()
	}
	r.done()
	return k, r.err
}

// ShareValue is the decoded value of a share group record: one of the
// Share*Value types below.
type ShareValue interface {
	// RecordType is the record type (key version) the value belongs to.
	RecordType() int16
	// AppendTo appends the value (version 0) to b; ErrTooLong, nothing
	// appended, for a string over 32767 bytes.
	AppendTo(b []byte) ([]byte, error)
}

// DecodeShareValue decodes the value of a share record of type t (not a
// tombstone: empty input is an error). Errors wrap ErrBadRecord. The value
// shares no bytes with b.
func DecodeShareValue(t int16, b []byte) (ShareValue, error) {
	r := kreader{b: b}
	if v := r.int16(); r.err == nil && v != consumerValueVersion {
		return nil, fmt.Errorf("%w: share group record type %d: value version %d", ErrBadRecord, t, v)
	}
	var v ShareValue
	switch t {
	case ShareGroupPartitionMetadataType:
		v = SharePartitionMetadataValue{readPartitionMetadata(&r)}
	case ShareGroupMemberMetadataType:
		var m ShareMemberMetadataValue
		m.RackID = r.compactNullableString()
		m.ClientID = r.compactString()
		m.ClientHost = r.compactString()
		m.SubscribedTopicNames = r.compactStrings()
		r.skipTags()
		v = m
	case ShareGroupMetadataType:
		m := ShareGroupMetadataValue{Epoch: r.int32(), MetadataHash: r.int64()}
		r.skipTags()
		v = m
	case ShareGroupTargetAssignmentMetadataType:
		m := ShareTargetAssignmentMetadataValue{AssignmentEpoch: r.int32()}
		r.skipTags()
		v = m
	case ShareGroupTargetAssignmentMemberType:
		m := ShareTargetAssignmentMemberValue{TopicPartitions: r.topicPartitions(false)}
		r.skipTags()
		v = m
	case ShareGroupCurrentMemberAssignmentType:
		var m ShareCurrentMemberAssignmentValue
		m.MemberEpoch = r.int32()
		m.PreviousMemberEpoch = r.int32()
		if s := r.take(1); s != nil {
			m.State = int8(s[0])
		}
		m.AssignedPartitions = r.topicPartitions(false)
		r.skipTags()
		v = m
	case ShareGroupStatePartitionMetadataType:
		var m ShareStatePartitionMetadataValue
		m.InitializingTopics = r.sharePartitionsInfo()
		m.InitializedTopics = r.sharePartitionsInfo()
		n := r.arrayLen(16+1+1, false)
		for i := 0; i < n && r.err == nil; i++ {
			ti := ShareTopicInfo{TopicID: r.uuid(), TopicName: r.compactString()}
			r.skipTags()
			m.DeletingTopics = append(m.DeletingTopics, ti)
		}
		r.skipTags()
		v = m
	default:
		return nil, fmt.Errorf("%w: value of key type %d is not a share group record", ErrBadRecord, t)
	}
	r.done()
	if r.err != nil {
		return nil, fmt.Errorf("share group record type %d: %w", t, r.err)
	}
	return v, nil
}

// SharePartitionMetadataValue (type 9): the subscribed topics' metadata as
// Kafka 4.0 stored it; 4.1 replaced it by ShareGroupMetadata's hash. Read
// so that such logs replay; the coordinator ignores it.
type SharePartitionMetadataValue struct {
	ConsumerGroupPartitionMetadataValue
}

// ShareMemberMetadataValue (type 10): a member's client data and
// subscription.
type ShareMemberMetadataValue struct {
	RackID               *string
	ClientID             string
	ClientHost           string
	SubscribedTopicNames []string
}

// ShareGroupMetadataValue (type 11): the group epoch and the hash of the
// subscribed topics' metadata.
type ShareGroupMetadataValue struct {
	Epoch        int32
	MetadataHash int64
}

// ShareTargetAssignmentMetadataValue (type 12): the target assignment's
// epoch.
type ShareTargetAssignmentMetadataValue struct{ AssignmentEpoch int32 }

// ShareTargetAssignmentMemberValue (type 13): one member's target
// assignment.
type ShareTargetAssignmentMemberValue struct {
	TopicPartitions []ConsumerTopicPartitions
}

// ShareCurrentMemberAssignmentValue (type 14): a member's epochs, state and
// assignment.
type ShareCurrentMemberAssignmentValue struct {
	MemberEpoch         int32
	PreviousMemberEpoch int32
	State               int8
	AssignedPartitions  []ConsumerTopicPartitions
}

// ShareStatePartitionMetadataValue (type 15): which topic partitions have
// share-partition state (initializing, initialized) and which topics'
// state is being deleted. Written by the share-partition side.
type ShareStatePartitionMetadataValue struct {
	InitializingTopics []ShareTopicPartitionsInfo
	InitializedTopics  []ShareTopicPartitionsInfo
	DeletingTopics     []ShareTopicInfo
}

// ShareTopicPartitionsInfo is a topic and some of its partitions.
type ShareTopicPartitionsInfo struct {
	TopicID    [16]byte
	TopicName  string
	Partitions []int32
}

// ShareTopicInfo is a topic's id and name.
type ShareTopicInfo struct {
	TopicID   [16]byte
	TopicName string
}

func (SharePartitionMetadataValue) RecordType() int16 { return ShareGroupPartitionMetadataType }
func (ShareMemberMetadataValue) RecordType() int16    { return ShareGroupMemberMetadataType }
func (ShareGroupMetadataValue) RecordType() int16     { return ShareGroupMetadataType }
func (ShareTargetAssignmentMetadataValue) RecordType() int16 {
	return ShareGroupTargetAssignmentMetadataType
}
func (ShareTargetAssignmentMemberValue) RecordType() int16 {
	return ShareGroupTargetAssignmentMemberType
}
func (ShareCurrentMemberAssignmentValue) RecordType() int16 {
	return ShareGroupCurrentMemberAssignmentType
}
func (ShareStatePartitionMetadataValue) RecordType() int16 {
	return ShareGroupStatePartitionMetadataType
}

// AppendTo appends v. See ShareValue.
func (v SharePartitionMetadataValue) AppendTo(b []byte) ([]byte, error) {
	return v.ConsumerGroupPartitionMetadataValue.AppendTo(b)
}

// AppendTo appends v. See ShareValue.
func (v ShareMemberMetadataValue) AppendTo(b []byte) ([]byte, error) {
	if err := checkLen("member field", deref(v.RackID), v.ClientID, v.ClientHost); err != nil {
		return b, err
	}
	if err := checkLen("subscribed topic", v.SubscribedTopicNames...); err != nil {
		return b, err
	}
	b = binary.BigEndian.AppendUint16(b, consumerValueVersion)
	b = appendCompactNullableString(b, v.RackID)
	b = appendCompactString(b, v.ClientID)
	b = appendCompactString(b, v.ClientHost)
	b = appendCompactStrings(b, v.SubscribedTopicNames)
	return append(b, 0), nil
}

// AppendTo appends v. See ShareValue.
func (v ShareGroupMetadataValue) AppendTo(b []byte) ([]byte, error) {
	b = binary.BigEndian.AppendUint16(b, consumerValueVersion)
	b = binary.BigEndian.AppendUint32(b, uint32(v.Epoch))
	b = binary.BigEndian.AppendUint64(b, uint64(v.MetadataHash))
	return append(b, 0), nil
}

// AppendTo appends v. See ShareValue.
func (v ShareTargetAssignmentMetadataValue) AppendTo(b []byte) ([]byte, error) {
	b = binary.BigEndian.AppendUint16(b, consumerValueVersion)
	b = binary.BigEndian.AppendUint32(b, uint32(v.AssignmentEpoch))
	return append(b, 0), nil
}

// AppendTo appends v. See ShareValue.
func (v ShareTargetAssignmentMemberValue) AppendTo(b []byte) ([]byte, error) {
	b = binary.BigEndian.AppendUint16(b, consumerValueVersion)
	b = appendTopicPartitions(b, v.TopicPartitions, false)
	return append(b, 0), nil
}

// AppendTo appends v. See ShareValue.
func (v ShareCurrentMemberAssignmentValue) AppendTo(b []byte) ([]byte, error) {
	b = binary.BigEndian.AppendUint16(b, consumerValueVersion)
	b = binary.BigEndian.AppendUint32(b, uint32(v.MemberEpoch))
	b = binary.BigEndian.AppendUint32(b, uint32(v.PreviousMemberEpoch))
	b = append(b, byte(v.State))
	b = appendTopicPartitions(b, v.AssignedPartitions, false)
	return append(b, 0), nil
}

// AppendTo appends v. See ShareValue.
func (v ShareStatePartitionMetadataValue) AppendTo(b []byte) ([]byte, error) {
	for _, ts := range [][]ShareTopicPartitionsInfo{v.InitializingTopics, v.InitializedTopics} {
		for _, t := range ts {
			if err := checkLen("topic name", t.TopicName); err != nil {
				return b, err
			}
		}
	}
	for _, t := range v.DeletingTopics {
		if err := checkLen("topic name", t.TopicName); err != nil {
			return b, err
		}
	}
	b = binary.BigEndian.AppendUint16(b, consumerValueVersion)
	for _, ts := range [][]ShareTopicPartitionsInfo{v.InitializingTopics, v.InitializedTopics} {
		b = appendCompactLen(b, len(ts))
		for _, t := range ts {
			b = append(b, t.TopicID[:]...)
			b = appendCompactString(b, t.TopicName)
			b = appendCompactInt32s(b, t.Partitions)
			b = append(b, 0)
		}
	}
	b = appendCompactLen(b, len(v.DeletingTopics))
	for _, t := range v.DeletingTopics {
		b = append(b, t.TopicID[:]...)
		b = appendCompactString(b, t.TopicName)
		b = append(b, 0)
	}
	return append(b, 0), nil
}

// sharePartitionsInfo reads an array of TopicPartitionsInfo.
func (r *kreader) sharePartitionsInfo() []ShareTopicPartitionsInfo {
	n := r.arrayLen(16+1+1+1, false)
	if n <= 0 || r.err != nil {
		return nil
	}
	out := make([]ShareTopicPartitionsInfo, n)
	for i := 0; i < n && r.err == nil; i++ {
		out[i].TopicID = r.uuid()
		out[i].TopicName = r.compactString()
		out[i].Partitions = r.compactInt32s(false)
		r.skipTags()
	}
	return out
}
