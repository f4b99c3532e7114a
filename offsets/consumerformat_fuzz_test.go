package offsets

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// consumerTypes are the record types FuzzConsumerGroupRecords decodes every
// value as, whatever its key says.
var consumerTypes = []int16{
	ConsumerGroupMetadataType, ConsumerGroupPartitionMetadataType, ConsumerGroupMemberMetadataType,
	ConsumerGroupTargetAssignmentMetadataType, ConsumerGroupTargetAssignmentMemberType,
	ConsumerGroupCurrentMemberAssignmentType, ConsumerGroupRegularExpressionType,
}

// FuzzConsumerGroupRecords feeds arbitrary key and value bytes to the
// consumer group record decoders (DecodeConsumerKey, and
// DecodeConsumerValue as every record type). Invariants:
//   - they never panic, and array or string sizes read from the input are
//     checked against the bytes left before anything is allocated (a
//     hostile count fails instead of allocating: go test -fuzz would
//     report the out-of-memory);
//   - an error wraps ErrBadRecord;
//   - a decoded key re-encodes to exactly the input (keys have one
//     encoding);
//   - a decoded value re-encodes without error to bytes no longer than the
//     input (unknown tagged fields and defaults are dropped, nothing is
//     added), which decode to an equal value and re-encode to the same
//     bytes (stable);
//   - a decoded value shares no bytes with the input.
func FuzzConsumerGroupRecords(f *testing.F) {
	for _, v := range consumerSamples() {
		b, _ := v.AppendTo(nil)
		k, _ := AppendConsumerKey(nil, ConsumerKey{Type: v.RecordType(), Group: "g", Member: "m", Regex: "r.*"})
		f.Add(k, b)
	}
	f.Add([]byte{0, 3, 0, 1, 'g'}, []byte{0, 0, 0, 0, 0, 1, 2, 0, 8, 0, 0, 0, 0, 0, 0, 0, 5, 9, 3, 0xaa, 0xbb, 0xcc}) // unknown tag
	f.Add([]byte{0, 7, 0, 1, 'g', 0, 1, 'm'}, []byte{0, 0, 0x80, 0x80, 0x80, 0x80, 0x08})                             // huge count
	f.Add([]byte{0, 1}, []byte{})
	f.Add([]byte{}, []byte{0, 0, 0})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		if k, err := DecodeConsumerKey(key); err != nil {
			if !errors.Is(err, ErrBadRecord) {
				t.Fatalf("key error %v does not wrap ErrBadRecord", err)
			}
		} else {
			re, err := AppendConsumerKey(nil, k)
			if err != nil || !bytes.Equal(re, key) {
				t.Fatalf("key %x decodes to %+v, re-encodes to %x, %v", key, k, re, err)
			}
		}
		in := bytes.Clone(value)
		for _, typ := range consumerTypes {
			v, err := DecodeConsumerValue(typ, in)
			if err != nil {
				if !errors.Is(err, ErrBadRecord) {
					t.Fatalf("type %d: error %v does not wrap ErrBadRecord", typ, err)
				}
				continue
			}
			if v.RecordType() != typ {
				t.Fatalf("type %d decoded as a %T", typ, v)
			}
			re, err := v.AppendTo(nil)
			if err != nil {
				t.Fatalf("type %d: %x decodes to %+v, which does not encode: %v", typ, value, v, err)
			}
			if len(re) > len(value) {
				t.Fatalf("type %d: %x re-encodes to the longer %x", typ, value, re)
			}
			v2, err := DecodeConsumerValue(typ, re)
			if err != nil || !reflect.DeepEqual(v, v2) {
				t.Fatalf("type %d: %x decodes to %#v, re-encoded %x to %#v, %v", typ, value, v, re, v2, err)
			}
			re2, _ := v2.AppendTo(nil)
			if !bytes.Equal(re, re2) {
				t.Fatalf("type %d: unstable encoding %x then %x", typ, re, re2)
			}
			for i := range in {
				in[i] ^= 0xff
			}
			if !reflect.DeepEqual(v, v2) {
				t.Fatalf("type %d: the decoded value shares bytes with the input", typ)
			}
			copy(in, value)
		}
	})
}
