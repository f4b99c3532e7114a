package txn

import (
	"errors"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzKey feeds arbitrary bytes to decodeKey, the key decoder of every
// __transaction_state record. Invariants:
//   - it never panics;
//   - an error wraps ErrBadRecord;
//   - a decoded key re-encodes to exactly the input (the layout has no
//     slack), so re-parsing is stable.
func FuzzKey(f *testing.F) {
	f.Add(appendKey(nil, "tx"))
	f.Add(appendKey(nil, ""))
	f.Add([]byte{0, 1, 0, 1, 'x'})
	f.Add([]byte{0, 0, 0xff, 0xff})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		id, err := decodeKey(b)
		if err != nil {
			if !errors.Is(err, ErrBadRecord) {
				t.Fatalf("error %v does not wrap ErrBadRecord", err)
			}
			return
		}
		if re := appendKey(nil, id); string(re) != string(b) {
			t.Fatalf("%x decodes to %q, which re-encodes to %x", b, id, re)
		}
	})
}

// FuzzValue feeds arbitrary bytes to decodeValue (versions 0 and 1).
// Invariants:
//   - it never panics;
//   - an error wraps ErrBadRecord;
//   - a decoded value has a state in 0-7, sorted unique partitions, none
//     in Empty;
//   - it re-encodes (version 0) to bytes that decode to the same value,
//     no longer than the input unless the input was version 1 (whose
//     compact lengths are shorter).
func FuzzValue(f *testing.F) {
	f.Add(appendValue(nil, Value{ProducerID: 1, ProducerEpoch: 2, TimeoutMs: 3, State: Empty, LastUpdateMs: 4, StartMs: -1}))
	f.Add(appendValue(nil, Value{ProducerID: 1, State: Ongoing, Partitions: []TopicPartition{{"a", 0}, {"b", 1}}, StartMs: 4}))
	f.Add(appendValue(nil, Value{ProducerID: 1, State: CompleteAbort}))
	kv := kmsg.NewTxnMetadataValue()
	kv.Version, kv.State, kv.Topics = 1, 2, []kmsg.TxnMetadataValueTopic{{Topic: "t", Partitions: []int32{1}}}
	kv.PreviousProducerID = 9
	f.Add(kv.AppendTo(nil))
	f.Add([]byte{0, 0, 1})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := decodeValue(b)
		if err != nil {
			if !errors.Is(err, ErrBadRecord) {
				t.Fatalf("error %v does not wrap ErrBadRecord", err)
			}
			return
		}
		if v.State < Empty || v.State > PrepareEpochFence {
			t.Fatalf("state %d", v.State)
		}
		if v.State == Empty && v.Partitions != nil {
			t.Fatalf("Empty with partitions %v", v.Partitions)
		}
		for i := 1; i < len(v.Partitions); i++ {
			if compareTP(v.Partitions[i-1], v.Partitions[i]) >= 0 {
				t.Fatalf("partitions not sorted and unique: %v", v.Partitions)
			}
		}
		re := appendValue(nil, v)
		if b[1] == 0 && len(re) > len(b) {
			t.Fatalf("%x re-encodes to the longer %x", b, re)
		}
		v2, err := decodeValue(re)
		if err != nil || !reflect.DeepEqual(v, v2) {
			t.Fatalf("%+v re-encoded %x decodes to %+v, %v", v, re, v2, err)
		}
	})
}
