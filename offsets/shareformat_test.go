package offsets

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"testing"
)

// TestShareRecordsRoundTrip encodes every share group record type and
// decodes it back unchanged.
func TestShareRecordsRoundTrip(t *testing.T) {
	id := [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	tps := []ConsumerTopicPartitions{{TopicID: id, Partitions: []int32{0, 2, 5}}}
	cases := []struct {
		name string
		key  ShareKey
		val  ShareValue
	}{
		{"member metadata", ShareKey{Type: ShareGroupMemberMetadataType, Group: "g", Member: "m1"},
			ShareMemberMetadataValue{RackID: strp("r1"), ClientID: "c", ClientHost: "/127.0.0.1", SubscribedTopicNames: []string{"a", "b"}}},
		{"member metadata no rack", ShareKey{Type: ShareGroupMemberMetadataType, Group: "g", Member: "m1"},
			ShareMemberMetadataValue{ClientID: "c", ClientHost: "h"}},
		{"group metadata", ShareKey{Type: ShareGroupMetadataType, Group: "g"}, ShareGroupMetadataValue{Epoch: 7, MetadataHash: -12345}},
		{"target metadata", ShareKey{Type: ShareGroupTargetAssignmentMetadataType, Group: "g"}, ShareTargetAssignmentMetadataValue{AssignmentEpoch: 3}},
		{"target member", ShareKey{Type: ShareGroupTargetAssignmentMemberType, Group: "g", Member: "m"}, ShareTargetAssignmentMemberValue{TopicPartitions: tps}},
		{"current assignment", ShareKey{Type: ShareGroupCurrentMemberAssignmentType, Group: "g", Member: "m"},
			ShareCurrentMemberAssignmentValue{MemberEpoch: 4, PreviousMemberEpoch: 3, State: 0, AssignedPartitions: tps}},
		{"state partition metadata", ShareKey{Type: ShareGroupStatePartitionMetadataType, Group: "g"},
			ShareStatePartitionMetadataValue{
				InitializingTopics: []ShareTopicPartitionsInfo{{TopicID: id, TopicName: "t", Partitions: []int32{1}}},
				InitializedTopics:  []ShareTopicPartitionsInfo{{TopicID: id, TopicName: "u", Partitions: []int32{0, 1}}},
				DeletingTopics:     []ShareTopicInfo{{TopicID: id, TopicName: "v"}},
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			kb, err := AppendShareKey(nil, c.key)
			if err != nil {
				t.Fatal(err)
			}
			k, err := DecodeShareKey(kb)
			if err != nil || k != c.key {
				t.Fatalf("key: got %+v, %v; want %+v", k, err, c.key)
			}
			vb, err := c.val.AppendTo(nil)
			if err != nil {
				t.Fatal(err)
			}
			v, err := DecodeShareValue(c.key.Type, vb)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(v, c.val) {
				t.Fatalf("value: got %+v, want %+v", v, c.val)
			}
		})
	}
}

// TestShareGroupMetadataKafkaBytes checks ShareGroupMetadataValue against
// the bytes Kafka 4.2's generated code writes: version 0, Epoch, then
// MetadataHash as a plain int64 field, then an empty tagged section.
func TestShareGroupMetadataKafkaBytes(t *testing.T) {
	b, _ := ShareGroupMetadataValue{Epoch: 2, MetadataHash: 1}.AppendTo(nil)
	want, _ := hex.DecodeString("0000" + "00000002" + "0000000000000001" + "00")
	if !bytes.Equal(b, want) {
		t.Fatalf("got %x want %x", b, want)
	}
	k, _ := AppendShareKey(nil, ShareKey{Type: ShareGroupMemberMetadataType, Group: "g", Member: "m"})
	wantKey, _ := hex.DecodeString("000a" + "000167" + "00016d")
	if !bytes.Equal(k, wantKey) {
		t.Fatalf("key got %x want %x", k, wantKey)
	}
}

// TestShareKeyRejects: consumer record types and truncated keys are
// refused with ErrBadRecord.
func TestShareKeyRejects(t *testing.T) {
	for _, b := range [][]byte{{0, 3, 0, 1, 'g'}, {0, 10, 0, 1, 'g'}, {0}, {0, 11, 0xff, 0xff}} {
		if _, err := DecodeShareKey(b); !errors.Is(err, ErrBadRecord) {
			t.Errorf("%x: got %v, want ErrBadRecord", b, err)
		}
	}
}

// FuzzShareRecords checks the share group record decoders on arbitrary
// input. Invariants: never panics; a decoded value re-encodes to bytes
// that decode to an equal value (re-parsing is stable); a decoded key
// re-encodes to the same bytes.
func FuzzShareRecords(f *testing.F) {
	for typ := ShareGroupPartitionMetadataType; typ <= ShareGroupStatePartitionMetadataType; typ++ {
		f.Add(typ, []byte{0, byte(typ), 0, 1, 'g', 0, 1, 'm'}, []byte{0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	}
	f.Fuzz(func(t *testing.T, typ int16, key, val []byte) {
		if k, err := DecodeShareKey(key); err == nil {
			kb, err := AppendShareKey(nil, k)
			if err != nil || !bytes.Equal(kb, key) {
				t.Fatalf("key %x re-encodes to %x, %v", key, kb, err)
			}
		}
		v, err := DecodeShareValue(typ, val)
		if err != nil {
			return
		}
		b, err := v.AppendTo(nil)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		v2, err := DecodeShareValue(typ, b)
		if err != nil || !reflect.DeepEqual(v, v2) {
			t.Fatalf("unstable: %+v then %+v (%v)", v, v2, err)
		}
	})
}
