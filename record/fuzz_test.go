package record

import (
	"encoding/binary"
	"errors"
	"testing"
)

// seedBatches adds valid batches of every codec, and a few damaged ones,
// to a fuzz corpus.
func seedBatches(f *testing.F) [][]byte {
	var seeds [][]byte
	plain := newBatch(testRecords())
	seeds = append(seeds, plain, newBatch(testRecords()[:1]))
	for _, c := range codecCases {
		seeds = append(seeds, compressBatch(f, plain, c.codec, c.xerial))
	}
	two := append(append([]byte(nil), plain...), plain...)
	seeds = append(seeds, two, plain[:HeaderSize], plain[:len(plain)-1], nil)
	return seeds
}

// isKind reports whether err is one of the three validation kinds.
func isKind(err error) bool {
	return errors.Is(err, ErrCorrupt) || errors.Is(err, ErrInvalid) || errors.Is(err, ErrUnsupported)
}

// FuzzValidate feeds arbitrary bytes to Validate and ValidateAll. Invariants:
//   - neither panics;
//   - an error is a *BatchError of kind ErrCorrupt, ErrInvalid or
//     ErrUnsupported, with size 0;
//   - a returned size is in [HeaderSize, len(input)];
//   - re-validating exactly the accepted bytes gives the same size (the
//     verdict does not depend on what follows the batch);
//   - Iter over an accepted batch never panics, yields at most recordCount
//     records, and for an uncompressed batch yields exactly recordCount
//     with no error (Validate already walked them).
func FuzzValidate(f *testing.F) {
	for _, s := range seedBatches(f) {
		f.Add(s)
	}
	var it Iter
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := Validate(data)
		if err != nil {
			var be *BatchError
			if !isKind(err) || !errors.As(err, &be) || n != 0 {
				t.Fatalf("Validate = %d, %v: not a classified *BatchError with size 0", n, err)
			}
		} else {
			if n < HeaderSize || n > len(data) {
				t.Fatalf("Validate size %d outside [%d, %d]", n, HeaderSize, len(data))
			}
			if n2, err2 := Validate(data[:n:n]); err2 != nil || n2 != n {
				t.Fatalf("re-Validate of the accepted %d bytes = %d, %v", n, n2, err2)
			}
			b := Batch(data[:n:n])
			it.Reset(b)
			got := int32(0)
			for it.Next() {
				got++
				if got > b.RecordCount() {
					t.Fatalf("Iter yielded more than recordCount %d", b.RecordCount())
				}
			}
			if b.Codec() == CodecNone && (it.Err() != nil || got != b.RecordCount()) {
				t.Fatalf("uncompressed batch passed Validate but Iter gave %d of %d records, err %v", got, b.RecordCount(), it.Err())
			}
			if e := it.Err(); e != nil && !isKind(e) {
				t.Fatalf("Iter error %v is not classified", e)
			}
		}
		if _, _, err := ValidateAll(data); err != nil && !isKind(err) {
			t.Fatalf("ValidateAll error %v is not classified", err)
		}
	})
}

// FuzzIter wraps arbitrary bytes as the records block of a batch with a
// fuzzed codec and record count and a correct CRC, so that Iter sees
// decompressor and record-parser input no producer would send. Invariants:
//   - Iter never panics;
//   - it yields at most recordCount records;
//   - its error, if any, is ErrCorrupt or ErrInvalid;
//   - offsets it reports are base + offsetDelta with offsetDelta >= 0.
func FuzzIter(f *testing.F) {
	for _, s := range seedBatches(f) {
		if len(s) >= HeaderSize {
			b := Batch(s)
			if n, ok := PeekSize(s); ok && n <= len(s) && n >= HeaderSize {
				f.Add(uint8(b.Codec()), uint16(b.RecordCount()), []byte(b[HeaderSize:n]))
			}
		}
	}
	var it Iter
	f.Fuzz(func(t *testing.T, codec uint8, count uint16, block []byte) {
		b := make([]byte, HeaderSize, HeaderSize+len(block))
		b = append(b, block...)
		binary.BigEndian.PutUint32(b[offBatchLength:], uint32(len(b)-LogOverhead))
		b[offMagic] = Magic
		binary.BigEndian.PutUint16(b[offAttributes:], uint16(codec%5))
		c := int32(count%1000) + 1
		binary.BigEndian.PutUint32(b[offLastOffsetDelta:], uint32(c-1))
		binary.BigEndian.PutUint32(b[offRecordCount:], uint32(c))
		binary.BigEndian.PutUint64(b[offBaseOffset:], 1000)
		fixCRC(b)
		if _, err := Validate(b); err != nil {
			if !isKind(err) {
				t.Fatalf("Validate error %v is not classified", err)
			}
			if Batch(b).Codec() != CodecNone {
				t.Fatalf("compressed batch with a correct header failed Validate: %v", err)
			}
			return
		}
		it.Reset(Batch(b))
		got := int32(0)
		for it.Next() {
			got++
			if got > c {
				t.Fatalf("Iter yielded more than recordCount %d", c)
			}
			if it.Offset() < 1000 {
				t.Fatalf("record offset %d below the base 1000", it.Offset())
			}
		}
		if err := it.Err(); err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrInvalid) {
			t.Fatalf("Iter error %v is not classified", err)
		}
	})
}
