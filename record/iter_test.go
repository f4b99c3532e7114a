package record

import (
	"bytes"
	"errors"
	"testing"
)

type gotRecord struct {
	offset, ts int64
	key, value []byte
	headers    []Header
}

// collect iterates b and returns copies of its records.
func collect(t *testing.T, it *Iter, b []byte) []gotRecord {
	t.Helper()
	it.Reset(Batch(b))
	var out []gotRecord
	for it.Next() {
		r := it.Record()
		g := gotRecord{offset: it.Offset(), ts: it.Timestamp(), key: clone(r.Key), value: clone(r.Value)}
		r.Headers(func(k, v []byte) { g.headers = append(g.headers, Header{Key: string(k), Value: clone(v)}) })
		out = append(out, g)
	}
	if err := it.Err(); err != nil {
		t.Fatalf("Iter: %v", err)
	}
	return out
}

// clone keeps nil as nil, so null keys and values stay distinguishable.
func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// checkRecords compares what Iter yields with what AppendBatch was given,
// at base offset base.
func checkRecords(t *testing.T, got []gotRecord, want []BuildRecord, base int64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.offset != base+int64(i) || g.ts != w.Timestamp {
			t.Fatalf("record %d: offset %d ts %d, want %d %d", i, g.offset, g.ts, base+int64(i), w.Timestamp)
		}
		if (g.key == nil) != (w.Key == nil) || !bytes.Equal(g.key, w.Key) {
			t.Fatalf("record %d: key %q, want %q", i, g.key, w.Key)
		}
		if (g.value == nil) != (w.Value == nil) || !bytes.Equal(g.value, w.Value) {
			t.Fatalf("record %d: value %q, want %q", i, g.value, w.Value)
		}
		if len(g.headers) != len(w.Headers) {
			t.Fatalf("record %d: %d headers, want %d", i, len(g.headers), len(w.Headers))
		}
		for j, h := range w.Headers {
			if g.headers[j].Key != h.Key || !bytes.Equal(g.headers[j].Value, h.Value) || (g.headers[j].Value == nil) != (h.Value == nil) {
				t.Fatalf("record %d header %d: %+v, want %+v", i, j, g.headers[j], h)
			}
		}
	}
}

// TestIter walks uncompressed and compressed batches (every codec, both
// snappy framings) with one reused Iter and gets the records back.
func TestIter(t *testing.T) {
	recs := testRecords()
	var it Iter
	t.Run("none", func(t *testing.T) {
		b := newBatch(recs)
		Batch(b).SetBaseOffset(1000)
		checkRecords(t, collect(t, &it, b), recs, 1000)
	})
	for _, c := range codecCases {
		t.Run(c.name, func(t *testing.T) {
			b := compressBatch(t, newBatch(recs), c.codec, c.xerial)
			Batch(b).SetBaseOffset(42)
			if _, err := Validate(b); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			checkRecords(t, collect(t, &it, b), recs, 42)
			// Reset reuses the iterator's buffer: a second pass is the same.
			checkRecords(t, collect(t, &it, b), recs, 42)
		})
	}
}

// TestIterCorruptCompressed: damaged compressed data is an error from
// Err (ErrCorrupt or ErrInvalid), never a panic.
func TestIterCorruptCompressed(t *testing.T) {
	for _, c := range codecCases {
		t.Run(c.name, func(t *testing.T) {
			b := compressBatch(t, newBatch(testRecords()), c.codec, c.xerial)
			for i := HeaderSize; i < len(b); i += 3 {
				b[i] ^= 0x5A
			}
			fixCRC(b)
			var it Iter
			it.Reset(Batch(b))
			n := 0
			for it.Next() && n < 100 {
				n++
			}
			if err := it.Err(); err == nil {
				t.Fatalf("damaged %s block iterated without error (%d records)", c.name, n)
			} else if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v is neither ErrCorrupt nor ErrInvalid", err)
			}
		})
	}
}

// TestIterTooFewRecords: a compressed block holding fewer records than
// recordCount (which Validate cannot see) is ErrInvalid.
func TestIterTooFewRecords(t *testing.T) {
	recs := testRecords()
	b := compressBatch(t, newBatch(recs[:2]), CodecZstd, false)
	// Claim 4 records over a 2-record block.
	full := newBatch(recs)
	copy(b[offLastOffsetDelta:offLastOffsetDelta+4], full[offLastOffsetDelta:])
	copy(b[offRecordCount:offRecordCount+4], full[offRecordCount:])
	fixCRC(b)
	if _, err := Validate(b); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	var it Iter
	it.Reset(Batch(b))
	n := 0
	for it.Next() {
		n++
	}
	if n != 2 || !errors.Is(it.Err(), ErrInvalid) {
		t.Fatalf("got %d records, err %v; want 2 then ErrInvalid", n, it.Err())
	}
}

// TestIterNoAllocUncompressed: walking an uncompressed batch allocates nothing.
func TestIterNoAllocUncompressed(t *testing.T) {
	b := newBatch(testRecords())
	var it Iter
	if n := testing.AllocsPerRun(100, func() {
		it.Reset(Batch(b))
		for it.Next() {
		}
	}); n != 0 {
		t.Fatalf("Iter allocates %.1f times per batch", n)
	}
}

// TestSetLogAppendTime: the broker's LogAppendTime rewrite sets the
// timestamp type bit and maxTimestamp, keeps baseTimestamp, and leaves a
// valid CRC; every record then reads as the append time.
func TestSetLogAppendTime(t *testing.T) {
	for _, c := range append([]struct {
		name   string
		codec  int
		xerial bool
	}{{"none", CodecNone, false}}, codecCases...) {
		t.Run(c.name, func(t *testing.T) {
			b := newBatch(testRecords())
			if c.codec != CodecNone {
				b = compressBatch(t, b, c.codec, c.xerial)
			}
			bt := Batch(b)
			baseTs, attrs := bt.BaseTimestamp(), bt.Attributes()
			const at = 1_800_000_000_000
			bt.SetLogAppendTime(at)
			if _, err := Validate(b); err != nil {
				t.Fatalf("Validate after SetLogAppendTime: %v", err)
			}
			if !bt.LogAppendTime() || bt.MaxTimestamp() != at || bt.BaseTimestamp() != baseTs {
				t.Fatalf("LogAppendTime %v max %d base %d; want true %d %d", bt.LogAppendTime(), bt.MaxTimestamp(), bt.BaseTimestamp(), int64(at), baseTs)
			}
			if bt.Attributes()&^TimestampTypeBit != attrs || bt.Codec() != c.codec {
				t.Fatalf("attributes %x, want %x plus the timestamp type bit", bt.Attributes(), attrs)
			}
			var it Iter
			for _, r := range collect(t, &it, b) {
				if r.ts != at {
					t.Fatalf("record %d timestamp %d, want %d", r.offset, r.ts, int64(at))
				}
			}
		})
	}
}
