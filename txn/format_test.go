package txn

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// kafkaValueV0 builds a version 0 value field by field, as Kafka's
// TransactionLogValue schema lays it out, independently of appendValue.
func kafkaValueV0(pid int64, epoch int16, timeout int32, state int8, topics map[string][]int32, order []string, last, start int64) []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	b = binary.BigEndian.AppendUint64(b, uint64(pid))
	b = binary.BigEndian.AppendUint16(b, uint16(epoch))
	b = binary.BigEndian.AppendUint32(b, uint32(timeout))
	b = append(b, byte(state))
	if topics == nil {
		b = binary.BigEndian.AppendUint32(b, 0xffffffff)
	} else {
		b = binary.BigEndian.AppendUint32(b, uint32(len(order)))
		for _, t := range order {
			b = binary.BigEndian.AppendUint16(b, uint16(len(t)))
			b = append(b, t...)
			b = binary.BigEndian.AppendUint32(b, uint32(len(topics[t])))
			for _, p := range topics[t] {
				b = binary.BigEndian.AppendUint32(b, uint32(p))
			}
		}
	}
	b = binary.BigEndian.AppendUint64(b, uint64(last))
	return binary.BigEndian.AppendUint64(b, uint64(start))
}

// TestFormatKafkaLayout: keys and values are byte for byte Kafka's
// version 0 layout.
func TestFormatKafkaLayout(t *testing.T) {
	if got, want := appendKey(nil, "tx-1"), []byte{0, 0, 0, 4, 't', 'x', '-', '1'}; !bytes.Equal(got, want) {
		t.Errorf("key %x, want %x", got, want)
	}
	for _, tc := range []struct {
		name string
		v    Value
		want []byte
	}{
		{"empty", Value{ProducerID: 7, ProducerEpoch: 0, TimeoutMs: 60000, State: Empty, LastUpdateMs: 10, StartMs: -1},
			kafkaValueV0(7, 0, 60000, 0, nil, nil, 10, -1)},
		{"ongoing", Value{ProducerID: 7, ProducerEpoch: 3, TimeoutMs: 60000, State: Ongoing,
			Partitions: []TopicPartition{{"a", 0}, {"a", 2}, {"b", 1}}, LastUpdateMs: 12, StartMs: 11},
			kafkaValueV0(7, 3, 60000, 1, map[string][]int32{"a": {0, 2}, "b": {1}}, []string{"a", "b"}, 12, 11)},
		{"complete commit", Value{ProducerID: 1 << 40, ProducerEpoch: 9, TimeoutMs: 1, State: CompleteCommit, LastUpdateMs: 20, StartMs: 11},
			kafkaValueV0(1<<40, 9, 1, 4, map[string][]int32{}, nil, 20, 11)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := appendValue(nil, tc.v)
			if !bytes.Equal(got, tc.want) {
				t.Fatalf("value\n %x\nwant\n %x", got, tc.want)
			}
			back, err := decodeValue(got)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back, tc.v) {
				t.Fatalf("decoded %+v, want %+v", back, tc.v)
			}
		})
	}
}

// TestDecodeValueV1: a flexible version 1 value (KIP-915, as Kafka 4
// writes it with KIP-890's tagged fields) decodes to the same state.
func TestDecodeValueV1(t *testing.T) {
	kv := kmsg.NewTxnMetadataValue()
	kv.Version, kv.ProducerID, kv.ProducerEpoch, kv.TimeoutMillis = 1, 5, 2, 1000
	kv.State = kmsg.TransactionState(PrepareAbort)
	kv.Topics = []kmsg.TxnMetadataValueTopic{{Topic: "t", Partitions: []int32{3, 1}}}
	kv.LastUpdateTimestamp, kv.StartTimestamp = 9, 8
	kv.PreviousProducerID, kv.NextProducerID, kv.ClientTransactionVersion = 4, 6, 2
	v, err := decodeValue(kv.AppendTo(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := Value{ProducerID: 5, ProducerEpoch: 2, TimeoutMs: 1000, State: PrepareAbort,
		Partitions: []TopicPartition{{"t", 1}, {"t", 3}}, LastUpdateMs: 9, StartMs: 8}
	if !reflect.DeepEqual(v, want) {
		t.Fatalf("got %+v, want %+v", v, want)
	}
}

// TestDecodeBad: damaged records are refused with ErrBadRecord.
func TestDecodeBad(t *testing.T) {
	good := appendValue(nil, Value{ProducerID: 1, State: Ongoing, Partitions: []TopicPartition{{"t", 0}}})
	badState := bytes.Clone(good)
	badState[2+8+2+4] = 8
	for name, b := range map[string][]byte{
		"short":     {0},
		"version 2": append([]byte{0, 2}, good[2:]...),
		"truncated": good[:len(good)-1],
		"state 8":   badState,
	} {
		if _, err := decodeValue(b); !errors.Is(err, ErrBadRecord) {
			t.Errorf("value %s: %v", name, err)
		}
	}
	for name, b := range map[string][]byte{
		"short":     {0, 0, 0},
		"version 1": {0, 1, 0, 1, 'x'},
		"overrun":   {0, 0, 0, 5, 'x'},
		"trailing":  {0, 0, 0, 1, 'x', 'y'},
		"negative":  {0, 0, 0xff, 0xff},
	} {
		if _, err := decodeKey(b); !errors.Is(err, ErrBadRecord) {
			t.Errorf("key %s: %v", name, err)
		}
	}
}

func TestStateNames(t *testing.T) {
	for s := Empty; s <= PrepareEpochFence; s++ {
		if back, ok := ParseState(s.String()); !ok || back != s {
			t.Errorf("%d: %q parses to %d %v", s, s.String(), back, ok)
		}
	}
	if _, ok := ParseState("Bogus"); ok {
		t.Error("Bogus parsed")
	}
}
