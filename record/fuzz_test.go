package record

import (
	"encoding/binary"
	"errors"
	"runtime"
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

// isKind reports whether err is one of the validation kinds.
func isKind(err error) bool {
	return errors.Is(err, ErrCorrupt) || errors.Is(err, ErrInvalid) || errors.Is(err, ErrUnsupported) ||
		errors.Is(err, ErrInvalidTimestamp) || errors.Is(err, ErrTooLarge)
}

// kindOf names the kind of a validation error ("" for nil).
func kindOf(err error) string {
	for _, k := range []error{ErrCorrupt, ErrInvalid, ErrUnsupported, ErrInvalidTimestamp, ErrTooLarge} {
		if errors.Is(err, k) {
			return k.Error()
		}
	}
	if err != nil {
		return "unclassified: " + err.Error()
	}
	return ""
}

// builderSeeds are batches AppendBatch builds with every codec (snappy
// both raw and xerial-framed), as a fuzz corpus starts from them.
func builderSeeds() [][]byte {
	opts := BatchOptions{LeaderEpoch: -1, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
	var seeds [][]byte
	for _, c := range allCodecs {
		o := opts
		o.Codec, o.XerialSnappy = c.codec, c.xerial
		seeds = append(seeds, AppendBatch(nil, o, testRecords()), AppendBatch(nil, o, testRecords()[:1]))
	}
	return seeds
}

// fuzzRules bound the decompressed size tightly, so that inputs reach the
// bound, and timestamps to a window around the test records' timestamps.
var fuzzRules = Rules{MaxDecompressed: 1 << 20, TimestampBeforeMax: 1 << 30, TimestampAfterMax: 1 << 30, Now: testBaseTs}

// FuzzValidateAppend feeds arbitrary bytes, starting from batches the
// builder makes with each codec (gzip, snappy raw and xerial, lz4, zstd),
// to ValidateAppend. Invariants:
//   - it never panics, and its errors are *BatchError of a known kind;
//   - it never accepts a batch whose records do not iterate cleanly: an
//     accepted batch passes Validate too, and Iter yields exactly
//     recordCount records with offsets base+0..base+n-1 and no error;
//   - memory is bounded: one call allocates at most 24 MiB, whatever the
//     batch claims to expand to (the decoders' windows and block buffers,
//     never the expansion: fuzzRules.MaxDecompressed is 1 MiB).
func FuzzValidateAppend(f *testing.F) {
	for _, s := range builderSeeds() {
		f.Add(s)
	}
	for _, s := range seedBatches(f) {
		f.Add(s)
	}
	var it Iter
	var before, after runtime.MemStats
	f.Fuzz(func(t *testing.T, data []byte) {
		runtime.ReadMemStats(&before)
		n, records, err := ValidateAppend(data, &fuzzRules)
		runtime.ReadMemStats(&after)
		if a := after.TotalAlloc - before.TotalAlloc; a > 24<<20 {
			t.Fatalf("ValidateAppend of %d bytes allocated %d bytes", len(data), a)
		}
		if err != nil {
			var be *BatchError
			if !isKind(err) || !errors.As(err, &be) || n != 0 {
				t.Fatalf("ValidateAppend = %d, %v: not a classified *BatchError", n, err)
			}
			return
		}
		if _, _, err := ValidateAll(data); err != nil {
			t.Fatalf("ValidateAppend accepted what ValidateAll refuses: %v", err)
		}
		var got int64
		for pos := 0; pos < len(data); {
			b := Batch(data[pos:])
			b = b[:b.Size()]
			it.Reset(b)
			i := int64(0)
			for it.Next() {
				if it.Offset() != b.BaseOffset()+i {
					t.Fatalf("batch at %d: record %d has offset %d", pos, i, it.Offset())
				}
				i++
			}
			if it.Err() != nil || i != int64(b.RecordCount()) {
				t.Fatalf("accepted batch at %d (codec %d) iterates %d of %d records, err %v", pos, b.Codec(), i, b.RecordCount(), it.Err())
			}
			got += i
			pos += b.Size()
		}
		if got != records {
			t.Fatalf("ValidateAppend counted %d records, Iter %d", records, got)
		}
	})
}

// FuzzValidateCompressed builds a batch around a fuzzed records block
// twice, uncompressed and compressed with a fuzzed codec (gzip, snappy raw
// or xerial, lz4, zstd), header fields and CRC correct. Invariants:
//   - neither validation panics;
//   - the two verdicts are the same kind: the streaming walk of compressed
//     records (stream.go) accepts and refuses exactly what the in-place
//     walk of uncompressed records (parseRecord) does;
//   - an accepted compressed batch iterates cleanly (as FuzzValidateAppend).
func FuzzValidateCompressed(f *testing.F) {
	for _, s := range builderSeeds() {
		b := Batch(s)
		if b.Codec() == CodecNone {
			for _, c := range codecCases {
				f.Add(uint8(c.codec), c.xerial, uint16(b.RecordCount()), []byte(b.Records()))
			}
		}
	}
	f.Add(uint8(CodecGzip), false, uint16(2), append(recs(0, 1), 1, 2, 3))
	f.Add(uint8(CodecZstd), false, uint16(3), recs(0, 1, 3))
	f.Add(uint8(CodecLZ4), false, uint16(2), append(encRec(0, 0, []byte("abc"), 1), recs(1)...))
	f.Add(uint8(CodecSnappy), true, uint16(1), encRec(-1<<40, 0, nil, 0))
	var it Iter
	f.Fuzz(func(t *testing.T, codec uint8, xerial bool, count uint16, raw []byte) {
		c := int32(count%1000) + 1
		plain := batchOf(raw, c, c-1)
		cc := int(codec%4) + 1
		comp := compressBatch(t, plain, cc, xerial)
		_, _, perr := ValidateAppend(plain, &fuzzRules)
		_, _, cerr := ValidateAppend(comp, &fuzzRules)
		if kindOf(perr) != kindOf(cerr) {
			t.Fatalf("codec %d: uncompressed verdict %v, compressed %v", cc, perr, cerr)
		}
		if cerr != nil {
			return
		}
		it.Reset(Batch(comp))
		i := int32(0)
		for it.Next() {
			i++
		}
		if it.Err() != nil || i != c {
			t.Fatalf("accepted compressed batch iterates %d of %d records, err %v", i, c, it.Err())
		}
	})
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
		// Each check takes what the stricter one takes, at the same size:
		// Validate (a producer's batch, records walked) within
		// ValidateStored (cleaned batches allowed) within
		// ValidateReplicated (a data batch's records not walked).
		ns, errS := ValidateStored(data)
		nr, errR := ValidateReplicated(data)
		if errS != nil && !isKind(errS) || errR != nil && !isKind(errR) {
			t.Fatalf("ValidateStored %v or ValidateReplicated %v is not classified", errS, errR)
		}
		if err == nil && (errS != nil || ns != n) || errS == nil && (errR != nil || nr != ns) {
			t.Fatalf("Validate %d, %v; ValidateStored %d, %v; ValidateReplicated %d, %v", n, err, ns, errS, nr, errR)
		}
		if errR == nil {
			// What a follower took may reach a consumer or the cleaner:
			// reading it fails cleanly, never panics.
			it.Reset(Batch(data[:nr:nr]))
			for it.Next() {
			}
			if e := it.Err(); e != nil && !isKind(e) {
				t.Fatalf("Iter error %v on a replicated batch is not classified", e)
			}
		}
	})
}

// FuzzIter wraps arbitrary bytes as the records block of a batch with a
// fuzzed codec and record count and a correct CRC, so that Iter sees
// decompressor and record-parser input no producer would send. Invariants:
//   - Iter never panics;
//   - it yields at most recordCount records;
//   - its error, if any, is ErrCorrupt, ErrInvalid or ErrTooLarge (a
//     block that decompresses past MaxDecompressed);
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
		if err := it.Err(); err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrTooLarge) {
			t.Fatalf("Iter error %v is not classified", err)
		}
	})
}

// FuzzScanRecord holds the validator's fast record scanner to parseRecord:
// on any bytes both accept or both refuse, and agree on what they read.
// Seeds cover the one-, two- and many-byte varint forms at every field,
// null and empty keys and values, headers, and the boundaries around them.
func FuzzScanRecord(f *testing.F) {
	f.Add(encRec(0, 0, []byte("v"), 0))
	f.Add(encRec(-1, 63, nil, 0))
	f.Add(encRec(-64, 64, make([]byte, 63), 0))
	f.Add(encRec(8191, 8192, make([]byte, 8191), 0))
	f.Add(encRec(-8193, 1<<40, make([]byte, 9000), 0))
	f.Add(encRec(0, 0, []byte("v"), 1))
	f.Add(encRec(0, 0, []byte("v"), -1))
	f.Add(encRec(0, -1, []byte("v"), 0))
	withHeaders := func(keys, values [][]byte) []byte {
		body := []byte{0, 0, 0}
		body = binary.AppendVarint(body, 3)
		body = append(body, "key"...)
		body = binary.AppendVarint(body, -1)
		body = binary.AppendVarint(body, int64(len(keys)))
		for i := range keys {
			body = appendVarBytes(body, keys[i])
			body = appendVarBytes(body, values[i])
		}
		return append(binary.AppendVarint(nil, int64(len(body))), body...)
	}
	f.Add(withHeaders([][]byte{[]byte("h"), {}}, [][]byte{nil, []byte("x")}))
	f.Add(withHeaders([][]byte{nil}, [][]byte{[]byte("x")}))
	f.Add([]byte{0x80})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		var r Record
		want, err := parseRecord(b, &r)
		n, tsDelta, offsetDelta, nullKey, ok := scanRecord(b)
		if ok != (err == nil) {
			t.Fatalf("scanRecord ok=%v, parseRecord error %v", ok, err)
		}
		if !ok {
			return
		}
		if n != want || tsDelta != r.TimestampDelta || offsetDelta != r.OffsetDelta || nullKey != (r.Key == nil) {
			t.Fatalf("scanRecord = %d, %d, %d, %v; parseRecord = %d, %d, %d, key nil %v",
				n, tsDelta, offsetDelta, nullKey, want, r.TimestampDelta, r.OffsetDelta, r.Key == nil)
		}
	})
}
