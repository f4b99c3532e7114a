package offsets

// Records of the next-generation consumer groups (KIP-848) in
// __consumer_offsets, in the layout Kafka 4.x writes them (the
// ConsumerGroup*Key/Value schemas of group-coordinator's
// src/main/resources/common/message), so a log written by Kafka replays
// here and ours replays in Kafka.
//
// Keys are not flexible: int16 record type (the key "version"), then the
// key's strings, each an int16 length then UTF-8 bytes.
//
//	type  record                               key fields
//	3     ConsumerGroupMetadata                group
//	4     ConsumerGroupPartitionMetadata       group            (read; since 4.1 only tombstoned)
//	5     ConsumerGroupMemberMetadata          group, member
//	6     ConsumerGroupTargetAssignmentMetadata group
//	7     ConsumerGroupTargetAssignmentMember  group, member
//	8     ConsumerGroupCurrentMemberAssignment group, member
//	16    ConsumerGroupRegularExpression       group, regex
//
// Values: int16 version 0, then a flexible (KIP-482) body:
//
//	+---------+---------------------------+--------------+
//	| int16 0 | fields, in schema order   | tagged fields |
//	+---------+---------------------------+--------------+
//
//	int8/int32/int64  big-endian          uuid    16 bytes
//	string            uvarint(len+1), bytes; nullable: uvarint 0 is null;
//	                  at most 32767 bytes, as Kafka's generated code checks
//	bytes             uvarint(len+1), bytes
//	array             uvarint(count+1), elements; nullable: 0 is null
//	struct            its fields, then its own tagged fields
//	tagged fields     uvarint count, then per field uvarint tag,
//	                  uvarint size, size bytes; a field equal to its
//	                  default is not written; a nullable struct is
//	                  written as uvarint 1 then the struct (size counts it)
//
// Value bodies (tagged fields in brackets, with their tag):
//
//	3   Epoch int32 [0: MetadataHash int64 = 0 (4.1, KIP-1101);
//	    1: CreationTimeMs int64 = -1 (KIP-1282)]
//	4   Topics [TopicId uuid, TopicName string, NumPartitions int32,
//	    PartitionMetadata [Partition int32, Racks [string]]]
//	5   InstanceId string?, RackId string?, ClientId string, ClientHost
//	    string, SubscribedTopicNames [string], SubscribedTopicRegex string?,
//	    RebalanceTimeoutMs int32, ServerAssignor string?
//	    [0: ClassicMemberMetadata? {SessionTimeoutMs int32,
//	    SupportedProtocols [Name string, Metadata bytes]}]
//	6   AssignmentEpoch int32
//	7   TopicPartitions [TopicId uuid, Partitions [int32]]
//	8   MemberEpoch int32, PreviousMemberEpoch int32, State int8,
//	    AssignedPartitions [TopicPartitions],
//	    PartitionsPendingRevocation [TopicPartitions];
//	    TopicPartitions = TopicId uuid, Partitions [int32]
//	    [0: AssignmentEpochs [int32]? (KIP-1251)]
//	16  Topics [string], Version int64, Timestamp int64
//
// A null value is a tombstone. Unknown tagged fields are skipped on read
// and not written back. Decoded, an empty non-nullable array or bytes is
// nil; only a nullable array (AssignmentEpochs) tells empty from null.
//
// Part of the on-disk format: do not change.

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Record types (key versions) of consumer group records. Part of the
// on-disk format: do not change.
const (
	ConsumerGroupMetadataType                 int16 = 3
	ConsumerGroupPartitionMetadataType        int16 = 4
	ConsumerGroupMemberMetadataType           int16 = 5
	ConsumerGroupTargetAssignmentMetadataType int16 = 6
	ConsumerGroupTargetAssignmentMemberType   int16 = 7
	ConsumerGroupCurrentMemberAssignmentType  int16 = 8
	ConsumerGroupRegularExpressionType        int16 = 16
)

// consumerValueVersion is the only value version of every consumer group
// record (validVersions "0"). Part of the on-disk format.
const consumerValueVersion = 0

// maxRecordString is the longest string Kafka's generated code writes or
// reads.
const maxRecordString = math.MaxInt16

// IsConsumerRecordType reports whether a key version is one of the
// consumer group record types.
func IsConsumerRecordType(t int16) bool {
	return (t >= ConsumerGroupMetadataType && t <= ConsumerGroupCurrentMemberAssignmentType) ||
		t == ConsumerGroupRegularExpressionType
}

// ConsumerKey is the key of a consumer group record. Member is set for
// types 5, 7 and 8 and Regex for type 16; they are empty otherwise.
type ConsumerKey struct {
	Type   int16
	Group  string
	Member string
	Regex  string
}

// AppendConsumerKey appends k to b. It returns an error wrapping
// ErrTooLong for a string over 32767 bytes and one wrapping ErrBadRecord
// for a type that is not a consumer group record type, appending nothing.
func AppendConsumerKey(b []byte, k ConsumerKey) ([]byte, error) {
	if !IsConsumerRecordType(k.Type) {
		return b, fmt.Errorf("%w: key type %d is not a consumer group record", ErrBadRecord, k.Type)
	}
	if err := checkLen("consumer group key field", k.Group, k.Member, k.Regex); err != nil {
		return b, err
	}
	b = binary.BigEndian.AppendUint16(b, uint16(k.Type))
	b = appendKafkaString(b, k.Group)
	switch k.Type {
	case ConsumerGroupMemberMetadataType, ConsumerGroupTargetAssignmentMemberType, ConsumerGroupCurrentMemberAssignmentType:
		b = appendKafkaString(b, k.Member)
	case ConsumerGroupRegularExpressionType:
		b = appendKafkaString(b, k.Regex)
	}
	return b, nil
}

// DecodeConsumerKey decodes a consumer group record key. Errors wrap
// ErrBadRecord: truncated input, trailing bytes, a negative string length,
// or a type that is not a consumer group record type.
func DecodeConsumerKey(b []byte) (ConsumerKey, error) {
	r := kreader{b: b}
	var k ConsumerKey
	k.Type = r.int16()
	if r.err != nil {
		return k, r.err
	}
	if !IsConsumerRecordType(k.Type) {
		return k, fmt.Errorf("%w: key type %d is not a consumer group record", ErrBadRecord, k.Type)
	}
	k.Group = r.keyString()
	switch k.Type {
	case ConsumerGroupMemberMetadataType, ConsumerGroupTargetAssignmentMemberType, ConsumerGroupCurrentMemberAssignmentType:
		k.Member = r.keyString()
	case ConsumerGroupRegularExpressionType:
		k.Regex = r.keyString()
	}
	r.done()
	return k, r.err
}

// ConsumerValue is the decoded value of a consumer group record: one of
// the *Consumer*Value types below.
type ConsumerValue interface {
	// RecordType is the record type (key version) the value belongs to.
	RecordType() int16
	// AppendTo appends the value (version 0) to b. It returns an error
	// wrapping ErrTooLong, having appended nothing, when a string is over
	// 32767 bytes.
	AppendTo(b []byte) ([]byte, error)
}

// DecodeConsumerValue decodes the value of a record of type t. A tombstone
// (nil value) is the caller's to handle: empty input is an error. Errors
// wrap ErrBadRecord. The value shares no bytes with b.
func DecodeConsumerValue(t int16, b []byte) (ConsumerValue, error) {
	r := kreader{b: b}
	if v := r.int16(); r.err == nil && v != consumerValueVersion {
		return nil, fmt.Errorf("%w: consumer group record type %d: value version %d", ErrBadRecord, t, v)
	}
	var v ConsumerValue
	switch t {
	case ConsumerGroupMetadataType:
		v = readGroupMetadata(&r)
	case ConsumerGroupPartitionMetadataType:
		v = readPartitionMetadata(&r)
	case ConsumerGroupMemberMetadataType:
		v = readMemberMetadata(&r)
	case ConsumerGroupTargetAssignmentMetadataType:
		v = readTargetAssignmentMetadata(&r)
	case ConsumerGroupTargetAssignmentMemberType:
		v = readTargetAssignmentMember(&r)
	case ConsumerGroupCurrentMemberAssignmentType:
		v = readCurrentMemberAssignment(&r)
	case ConsumerGroupRegularExpressionType:
		v = readRegularExpression(&r)
	default:
		return nil, fmt.Errorf("%w: value of key type %d is not a consumer group record", ErrBadRecord, t)
	}
	r.done()
	if r.err != nil {
		return nil, fmt.Errorf("consumer group record type %d: %w", t, r.err)
	}
	return v, nil
}

// ConsumerGroupMetadataValue (type 3): the group epoch.
type ConsumerGroupMetadataValue struct {
	Epoch int32
	// MetadataHash is the hash of the subscribed topics' metadata (Kafka
	// 4.1, KIP-1101); 0 when unknown.
	MetadataHash int64
	// CreationTimeMs is when the group was created (KIP-1282); -1 when
	// unknown. NewConsumerGroupMetadataValue sets it.
	CreationTimeMs int64
}

// NewConsumerGroupMetadataValue returns a value with the schema's defaults.
func NewConsumerGroupMetadataValue() ConsumerGroupMetadataValue {
	return ConsumerGroupMetadataValue{CreationTimeMs: -1}
}

// ConsumerGroupPartitionMetadataValue (type 4): the subscribed topics'
// metadata as Kafka before 4.1 stored it. Kafka 4.1+ only writes tombstones
// of this type (its metadata hash replaced it); it is decoded so that older
// logs replay, and encoded for tests.
type ConsumerGroupPartitionMetadataValue struct {
	Topics []ConsumerTopicMetadata
}

// ConsumerTopicMetadata is one topic of a ConsumerGroupPartitionMetadataValue.
type ConsumerTopicMetadata struct {
	TopicID       [16]byte
	TopicName     string
	NumPartitions int32
	// PartitionMetadata is deprecated in Kafka (unused after 4.0): the
	// racks of each partition, empty when no rack is known.
	PartitionMetadata []ConsumerPartitionRacks
}

// ConsumerPartitionRacks is the racks of one partition's replicas.
type ConsumerPartitionRacks struct {
	Partition int32
	Racks     []string
}

// ConsumerGroupMemberMetadataValue (type 5): a member's subscription and
// client data. Nil pointers are Kafka's nulls.
type ConsumerGroupMemberMetadataValue struct {
	InstanceID           *string
	RackID               *string
	ClientID             string
	ClientHost           string
	SubscribedTopicNames []string
	SubscribedTopicRegex *string
	RebalanceTimeoutMs   int32 // schema default -1
	ServerAssignor       *string
	// ClassicMemberMetadata is set for a member that speaks the classic
	// protocol in a consumer group (online migration), nil otherwise.
	ClassicMemberMetadata *ClassicMemberMetadata
}

// ClassicMemberMetadata is what a classic member of a consumer group sent
// in JoinGroup.
type ClassicMemberMetadata struct {
	SessionTimeoutMs   int32
	SupportedProtocols []ClassicProtocol
}

// ClassicProtocol is one protocol a classic member supports.
type ClassicProtocol struct {
	Name     string
	Metadata []byte
}

// ConsumerGroupTargetAssignmentMetadataValue (type 6): the epoch of the
// group's target assignment.
type ConsumerGroupTargetAssignmentMetadataValue struct {
	AssignmentEpoch int32
}

// ConsumerGroupTargetAssignmentMemberValue (type 7): one member's target
// assignment.
type ConsumerGroupTargetAssignmentMemberValue struct {
	TopicPartitions []ConsumerTopicPartitions
}

// ConsumerGroupCurrentMemberAssignmentValue (type 8): a member's epochs,
// state and current assignment.
type ConsumerGroupCurrentMemberAssignmentValue struct {
	MemberEpoch         int32
	PreviousMemberEpoch int32
	// State is Kafka's MemberState: 0 STABLE, 1 UNREVOKED_PARTITIONS,
	// 2 UNRELEASED_PARTITIONS, 127 UNKNOWN.
	State                       int8
	AssignedPartitions          []ConsumerTopicPartitions
	PartitionsPendingRevocation []ConsumerTopicPartitions
}

// ConsumerTopicPartitions is one topic's partitions in an assignment.
type ConsumerTopicPartitions struct {
	TopicID    [16]byte
	Partitions []int32
	// AssignmentEpochs[i] is the epoch at which Partitions[i] was
	// assigned (KIP-1251; only in type 8 records); nil when absent.
	AssignmentEpochs []int32
}

// ConsumerGroupRegularExpressionValue (type 16): the topics a regex
// subscription resolved to, and when.
type ConsumerGroupRegularExpressionValue struct {
	Topics    []string
	Version   int64 // the metadata version it was resolved at
	Timestamp int64 // ms
}

func (ConsumerGroupMetadataValue) RecordType() int16 { return ConsumerGroupMetadataType }
func (ConsumerGroupPartitionMetadataValue) RecordType() int16 {
	return ConsumerGroupPartitionMetadataType
}
func (ConsumerGroupMemberMetadataValue) RecordType() int16 { return ConsumerGroupMemberMetadataType }
func (ConsumerGroupTargetAssignmentMetadataValue) RecordType() int16 {
	return ConsumerGroupTargetAssignmentMetadataType
}
func (ConsumerGroupTargetAssignmentMemberValue) RecordType() int16 {
	return ConsumerGroupTargetAssignmentMemberType
}
func (ConsumerGroupCurrentMemberAssignmentValue) RecordType() int16 {
	return ConsumerGroupCurrentMemberAssignmentType
}
func (ConsumerGroupRegularExpressionValue) RecordType() int16 {
	return ConsumerGroupRegularExpressionType
}

// ---- encoders ----

// AppendTo appends v. See ConsumerValue.
func (v ConsumerGroupMetadataValue) AppendTo(b []byte) ([]byte, error) {
	b = binary.BigEndian.AppendUint16(b, consumerValueVersion)
	b = binary.BigEndian.AppendUint32(b, uint32(v.Epoch))
	n := 0
	if v.MetadataHash != 0 {
		n++
	}
	if v.CreationTimeMs != -1 {
		n++
	}
	b = binary.AppendUvarint(b, uint64(n))
	if v.MetadataHash != 0 {
		b = append(b, 0, 8)
		b = binary.BigEndian.AppendUint64(b, uint64(v.MetadataHash))
	}
	if v.CreationTimeMs != -1 {
		b = append(b, 1, 8)
		b = binary.BigEndian.AppendUint64(b, uint64(v.CreationTimeMs))
	}
	return b, nil
}

// AppendTo appends v. See ConsumerValue.
func (v ConsumerGroupPartitionMetadataValue) AppendTo(b []byte) ([]byte, error) {
	for _, t := range v.Topics {
		if err := checkLen("topic name", t.TopicName); err != nil {
			return b, err
		}
		for _, p := range t.PartitionMetadata {
			if err := checkLen("rack", p.Racks...); err != nil {
				return b, err
			}
		}
	}
	b = binary.BigEndian.AppendUint16(b, consumerValueVersion)
	b = appendCompactLen(b, len(v.Topics))
	for _, t := range v.Topics {
		b = append(b, t.TopicID[:]...)
		b = appendCompactString(b, t.TopicName)
		b = binary.BigEndian.AppendUint32(b, uint32(t.NumPartitions))
		b = appendCompactLen(b, len(t.PartitionMetadata))
		for _, p := range t.PartitionMetadata {
			b = binary.BigEndian.AppendUint32(b, uint32(p.Partition))
			b = appendCompactStrings(b, p.Racks)
			b = append(b, 0) // no tagged fields
		}
		b = append(b, 0)
	}
	return append(b, 0), nil
}

// AppendTo appends v. See ConsumerValue.
func (v ConsumerGroupMemberMetadataValue) AppendTo(b []byte) ([]byte, error) {
	if err := checkLen("member field", deref(v.InstanceID), deref(v.RackID), v.ClientID, v.ClientHost,
		deref(v.SubscribedTopicRegex), deref(v.ServerAssignor)); err != nil {
		return b, err
	}
	if err := checkLen("subscribed topic", v.SubscribedTopicNames...); err != nil {
		return b, err
	}
	if c := v.ClassicMemberMetadata; c != nil {
		for _, p := range c.SupportedProtocols {
			if err := checkLen("protocol name", p.Name); err != nil {
				return b, err
			}
		}
	}
	b = binary.BigEndian.AppendUint16(b, consumerValueVersion)
	b = appendCompactNullableString(b, v.InstanceID)
	b = appendCompactNullableString(b, v.RackID)
	b = appendCompactString(b, v.ClientID)
	b = appendCompactString(b, v.ClientHost)
	b = appendCompactStrings(b, v.SubscribedTopicNames)
	b = appendCompactNullableString(b, v.SubscribedTopicRegex)
	b = binary.BigEndian.AppendUint32(b, uint32(v.RebalanceTimeoutMs))
	b = appendCompactNullableString(b, v.ServerAssignor)
	c := v.ClassicMemberMetadata
	if c == nil {
		return append(b, 0), nil
	}
	var s []byte
	s = binary.BigEndian.AppendUint32(s, uint32(c.SessionTimeoutMs))
	s = appendCompactLen(s, len(c.SupportedProtocols))
	for _, p := range c.SupportedProtocols {
		s = appendCompactString(s, p.Name)
		s = appendCompactBytes(s, p.Metadata)
		s = append(s, 0)
	}
	s = append(s, 0)
	b = append(b, 1, 0) // one tagged field, tag 0
	b = binary.AppendUvarint(b, uint64(len(s)+1))
	b = append(b, 1) // not null
	return append(b, s...), nil
}

// AppendTo appends v. See ConsumerValue.
func (v ConsumerGroupTargetAssignmentMetadataValue) AppendTo(b []byte) ([]byte, error) {
	b = binary.BigEndian.AppendUint16(b, consumerValueVersion)
	b = binary.BigEndian.AppendUint32(b, uint32(v.AssignmentEpoch))
	return append(b, 0), nil
}

// AppendTo appends v. See ConsumerValue. AssignmentEpochs are not part of
// this record's schema and are not written.
func (v ConsumerGroupTargetAssignmentMemberValue) AppendTo(b []byte) ([]byte, error) {
	b = binary.BigEndian.AppendUint16(b, consumerValueVersion)
	b = appendTopicPartitions(b, v.TopicPartitions, false)
	return append(b, 0), nil
}

// AppendTo appends v. See ConsumerValue.
func (v ConsumerGroupCurrentMemberAssignmentValue) AppendTo(b []byte) ([]byte, error) {
	b = binary.BigEndian.AppendUint16(b, consumerValueVersion)
	b = binary.BigEndian.AppendUint32(b, uint32(v.MemberEpoch))
	b = binary.BigEndian.AppendUint32(b, uint32(v.PreviousMemberEpoch))
	b = append(b, byte(v.State))
	b = appendTopicPartitions(b, v.AssignedPartitions, true)
	b = appendTopicPartitions(b, v.PartitionsPendingRevocation, true)
	return append(b, 0), nil
}

// AppendTo appends v. See ConsumerValue.
func (v ConsumerGroupRegularExpressionValue) AppendTo(b []byte) ([]byte, error) {
	if err := checkLen("topic name", v.Topics...); err != nil {
		return b, err
	}
	b = binary.BigEndian.AppendUint16(b, consumerValueVersion)
	b = appendCompactStrings(b, v.Topics)
	b = binary.BigEndian.AppendUint64(b, uint64(v.Version))
	b = binary.BigEndian.AppendUint64(b, uint64(v.Timestamp))
	return append(b, 0), nil
}

// appendTopicPartitions appends an array of TopicPartitions; with epochs,
// a non-nil AssignmentEpochs is written as tagged field 0.
func appendTopicPartitions(b []byte, tps []ConsumerTopicPartitions, epochs bool) []byte {
	b = appendCompactLen(b, len(tps))
	for _, tp := range tps {
		b = append(b, tp.TopicID[:]...)
		b = appendCompactInt32s(b, tp.Partitions)
		if !epochs || tp.AssignmentEpochs == nil {
			b = append(b, 0)
			continue
		}
		size := uvarintLen(len(tp.AssignmentEpochs)+1) + 4*len(tp.AssignmentEpochs)
		b = append(b, 1, 0) // one tagged field, tag 0
		b = binary.AppendUvarint(b, uint64(size))
		b = appendCompactInt32s(b, tp.AssignmentEpochs)
	}
	return b
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func uvarintLen(n int) int {
	return len(binary.AppendUvarint(nil, uint64(n)))
}

func appendCompactLen(b []byte, n int) []byte { return binary.AppendUvarint(b, uint64(n)+1) }

func appendCompactString(b []byte, s string) []byte {
	b = appendCompactLen(b, len(s))
	return append(b, s...)
}

func appendCompactNullableString(b []byte, s *string) []byte {
	if s == nil {
		return append(b, 0)
	}
	return appendCompactString(b, *s)
}

func appendCompactBytes(b, v []byte) []byte {
	b = appendCompactLen(b, len(v))
	return append(b, v...)
}

func appendCompactStrings(b []byte, ss []string) []byte {
	b = appendCompactLen(b, len(ss))
	for _, s := range ss {
		b = appendCompactString(b, s)
	}
	return b
}

func appendCompactInt32s(b []byte, vs []int32) []byte {
	b = appendCompactLen(b, len(vs))
	for _, v := range vs {
		b = binary.BigEndian.AppendUint32(b, uint32(v))
	}
	return b
}

// ---- decoders ----
//
// Every read goes through kreader (format.go): a short input sets its
// sticky error and later reads return zero values. Array counts are checked
// against the bytes left (each element takes at least minSize bytes) before
// anything is allocated, so hostile counts cannot make us allocate more
// than a small multiple of the input.

func readGroupMetadata(r *kreader) ConsumerGroupMetadataValue {
	v := NewConsumerGroupMetadataValue()
	v.Epoch = r.int32()
	r.tags(func(tag uint64, f *kreader) {
		switch tag {
		case 0:
			v.MetadataHash = f.int64()
		case 1:
			v.CreationTimeMs = f.int64()
		}
	})
	return v
}

func readPartitionMetadata(r *kreader) ConsumerGroupPartitionMetadataValue {
	var v ConsumerGroupPartitionMetadataValue
	n := r.arrayLen(16+1+4+1+1, false)
	if n > 0 {
		v.Topics = make([]ConsumerTopicMetadata, n)
	}
	for i := 0; i < n && r.err == nil; i++ {
		t := &v.Topics[i]
		t.TopicID = r.uuid()
		t.TopicName = r.compactString()
		t.NumPartitions = r.int32()
		m := r.arrayLen(4+1+1, false)
		if m > 0 {
			t.PartitionMetadata = make([]ConsumerPartitionRacks, m)
		}
		for j := 0; j < m && r.err == nil; j++ {
			p := &t.PartitionMetadata[j]
			p.Partition = r.int32()
			p.Racks = r.compactStrings()
			r.skipTags()
		}
		r.skipTags()
	}
	r.skipTags()
	return v
}

func readMemberMetadata(r *kreader) ConsumerGroupMemberMetadataValue {
	var v ConsumerGroupMemberMetadataValue
	v.InstanceID = r.compactNullableString()
	v.RackID = r.compactNullableString()
	v.ClientID = r.compactString()
	v.ClientHost = r.compactString()
	v.SubscribedTopicNames = r.compactStrings()
	v.SubscribedTopicRegex = r.compactNullableString()
	v.RebalanceTimeoutMs = r.int32()
	v.ServerAssignor = r.compactNullableString()
	r.tags(func(tag uint64, f *kreader) {
		if tag != 0 {
			return
		}
		if f.uvarint() == 0 {
			v.ClassicMemberMetadata = nil
			return
		}
		c := &ClassicMemberMetadata{SessionTimeoutMs: f.int32()}
		n := f.arrayLen(1+1+1, false)
		if n > 0 {
			c.SupportedProtocols = make([]ClassicProtocol, n)
		}
		for i := 0; i < n && f.err == nil; i++ {
			c.SupportedProtocols[i].Name = f.compactString()
			c.SupportedProtocols[i].Metadata = f.compactBytes()
			f.skipTags()
		}
		f.skipTags()
		v.ClassicMemberMetadata = c
	})
	return v
}

func readTargetAssignmentMetadata(r *kreader) ConsumerGroupTargetAssignmentMetadataValue {
	v := ConsumerGroupTargetAssignmentMetadataValue{AssignmentEpoch: r.int32()}
	r.skipTags()
	return v
}

func readTargetAssignmentMember(r *kreader) ConsumerGroupTargetAssignmentMemberValue {
	v := ConsumerGroupTargetAssignmentMemberValue{TopicPartitions: r.topicPartitions(false)}
	r.skipTags()
	return v
}

func readCurrentMemberAssignment(r *kreader) ConsumerGroupCurrentMemberAssignmentValue {
	var v ConsumerGroupCurrentMemberAssignmentValue
	v.MemberEpoch = r.int32()
	v.PreviousMemberEpoch = r.int32()
	if s := r.take(1); s != nil {
		v.State = int8(s[0])
	}
	v.AssignedPartitions = r.topicPartitions(true)
	v.PartitionsPendingRevocation = r.topicPartitions(true)
	r.skipTags()
	return v
}

func readRegularExpression(r *kreader) ConsumerGroupRegularExpressionValue {
	var v ConsumerGroupRegularExpressionValue
	v.Topics = r.compactStrings()
	v.Version = r.int64()
	v.Timestamp = r.int64()
	r.skipTags()
	return v
}

// topicPartitions reads an array of TopicPartitions; with epochs, tagged
// field 0 of each is its AssignmentEpochs.
func (r *kreader) topicPartitions(epochs bool) []ConsumerTopicPartitions {
	n := r.arrayLen(16+1+1, false)
	if n <= 0 || r.err != nil {
		return nil
	}
	tps := make([]ConsumerTopicPartitions, n)
	for i := 0; i < n && r.err == nil; i++ {
		tps[i].TopicID = r.uuid()
		tps[i].Partitions = r.compactInt32s(false)
		r.tags(func(tag uint64, f *kreader) {
			if tag == 0 && epochs {
				tps[i].AssignmentEpochs = f.compactInt32s(true)
			}
		})
	}
	return tps
}

// fail sets r's sticky error, unless one is set.
func (r *kreader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: "+format, append([]any{ErrBadRecord}, args...)...)
	}
}

// done fails r if bytes are left over.
func (r *kreader) done() {
	if r.err == nil && len(r.b) > 0 {
		r.fail("%d trailing bytes", len(r.b))
	}
}

// keyString reads an int16-length string of a key; a negative length (a
// null) is refused.
func (r *kreader) keyString() string {
	n := r.int16()
	if n < 0 {
		r.fail("null string in a key")
		return ""
	}
	return string(r.take(int(n)))
}

// uvarint reads an unsigned varint of at most 5 bytes (a uint32), as
// Kafka's readUnsignedVarint.
func (r *kreader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	var v uint64
	for i := 0; i < 5; i++ {
		if i >= len(r.b) {
			r.fail("truncated varint")
			return 0
		}
		c := r.b[i]
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			r.b = r.b[i+1:]
			if v > math.MaxUint32 {
				r.fail("varint %d overflows 32 bits", v)
				return 0
			}
			return v
		}
	}
	r.fail("varint longer than 5 bytes")
	return 0
}

// compactLen reads a compact length: -1 for null, else the count. A count
// past what the remaining bytes could hold at minSize bytes each fails.
func (r *kreader) compactLen(minSize int) int {
	u := r.uvarint()
	if r.err != nil {
		return 0
	}
	n := int(u) - 1
	if n > 0 && n > len(r.b)/max(minSize, 1) {
		r.fail("length %d exceeds the %d bytes left", n, len(r.b))
		return 0
	}
	return n
}

// arrayLen reads an array count; a null fails unless nullable.
func (r *kreader) arrayLen(minSize int, nullable bool) int {
	n := r.compactLen(minSize)
	if n < 0 && !nullable {
		r.fail("null array in a non-nullable field")
		return 0
	}
	return n
}

func (r *kreader) compactNullableString() *string {
	n := r.compactLen(1)
	if n < 0 || r.err != nil {
		return nil
	}
	if n > maxRecordString {
		r.fail("string of %d bytes (at most %d)", n, maxRecordString)
		return nil
	}
	s := string(r.take(n))
	return &s
}

func (r *kreader) compactString() string {
	n := r.compactLen(1)
	if n < 0 {
		r.fail("null string in a non-nullable field")
		return ""
	}
	if n > maxRecordString {
		r.fail("string of %d bytes (at most %d)", n, maxRecordString)
		return ""
	}
	return string(r.take(n))
}

func (r *kreader) compactBytes() []byte {
	n := r.compactLen(1)
	if n < 0 {
		r.fail("null bytes in a non-nullable field")
		return nil
	}
	if v := r.take(n); len(v) > 0 {
		return append([]byte(nil), v...)
	}
	return nil
}

func (r *kreader) compactStrings() []string {
	n := r.arrayLen(1, false)
	if r.err != nil || n == 0 {
		return nil
	}
	ss := make([]string, n)
	for i := 0; i < n && r.err == nil; i++ {
		ss[i] = r.compactString()
	}
	return ss
}

// compactInt32s reads an array of int32. Nullable, a null is nil and an
// empty array is non-nil; else a null fails and an empty array is nil.
func (r *kreader) compactInt32s(nullable bool) []int32 {
	n := r.arrayLen(4, nullable)
	if r.err != nil || n < 0 || (n == 0 && !nullable) {
		return nil
	}
	vs := make([]int32, n)
	for i := range vs {
		vs[i] = r.int32()
	}
	return vs
}

func (r *kreader) uuid() (id [16]byte) {
	copy(id[:], r.take(16))
	return id
}

// tags reads a tagged field section, calling f for each field with a
// reader over exactly its bytes; a field f does not read whole, or reads
// past, fails r. Unknown tags are skipped by f ignoring them.
func (r *kreader) tags(f func(tag uint64, fr *kreader)) {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.fail("%d tagged fields in %d bytes", n, len(r.b))
		return
	}
	for i := uint64(0); i < n && r.err == nil; i++ {
		tag := r.uvarint()
		size := r.uvarint()
		if r.err != nil {
			return
		}
		data := r.take(int(size))
		if r.err != nil {
			return
		}
		fr := kreader{b: data}
		f(tag, &fr)
		if fr.err != nil {
			r.fail("tagged field %d: %v", tag, fr.err)
			return
		}
		// A field f read (a known tag) must be read whole; one it did not
		// touch is an unknown tag, skipped.
		if len(fr.b) > 0 && len(fr.b) < len(data) {
			r.fail("tagged field %d: %d bytes left unread", tag, len(fr.b))
			return
		}
	}
}

// skipTags reads a tagged field section, ignoring every field.
func (r *kreader) skipTags() { r.tags(func(uint64, *kreader) {}) }
