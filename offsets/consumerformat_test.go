package offsets

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func strp(s string) *string { return &s }

var (
	tidA = [16]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
	tidB = [16]byte{0xff, 0xee, 0xdd, 0xcc, 0xbb, 0xaa, 0x99, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0x00}
)

// consumerSamples is one populated and one minimal value of every record
// type.
func consumerSamples() []ConsumerValue {
	return []ConsumerValue{
		ConsumerGroupMetadataValue{Epoch: 7, MetadataHash: -42, CreationTimeMs: 1700000000000},
		NewConsumerGroupMetadataValue(),
		ConsumerGroupPartitionMetadataValue{Topics: []ConsumerTopicMetadata{
			{TopicID: tidA, TopicName: "orders", NumPartitions: 3, PartitionMetadata: []ConsumerPartitionRacks{
				{Partition: 0, Racks: []string{"rack-a", "rack-b"}}, {Partition: 1},
			}},
			{TopicID: tidB, TopicName: "", NumPartitions: 0},
		}},
		ConsumerGroupPartitionMetadataValue{},
		ConsumerGroupMemberMetadataValue{
			InstanceID: strp("static-1"), RackID: strp(""), ClientID: "client", ClientHost: "/10.0.0.1",
			SubscribedTopicNames: []string{"orders", "payments"}, SubscribedTopicRegex: strp("^orders-.*"),
			RebalanceTimeoutMs: 300000, ServerAssignor: strp("uniform"),
			ClassicMemberMetadata: &ClassicMemberMetadata{SessionTimeoutMs: 45000, SupportedProtocols: []ClassicProtocol{
				{Name: "range", Metadata: []byte{0, 3, 1}}, {Name: "cooperative-sticky"},
			}},
		},
		ConsumerGroupMemberMetadataValue{RebalanceTimeoutMs: -1},
		ConsumerGroupMemberMetadataValue{ClassicMemberMetadata: &ClassicMemberMetadata{}},
		ConsumerGroupTargetAssignmentMetadataValue{AssignmentEpoch: 12},
		ConsumerGroupTargetAssignmentMemberValue{TopicPartitions: []ConsumerTopicPartitions{
			{TopicID: tidA, Partitions: []int32{0, 2, 4}}, {TopicID: tidB},
		}},
		ConsumerGroupTargetAssignmentMemberValue{},
		ConsumerGroupCurrentMemberAssignmentValue{
			MemberEpoch: 9, PreviousMemberEpoch: 8, State: 1,
			AssignedPartitions: []ConsumerTopicPartitions{
				{TopicID: tidA, Partitions: []int32{1, 3}, AssignmentEpochs: []int32{5, 9}},
				{TopicID: tidB, Partitions: []int32{0}, AssignmentEpochs: []int32{}},
			},
			PartitionsPendingRevocation: []ConsumerTopicPartitions{{TopicID: tidB, Partitions: []int32{7}}},
		},
		ConsumerGroupCurrentMemberAssignmentValue{State: 127, MemberEpoch: -1},
		ConsumerGroupRegularExpressionValue{Topics: []string{"orders-1", "orders-2"}, Version: 99, Timestamp: 1700000000123},
		ConsumerGroupRegularExpressionValue{},
	}
}

func TestConsumerValueRoundTrip(t *testing.T) {
	for _, v := range consumerSamples() {
		b, err := v.AppendTo([]byte("prefix"))
		if err != nil {
			t.Fatalf("%T: %v", v, err)
		}
		if !bytes.HasPrefix(b, []byte("prefix")) {
			t.Fatalf("%T: AppendTo dropped the prefix", v)
		}
		got, err := DecodeConsumerValue(v.RecordType(), b[len("prefix"):])
		if err != nil {
			t.Fatalf("%T %+v: %v (bytes %x)", v, v, err, b)
		}
		if !reflect.DeepEqual(got, v) {
			t.Fatalf("round trip:\n got %#v\nwant %#v", got, v)
		}
	}
}

func TestConsumerKeyRoundTrip(t *testing.T) {
	keys := []ConsumerKey{
		{Type: ConsumerGroupMetadataType, Group: "g"},
		{Type: ConsumerGroupPartitionMetadataType, Group: "g"},
		{Type: ConsumerGroupMemberMetadataType, Group: "g", Member: "m"},
		{Type: ConsumerGroupTargetAssignmentMetadataType, Group: ""},
		{Type: ConsumerGroupTargetAssignmentMemberType, Group: "g", Member: "m-2"},
		{Type: ConsumerGroupCurrentMemberAssignmentType, Group: "g", Member: ""},
		{Type: ConsumerGroupRegularExpressionType, Group: "g", Regex: "^a.*"},
	}
	for _, k := range keys {
		b, err := AppendConsumerKey(nil, k)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeConsumerKey(b)
		if err != nil || got != k {
			t.Fatalf("%+v: decoded %+v, %v", k, got, err)
		}
	}
}

// TestConsumerGolden checks bytes derived by hand from Kafka's JSON schemas
// and its message generator's rules (see the format comment).
func TestConsumerGolden(t *testing.T) {
	keys := []struct {
		name string
		k    ConsumerKey
		hex  string
	}{
		// int16 3, then "g1" with an int16 length.
		{"ConsumerGroupMetadataKey", ConsumerKey{Type: 3, Group: "g1"}, "0003" + "0002" + "6731"},
		{"ConsumerGroupTargetAssignmentMemberKey", ConsumerKey{Type: 7, Group: "g", Member: "m"}, "0007" + "000167" + "00016d"},
		{"ConsumerGroupRegularExpressionKey", ConsumerKey{Type: 16, Group: "g", Regex: "a."}, "0010" + "000167" + "0002612e"},
	}
	for _, tc := range keys {
		b, err := AppendConsumerKey(nil, tc.k)
		if err != nil {
			t.Fatal(err)
		}
		if got := hex.EncodeToString(b); got != tc.hex {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.hex)
		}
	}
	values := []struct {
		name string
		v    ConsumerValue
		hex  string
	}{
		{
			name: "ConsumerGroupMetadataValue without tagged fields",
			v:    ConsumerGroupMetadataValue{Epoch: 10, CreationTimeMs: -1},
			hex:  "0000" + "0000000a" + "00",
		},
		{
			// MetadataHash is tag 0, an int64: size 8.
			name: "ConsumerGroupMetadataValue with MetadataHash",
			v:    ConsumerGroupMetadataValue{Epoch: 10, MetadataHash: 0x0102030405060708, CreationTimeMs: -1},
			hex:  "0000" + "0000000a" + "01" + "00" + "08" + "0102030405060708",
		},
		{
			name: "ConsumerGroupCurrentMemberAssignmentValue",
			v: ConsumerGroupCurrentMemberAssignmentValue{
				MemberEpoch: 5, PreviousMemberEpoch: 4, State: 1,
				AssignedPartitions: []ConsumerTopicPartitions{{TopicID: tidA, Partitions: []int32{0, 2}}},
			},
			hex: "0000" + "00000005" + "00000004" + "01" +
				"02" + "000102030405060708090a0b0c0d0e0f" + "03" + "00000000" + "00000002" + "00" + // one topic, two partitions, no tags
				"01" + // no partitions pending revocation
				"00",
		},
		{
			// ClassicMemberMetadata is the nullable struct of tag 0: size
			// 17 = the marker byte 1 + the struct's 16 bytes (int32 session
			// timeout, array of one protocol: "range", bytes {1,2}, its
			// tags; the struct's tags).
			name: "ConsumerGroupMemberMetadataValue",
			v: ConsumerGroupMemberMetadataValue{
				RackID: strp("r"), ClientID: "c", ClientHost: "/h", SubscribedTopicNames: []string{"t"},
				RebalanceTimeoutMs: 30000, ServerAssignor: strp("uniform"),
				ClassicMemberMetadata: &ClassicMemberMetadata{SessionTimeoutMs: 45000, SupportedProtocols: []ClassicProtocol{{Name: "range", Metadata: []byte{1, 2}}}},
			},
			hex: "0000" + "00" + "0272" + "0263" + "032f68" + "020274" + "00" + "00007530" + "08756e69666f726d" +
				"01" + "00" + "11" + "01" + "0000afc8" + "02" + "0672616e6765" + "030102" + "00" + "00",
		},
		{
			name: "ConsumerGroupRegularExpressionValue",
			v:    ConsumerGroupRegularExpressionValue{Topics: []string{"a"}, Version: 2, Timestamp: 3},
			hex:  "0000" + "020261" + "0000000000000002" + "0000000000000003" + "00",
		},
	}
	for _, tc := range values {
		b, err := tc.v.AppendTo(nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := hex.EncodeToString(b); got != tc.hex {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.hex)
		}
		want, _ := hex.DecodeString(tc.hex)
		got, err := DecodeConsumerValue(tc.v.RecordType(), want)
		if err != nil || !reflect.DeepEqual(got, tc.v) {
			t.Errorf("%s: decoded %#v, %v", tc.name, got, err)
		}
	}
}

// TestConsumerDecodeSkipsUnknownTags checks that a tagged field this code
// does not know (a newer Kafka's) is skipped, at the top level and inside
// an array element.
func TestConsumerDecodeSkipsUnknownTags(t *testing.T) {
	// ConsumerGroupMetadataValue, epoch 1, tags: 0 (hash 5), 9 (3 bytes).
	b, _ := hex.DecodeString("0000" + "00000001" + "02" + "0008" + "0000000000000005" + "0903" + "aabbcc")
	v, err := DecodeConsumerValue(ConsumerGroupMetadataType, b)
	if err != nil {
		t.Fatal(err)
	}
	if want := (ConsumerGroupMetadataValue{Epoch: 1, MetadataHash: 5, CreationTimeMs: -1}); v != want {
		t.Fatalf("got %+v, want %+v", v, want)
	}
	// Target assignment member: one topic whose element carries tag 4.
	b, _ = hex.DecodeString("0000" + "02" + "000102030405060708090a0b0c0d0e0f" + "0200000007" + "01" + "0401ff" + "00")
	v, err = DecodeConsumerValue(ConsumerGroupTargetAssignmentMemberType, b)
	if err != nil {
		t.Fatal(err)
	}
	want := ConsumerGroupTargetAssignmentMemberValue{TopicPartitions: []ConsumerTopicPartitions{{TopicID: tidA, Partitions: []int32{7}}}}
	if !reflect.DeepEqual(v, want) {
		t.Fatalf("got %+v, want %+v", v, want)
	}
}

func TestConsumerDecodeErrors(t *testing.T) {
	good, _ := ConsumerGroupCurrentMemberAssignmentValue{
		MemberEpoch: 1, AssignedPartitions: []ConsumerTopicPartitions{{TopicID: tidA, Partitions: []int32{1}}},
	}.AppendTo(nil)
	cases := []struct {
		name string
		typ  int16
		hex  string
	}{
		{"empty", ConsumerGroupMetadataType, ""},
		{"version 1", ConsumerGroupMetadataType, "0001" + "00000001" + "00"},
		{"truncated", ConsumerGroupCurrentMemberAssignmentType, hex.EncodeToString(good[:len(good)-3])},
		{"trailing bytes", ConsumerGroupTargetAssignmentMetadataType, "0000" + "00000001" + "00" + "ff"},
		{"not a consumer type", 2, "0000"},
		{"null non-nullable string", ConsumerGroupMemberMetadataType, "0000" + "00" + "00" + "00"},
		// An array claiming 2^31 elements in a few bytes: refused before
		// any allocation.
		{"huge array", ConsumerGroupTargetAssignmentMemberType, "0000" + "8080808008"},
		{"huge int32 array", ConsumerGroupTargetAssignmentMemberType, "0000" + "02" + "000102030405060708090a0b0c0d0e0f" + "ffffffff0f"},
		{"varint over 5 bytes", ConsumerGroupRegularExpressionType, "0000" + "808080808001"},
		{"string over 32767 bytes", ConsumerGroupRegularExpressionType, "0000" + "02" + "818002" + strings.Repeat("61", 32768) + "0000000000000000" + "0000000000000000" + "00"},
		{"tag size past the end", ConsumerGroupMetadataType, "0000" + "00000001" + "01" + "0010" + "00"},
		{"known tag too short", ConsumerGroupMetadataType, "0000" + "00000001" + "01" + "0004" + "00000000"},
		{"known tag too long", ConsumerGroupMetadataType, "0000" + "00000001" + "01" + "0009" + "000000000000000000"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := hex.DecodeString(tc.hex)
			if err != nil {
				t.Fatal(err)
			}
			v, err := DecodeConsumerValue(tc.typ, b)
			if !errors.Is(err, ErrBadRecord) {
				t.Fatalf("decoded %+v, err %v: want ErrBadRecord", v, err)
			}
		})
	}
	keyCases := map[string]string{
		"classic offset key":    "0001" + "0001" + "67" + "0001" + "74" + "00000000",
		"classic group key":     "0002" + "000167",
		"truncated member key":  "0005" + "000167" + "0005" + "6d",
		"trailing bytes":        "0003" + "000167" + "00",
		"null group id":         "0003" + "ffff",
		"type 17 (streams 17+)": "0011" + "000167",
	}
	for name, h := range keyCases {
		b, _ := hex.DecodeString(h)
		if k, err := DecodeConsumerKey(b); !errors.Is(err, ErrBadRecord) {
			t.Errorf("%s: decoded %+v, err %v: want ErrBadRecord", name, k, err)
		}
	}
}

func TestConsumerEncodeRefusesTooLong(t *testing.T) {
	long := strings.Repeat("x", 32768)
	if b, err := AppendConsumerKey([]byte{1}, ConsumerKey{Type: 5, Group: "g", Member: long}); !errors.Is(err, ErrTooLong) || len(b) != 1 {
		t.Fatalf("key: %v, %d bytes", err, len(b))
	}
	if _, err := AppendConsumerKey(nil, ConsumerKey{Type: 2, Group: "g"}); !errors.Is(err, ErrBadRecord) {
		t.Fatalf("type 2 key: %v", err)
	}
	for _, v := range []ConsumerValue{
		ConsumerGroupMemberMetadataValue{ClientID: long},
		ConsumerGroupMemberMetadataValue{SubscribedTopicNames: []string{long}},
		ConsumerGroupMemberMetadataValue{ClassicMemberMetadata: &ClassicMemberMetadata{SupportedProtocols: []ClassicProtocol{{Name: long}}}},
		ConsumerGroupRegularExpressionValue{Topics: []string{long}},
		ConsumerGroupPartitionMetadataValue{Topics: []ConsumerTopicMetadata{{TopicName: long}}},
	} {
		if b, err := v.AppendTo([]byte{1}); !errors.Is(err, ErrTooLong) || len(b) != 1 {
			t.Fatalf("%T: %v, %d bytes", v, err, len(b))
		}
	}
}
