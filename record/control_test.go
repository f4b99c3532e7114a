package record

import (
	"errors"
	"testing"
)

func TestEndTxnMarkerRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    EndTxnMarker
	}{
		{"abort", EndTxnMarker{Type: ControlAbort, CoordinatorEpoch: 0}},
		{"commit", EndTxnMarker{Type: ControlCommit, CoordinatorEpoch: 7}},
		{"negative epoch", EndTxnMarker{Type: ControlCommit, CoordinatorEpoch: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			buf := AppendEndTxnMarker(nil, MarkerOptions{BaseOffset: 42, ProducerID: 9, ProducerEpoch: 3, Timestamp: 1000}, tc.m)
			if _, err := Validate(buf); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			b := Batch(buf)
			if !b.Control() || !b.Transactional() || b.ProducerID() != 9 || b.ProducerEpoch() != 3 || b.BaseSequence() != NoSequence || b.BaseOffset() != 42 {
				t.Fatalf("header: control %v txn %v pid %d epoch %d seq %d base %d", b.Control(), b.Transactional(), b.ProducerID(), b.ProducerEpoch(), b.BaseSequence(), b.BaseOffset())
			}
			got, ok, err := BatchEndTxnMarker(b)
			if err != nil || !ok || got != tc.m {
				t.Fatalf("BatchEndTxnMarker = %+v, %v, %v; want %+v", got, ok, err, tc.m)
			}
		})
	}
}

// TestEndTxnMarkerKafkaBytes checks the record key and value bytes against
// Kafka's layout: key 00 00 | 00 01 for COMMIT, value 00 00 | epoch.
func TestEndTxnMarkerKafkaBytes(t *testing.T) {
	buf := AppendEndTxnMarker(nil, MarkerOptions{ProducerID: 1}, EndTxnMarker{Type: ControlCommit, CoordinatorEpoch: 0x01020304})
	var it Iter
	it.Reset(Batch(buf))
	if !it.Next() {
		t.Fatal(it.Err())
	}
	r := it.Record()
	if string(r.Key) != "\x00\x00\x00\x01" || string(r.Value) != "\x00\x00\x01\x02\x03\x04" {
		t.Fatalf("key %x value %x", r.Key, r.Value)
	}
}

func TestParseEndTxnMarkerErrors(t *testing.T) {
	for _, tc := range []struct {
		name       string
		key, value []byte
	}{
		{"short key", []byte{0, 0, 0}, []byte{0, 0, 0, 0, 0, 0}},
		{"key version", []byte{0, 1, 0, 0}, []byte{0, 0, 0, 0, 0, 0}},
		{"unknown type", []byte{0, 0, 0, 5}, []byte{0, 0, 0, 0, 0, 0}},
		{"short value", []byte{0, 0, 0, 1}, []byte{0, 0, 0}},
		{"value version", []byte{0, 0, 0, 1}, []byte{0, 1, 0, 0, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ParseEndTxnMarker(tc.key, tc.value); !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
		})
	}
}

func TestBatchEndTxnMarkerNotControl(t *testing.T) {
	buf := AppendBatch(nil, BatchOptions{ProducerID: -1}, []BuildRecord{{Value: []byte("x")}})
	if _, ok, err := BatchEndTxnMarker(Batch(buf)); ok || err != nil {
		t.Fatalf("ok %v err %v", ok, err)
	}
}

// FuzzParseEndTxnMarker parses arbitrary control record keys and values.
// Invariants: it never panics; what it accepts is an ABORT or COMMIT
// marker, and the marker built from the result parses back the same.
func FuzzParseEndTxnMarker(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1}, []byte{0, 0, 0, 0, 0, 3})
	f.Add([]byte{0, 0, 0, 0}, []byte{0, 0, 0xff, 0xff, 0xff, 0xff, 9})
	f.Add([]byte{0, 0}, []byte{})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		m, err := ParseEndTxnMarker(key, value)
		if err != nil {
			return
		}
		if m.Type != ControlAbort && m.Type != ControlCommit {
			t.Fatalf("accepted type %d", m.Type)
		}
		got, ok, err := BatchEndTxnMarker(Batch(AppendEndTxnMarker(nil, MarkerOptions{ProducerID: 1}, m)))
		if err != nil || !ok || got != m {
			t.Fatalf("round trip of %+v: %+v, %v, %v", m, got, ok, err)
		}
	})
}
