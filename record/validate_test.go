package record

import (
	"encoding/binary"
	"errors"
	"testing"
)

// TestValidate covers each error kind Validate reports, with the kind a
// Kafka broker would map to an error code.
func TestValidate(t *testing.T) {
	good := func() []byte { return newBatch(testRecords()) }
	tests := []struct {
		name string
		mk   func() []byte
		want error // nil: valid
	}{
		{"valid", good, nil},
		{"valid-single-record", func() []byte { return newBatch(testRecords()[:1]) }, nil},
		{"empty", func() []byte { return nil }, ErrCorrupt},
		{"short-header", func() []byte { return good()[:HeaderSize-1] }, ErrCorrupt},
		{"length-below-header", func() []byte {
			b := good()
			binary.BigEndian.PutUint32(b[offBatchLength:], HeaderSize-LogOverhead-1)
			return b
		}, ErrCorrupt},
		{"length-negative", func() []byte {
			b := good()
			binary.BigEndian.PutUint32(b[offBatchLength:], 0xFFFFFFF0)
			return b
		}, ErrCorrupt},
		{"length-past-input", func() []byte { b := good(); return b[:len(b)-1] }, ErrCorrupt},
		{"length-huge", func() []byte {
			b := good()
			binary.BigEndian.PutUint32(b[offBatchLength:], MaxBatchSize+1)
			return b
		}, ErrCorrupt},
		{"magic-1", func() []byte { b := good(); b[offMagic] = 1; return b }, ErrUnsupported},
		{"magic-3", func() []byte { b := good(); b[offMagic] = 3; return b }, ErrUnsupported},
		{"crc", func() []byte { b := good(); b[offCRC] ^= 1; return b }, ErrCorrupt},
		{"crc-covers-records", func() []byte { b := good(); b[len(b)-1] ^= 0x80; return b }, ErrCorrupt},
		{"count-mismatch", func() []byte {
			b := good()
			binary.BigEndian.PutUint32(b[offRecordCount:], 3)
			fixCRC(b)
			return b
		}, ErrInvalid},
		{"negative-last-offset-delta", func() []byte {
			b := good()
			binary.BigEndian.PutUint32(b[offLastOffsetDelta:], 0xFFFFFFFF)
			binary.BigEndian.PutUint32(b[offRecordCount:], 0)
			fixCRC(b)
			return b
		}, ErrCorrupt},
		{"negative-record-offset-delta", func() []byte {
			b := newBatch([]BuildRecord{{Value: []byte("a")}, {Value: []byte("b")}})
			// Record 0: length(1 byte) attributes(1) tsDelta(1: 0) offsetDelta(1: 0).
			b[HeaderSize+3] = 0x01 // zig-zag -1
			fixCRC(b)
			return b
		}, ErrCorrupt},
		{"offset-delta-not-increasing", func() []byte {
			b := newBatch([]BuildRecord{{Value: []byte("a")}, {Value: []byte("b")}})
			// Record 1 starts after record 0; both have tsDelta 0.
			r0 := HeaderSize + 1 + int(b[HeaderSize]>>1)
			b[r0+3] = 0x00 // delta 0 again
			fixCRC(b)
			return b
		}, ErrInvalid},
		{"offset-delta-past-last", func() []byte {
			b := newBatch([]BuildRecord{{Value: []byte("a")}, {Value: []byte("b")}})
			r0 := HeaderSize + 1 + int(b[HeaderSize]>>1)
			b[r0+3] = 0x04 // delta 2 with lastOffsetDelta 1
			fixCRC(b)
			return b
		}, ErrInvalid},
		{"trailing-bytes-in-batch", func() []byte {
			b := append(good(), 0, 0, 0)
			binary.BigEndian.PutUint32(b[offBatchLength:], uint32(len(b)-LogOverhead))
			fixCRC(b)
			return b
		}, ErrCorrupt},
		{"truncated-record", func() []byte {
			b := good()
			b = b[:len(b)-2]
			binary.BigEndian.PutUint32(b[offBatchLength:], uint32(len(b)-LogOverhead))
			fixCRC(b)
			return b
		}, ErrCorrupt},
		{"unknown-codec", func() []byte {
			b := good()
			binary.BigEndian.PutUint16(b[offAttributes:], 5)
			fixCRC(b)
			return b
		}, ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.mk()
			n, err := Validate(b)
			if tc.want == nil {
				if err != nil || n != len(b) {
					t.Fatalf("Validate = %d, %v; want %d, nil", n, err, len(b))
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("Validate error %v, want errors.Is %v", err, tc.want)
			}
			for _, other := range []error{ErrCorrupt, ErrInvalid, ErrUnsupported} {
				if other != tc.want && errors.Is(err, other) {
					t.Fatalf("error %v is also %v", err, other)
				}
			}
			var be *BatchError
			if !errors.As(err, &be) {
				t.Fatalf("error %T is not a *BatchError", err)
			}
			if n != 0 {
				t.Fatalf("Validate returned size %d with an error", n)
			}
		})
	}
}

// TestRecordPatchPositions checks the byte positions TestValidate patches
// in a two-record batch: record i's offsetDelta is byte 3 of the record
// (length, attributes, tsDelta 0, offsetDelta i as zig-zag).
func TestRecordPatchPositions(t *testing.T) {
	b := newBatch([]BuildRecord{{Value: []byte("a")}, {Value: []byte("b")}})
	r0 := HeaderSize + 1 + int(b[HeaderSize]>>1)
	if b[HeaderSize+2] != 0 || b[HeaderSize+3] != 0 || b[r0+2] != 0 || b[r0+3] != 0x02 {
		t.Fatalf("record encoding changed: % x", b[HeaderSize:])
	}
}

// TestValidateTrailingAfterBatch: bytes after a batch are not Validate's
// business (it returns the size); ValidateAll treats them as the next batch.
func TestValidateTrailingAfterBatch(t *testing.T) {
	b := newBatch(testRecords())
	n := len(b)
	b = append(b, 1, 2, 3)
	if got, err := Validate(b); err != nil || got != n {
		t.Fatalf("Validate = %d, %v; want %d, nil", got, err, n)
	}
	_, _, err := ValidateAll(b)
	var be *BatchError
	if !errors.Is(err, ErrCorrupt) || !errors.As(err, &be) || be.Pos != n {
		t.Fatalf("ValidateAll with 3 trailing bytes: %v; want ErrCorrupt at byte %d", err, n)
	}
}

// TestValidateAll counts batches and records and reports the position of
// the failing batch.
func TestValidateAll(t *testing.T) {
	a := newBatch(testRecords())
	b := newBatch(testRecords()[:2])
	buf := append(append([]byte(nil), a...), b...)
	batches, records, err := ValidateAll(buf)
	if err != nil || batches != 2 || records != 6 {
		t.Fatalf("ValidateAll = %d, %d, %v; want 2, 6, nil", batches, records, err)
	}
	bad := append(append([]byte(nil), a...), b...)
	bad[len(a)+offCRC] ^= 0xFF
	_, _, err = ValidateAll(bad)
	var be *BatchError
	if !errors.As(err, &be) || be.Pos != len(a) || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("ValidateAll with a bad second batch: %v; want ErrCorrupt at %d", err, len(a))
	}
	if _, _, err := ValidateAll(nil); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("ValidateAll(nil) = %v, want ErrCorrupt", err)
	}
}

// TestValidateCompressed: compressed batches validate (the CRC covers the
// compressed block), and Validate does not decompress.
func TestValidateCompressed(t *testing.T) {
	for _, c := range codecCases {
		t.Run(c.name, func(t *testing.T) {
			b := compressBatch(t, newBatch(testRecords()), c.codec, c.xerial)
			if n, err := Validate(b); err != nil || n != len(b) {
				t.Fatalf("Validate = %d, %v", n, err)
			}
			if Batch(b).Codec() != c.codec {
				t.Fatalf("codec %d, want %d", Batch(b).Codec(), c.codec)
			}
		})
	}
}

// TestValidateNoAlloc: the broker validates every produced batch; it must
// not allocate on success.
func TestValidateNoAlloc(t *testing.T) {
	b := newBatch(testRecords())
	if n := testing.AllocsPerRun(100, func() {
		if _, err := Validate(b); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("Validate allocates %.1f times per call", n)
	}
}

// TestPeekSize reads the size without validating.
func TestPeekSize(t *testing.T) {
	b := newBatch(testRecords())
	if n, ok := PeekSize(b); !ok || n != len(b) {
		t.Fatalf("PeekSize = %d, %v; want %d, true", n, ok, len(b))
	}
	if _, ok := PeekSize(b[:LogOverhead-1]); ok {
		t.Fatalf("PeekSize of %d bytes ok", LogOverhead-1)
	}
}

// TestLastSequence: producer sequences wrap at MaxInt32, as Kafka's do.
func TestLastSequence(t *testing.T) {
	tests := []struct {
		base, delta, want int32
	}{
		{0, 0, 0},
		{5, 3, 8},
		{1<<31 - 1, 0, 1<<31 - 1},
		{1<<31 - 1, 1, 0},
		{1<<31 - 2, 3, 1},
	}
	for _, tc := range tests {
		if got := seqAdd(tc.base, tc.delta); got != tc.want {
			t.Errorf("seqAdd(%d, %d) = %d, want %d", tc.base, tc.delta, got, tc.want)
		}
	}
}
