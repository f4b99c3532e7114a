package sharecoord

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/sluice/sluice/group/share"
)

var testKey = share.Key{Group: "g", Topic: [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, Partition: 7}

func TestRecordsRoundTrip(t *testing.T) {
	batches := []share.StateBatch{{First: 10, Last: 12, DeliveryState: share.Acknowledged, DeliveryCount: 1}, {First: 13, Last: 13, DeliveryState: share.Available, DeliveryCount: 3}}
	for _, tc := range []struct {
		name string
		typ  int16
		v    Value
		enc  func([]byte, Value) []byte
	}{
		{"snapshot", TypeSnapshot, Value{SnapshotEpoch: 4, StateEpoch: 2, LeaderEpoch: 9, StartOffset: 10, CreateTime: 111, WriteTime: 222, Batches: batches}, AppendSnapshotValue},
		{"update", TypeUpdate, Value{SnapshotEpoch: 4, LeaderEpoch: 9, StartOffset: -1, Batches: batches}, AppendUpdateValue},
		{"empty snapshot", TypeSnapshot, Value{StartOffset: 5}, AppendSnapshotValue},
		{"snapshot with dead letters", TypeSnapshot, Value{StartOffset: 5, Batches: batches, DLQ: &DLQState{ProducerID: 7, ProducerEpoch: 1, NextSeq: 5,
			Pending: []DLQChunk{{BaseSeq: 2, Letters: []share.DeadLetter{{Offset: 3, Deliveries: 2, Rejected: true}, {Offset: 9, Deliveries: 5}}}, {BaseSeq: 4}}}}, AppendSnapshotValue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := AppendKey(nil, tc.typ, testKey)
			typ, k, err := DecodeKey(key)
			if err != nil || typ != tc.typ || k != testKey {
				t.Fatalf("key: %d %+v %v", typ, k, err)
			}
			val := tc.enc(nil, tc.v)
			got, err := DecodeValue(tc.typ, val)
			if err != nil {
				t.Fatal(err)
			}
			if got.SnapshotEpoch != tc.v.SnapshotEpoch || got.StateEpoch != tc.v.StateEpoch || got.LeaderEpoch != tc.v.LeaderEpoch ||
				got.StartOffset != tc.v.StartOffset || got.CreateTime != tc.v.CreateTime || got.WriteTime != tc.v.WriteTime ||
				!slices.Equal(got.Batches, tc.v.Batches) || !bytes.Equal(appendDLQOrNil(got.DLQ), appendDLQOrNil(tc.v.DLQ)) {
				t.Fatalf("decoded %+v, want %+v", got, tc.v)
			}
		})
	}
}

// TestSnapshotKeyBytes pins the key layout: type, int16-prefixed group,
// topic id, partition.
func TestSnapshotKeyBytes(t *testing.T) {
	got := AppendKey(nil, TypeSnapshot, testKey)
	want := append([]byte{0, 0, 0, 1, 'g'}, testKey.Topic[:]...)
	want = append(want, 0, 0, 0, 7)
	if !bytes.Equal(got, want) {
		t.Fatalf("key % x, want % x", got, want)
	}
}

func TestDecodeRefusesHugeCount(t *testing.T) {
	// version 0, epoch, leader epoch, start offset, then a compact array
	// claiming 2^28 batches in a few bytes.
	b := AppendUpdateValue(nil, Value{StartOffset: 1})
	b = b[:len(b)-2]
	b = append(b, 0x80, 0x80, 0x80, 0x80, 0x01, 0)
	if _, err := DecodeValue(TypeUpdate, b); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("got %v", err)
	}
}

func TestMergeBatches(t *testing.T) {
	old := []share.StateBatch{{First: 0, Last: 9, DeliveryState: share.Available, DeliveryCount: 1}}
	upd := []share.StateBatch{{First: 3, Last: 4, DeliveryState: share.Acknowledged, DeliveryCount: 1}}
	got := MergeBatches(old, upd, 2)
	want := []share.StateBatch{
		{First: 2, Last: 2, DeliveryState: share.Available, DeliveryCount: 1},
		{First: 3, Last: 4, DeliveryState: share.Acknowledged, DeliveryCount: 1},
		{First: 5, Last: 9, DeliveryState: share.Available, DeliveryCount: 1},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("merged %v, want %v", got, want)
	}
}

// FuzzDecode checks the record decoders: they never panic, a decoded value
// re-encodes to bytes that decode to the same value (stable), and a batch
// count never allocates beyond what the input can hold.
func FuzzDecode(f *testing.F) {
	f.Add(AppendKey(nil, TypeSnapshot, testKey), AppendSnapshotValue(nil, Value{StartOffset: 3, DLQ: &DLQState{ProducerID: 1, NextSeq: 2,
		Pending: []DLQChunk{{BaseSeq: 0, Letters: []share.DeadLetter{{Offset: 3, Deliveries: 1, Rejected: true}, {Offset: 4, Deliveries: 5}}}}}}))
	f.Add(AppendKey(nil, TypeSnapshot, testKey), AppendSnapshotValue(nil, Value{StartOffset: 3, Batches: []share.StateBatch{{First: 3, Last: 4, DeliveryState: 2, DeliveryCount: 1}}}))
	f.Add(AppendKey(nil, TypeUpdate, testKey), AppendUpdateValue(nil, Value{StartOffset: -1}))
	f.Add([]byte{0, 1}, []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0x0f, 0})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		typ, k, err := DecodeKey(key)
		if err == nil {
			if again := AppendKey(nil, typ, k); !bytes.Equal(again, key) {
				t.Fatalf("key not stable: % x vs % x", again, key)
			}
		} else {
			typ = int16(len(key) % 2)
		}
		v, err := DecodeValue(typ, value)
		if err != nil {
			return
		}
		if len(v.Batches) > len(value)/stateBatchSize {
			t.Fatalf("%d batches from %d bytes", len(v.Batches), len(value))
		}
		enc := AppendSnapshotValue
		if typ == TypeUpdate {
			enc = AppendUpdateValue
		}
		w, err := DecodeValue(typ, enc(nil, v))
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if w.StartOffset != v.StartOffset || !slices.Equal(w.Batches, v.Batches) ||
			(typ == TypeSnapshot && !bytes.Equal(appendDLQOrNil(w.DLQ), appendDLQOrNil(v.DLQ))) {
			t.Fatalf("unstable: %+v vs %+v", w, v)
		}
		// Replaying it never panics either.
		states := map[share.Key]*entry{}
		apply(states, typ, k, v, 0)
		apply(states, TypeUpdate, k, v, 0)
		share.Restore(states[k].snap, 128)
	})
}

// appendDLQOrNil is d's encoding, nil for nil.
func appendDLQOrNil(d *DLQState) []byte {
	if d == nil {
		return nil
	}
	return AppendDLQ(nil, d)
}

// FuzzDecodeDLQ checks the dead-letter bookkeeping's decoder: it never
// panics, allocates no more letters than the input can hold, and what it
// decodes re-encodes to bytes that decode to the same (re-parsing is
// stable; a non-minimal varint need not re-encode byte for byte).
func FuzzDecodeDLQ(f *testing.F) {
	f.Add(AppendDLQ(nil, &DLQState{ProducerID: 9, NextSeq: 3, Pending: []DLQChunk{{BaseSeq: 1, Letters: []share.DeadLetter{{Offset: 1, Deliveries: 2}, {Offset: 2, Rejected: true}}}}}))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := DecodeDLQ(b)
		if err != nil {
			return
		}
		n := 0
		for _, ch := range d.Pending {
			n += len(ch.Letters)
		}
		if n > len(b)/letterSize {
			t.Fatalf("%d letters from %d bytes", n, len(b))
		}
		enc := AppendDLQ(nil, d)
		d2, err := DecodeDLQ(enc)
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if again := AppendDLQ(nil, d2); !bytes.Equal(again, enc) {
			t.Fatalf("not stable: % x vs % x", again, enc)
		}
	})
}
