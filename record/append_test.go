package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// encRec encodes one record (no key, no headers) with its varint length
// adjusted by lenAdj, so that tests can make the length lie.
func encRec(tsDelta, offDelta int64, value []byte, lenAdj int) []byte {
	var body []byte
	body = append(body, 0)
	body = binary.AppendVarint(body, tsDelta)
	body = binary.AppendVarint(body, offDelta)
	body = binary.AppendVarint(body, -1)
	body = appendVarBytes(body, value)
	body = binary.AppendVarint(body, 0)
	return append(binary.AppendVarint(nil, int64(len(body)+lenAdj)), body...)
}

// recs encodes records with the given offset deltas and timestamp deltas 0.
func recs(deltas ...int64) []byte {
	var raw []byte
	for _, d := range deltas {
		raw = append(raw, encRec(0, d, []byte("value"), 0)...)
	}
	return raw
}

const testBaseTs = 1_700_000_000_000

// batchOf builds a batch around a records block with the given
// recordCount and lastOffsetDelta, uncompressed.
func batchOf(raw []byte, count, lod int32) []byte {
	hdr := newBatch([]BuildRecord{{Value: []byte("x"), Timestamp: testBaseTs}})
	b := withRecords(hdr, raw)
	binary.BigEndian.PutUint32(b[offRecordCount:], uint32(count))
	binary.BigEndian.PutUint32(b[offLastOffsetDelta:], uint32(lod))
	fixCRC(b)
	return b
}

// allCodecs is codecCases plus uncompressed.
var allCodecs = append([]struct {
	name   string
	codec  int
	xerial bool
}{{"none", CodecNone, false}}, codecCases...)

// encode returns b compressed as codec c names (b itself for none).
func encode(t testing.TB, b []byte, codec int, xerial bool) []byte {
	if codec == CodecNone {
		return b
	}
	return compressBatch(t, b, codec, xerial)
}

// TestValidateAppend runs each rule over every codec: the records block is
// built (and damaged) uncompressed, then compressed, so every case reaches
// the record checks with a correct CRC.
func TestValidateAppend(t *testing.T) {
	hour := int64(3_600_000)
	bounded := Rules{MaxDecompressed: 1 << 20, TimestampBeforeMax: hour, TimestampAfterMax: hour, Now: testBaseTs}
	def := DefaultRules()
	withHeaders := func(hc int64, tail []byte) []byte {
		var body []byte
		body = append(body, 0, 0, 0) // attributes, tsDelta 0, offsetDelta 0
		body = binary.AppendVarint(body, -1)
		body = binary.AppendVarint(body, -1)
		body = binary.AppendVarint(body, hc)
		body = append(body, tail...)
		return append(binary.AppendVarint(nil, int64(len(body))), body...)
	}
	tsRec := func(tsDelta int64) []byte { return encRec(tsDelta, 0, []byte("v"), 0) }
	tests := []struct {
		name  string
		batch func() []byte // uncompressed; compressed per codec by the test
		rules Rules
		want  error
	}{
		{"valid", func() []byte { return batchOf(recs(0, 1, 2, 3), 4, 3) }, def, nil},
		{"valid-builder", func() []byte { return newBatch(testRecords()) }, def, nil},
		{"valid-timestamps-in-range", func() []byte { return batchOf(append(tsRec(-hour), encRec(hour, 1, nil, 0)...), 2, 1) }, bounded, nil},
		{"count-below-records", func() []byte { return batchOf(recs(0, 1, 2, 3), 3, 2) }, def, ErrCorrupt},
		{"count-above-records", func() []byte { return batchOf(recs(0, 1, 2, 3), 5, 4) }, def, ErrCorrupt},
		{"count-mismatch-last-offset-delta", func() []byte { return batchOf(recs(0, 1, 2, 3), 4, 4) }, def, ErrInvalid},
		{"count-zero", func() []byte { return batchOf(nil, 0, -1) }, def, ErrCorrupt},
		{"count-overflow", func() []byte { return batchOf(recs(0), math.MinInt32, math.MaxInt32) }, def, ErrCorrupt},
		{"count-negative", func() []byte { return batchOf(recs(0), -5, 0) }, def, ErrCorrupt},
		{"last-offset-delta-negative", func() []byte { return batchOf(recs(0), 1, -1) }, def, ErrCorrupt},
		{"delta-gap", func() []byte { return batchOf(recs(0, 1, 3), 3, 2) }, def, ErrInvalid},
		{"delta-repeated", func() []byte { return batchOf(recs(0, 0, 1), 3, 2) }, def, ErrInvalid},
		{"delta-not-from-zero", func() []byte { return batchOf(recs(1, 2), 2, 1) }, def, ErrInvalid},
		{"delta-swapped", func() []byte { return batchOf(recs(1, 0), 2, 1) }, def, ErrInvalid},
		{"record-length-long", func() []byte {
			return batchOf(append(encRec(0, 0, []byte("abc"), 1), recs(1)...), 2, 1)
		}, def, ErrCorrupt},
		{"record-length-short", func() []byte {
			return batchOf(append(encRec(0, 0, []byte("abc"), -1), recs(1)...), 2, 1)
		}, def, ErrCorrupt},
		{"record-length-past-block", func() []byte { return batchOf(encRec(0, 0, []byte("abc"), 40), 1, 0) }, def, ErrCorrupt},
		{"record-length-negative", func() []byte { return batchOf([]byte{0x01, 0, 0, 0, 1, 1, 0}, 1, 0) }, def, ErrCorrupt},
		{"value-length-past-record", func() []byte {
			r := encRec(0, 0, []byte("abc"), 0)
			r[5] = 0x0a // value length 5 with 3 bytes in the record
			return batchOf(r, 1, 0)
		}, def, ErrCorrupt},
		{"trailing-garbage-after-records", func() []byte { return batchOf(append(recs(0, 1), 1, 2, 3), 2, 1) }, def, ErrCorrupt},
		{"header-count-past-bytes", func() []byte { return batchOf(withHeaders(100, []byte{2, 'k', 0}), 1, 0) }, def, ErrCorrupt},
		{"header-count-negative", func() []byte { return batchOf(withHeaders(-1, nil), 1, 0) }, def, ErrCorrupt},
		{"header-null-key", func() []byte { return batchOf(withHeaders(1, []byte{1, 1}), 1, 0) }, def, ErrCorrupt},
		{"header-valid", func() []byte { return batchOf(withHeaders(1, []byte{2, 'k', 1}), 1, 0) }, def, nil},
		{"varint-overflow", func() []byte {
			raw := append([]byte{0x20, 0}, bytes.Repeat([]byte{0xff}, 10)...)
			raw = append(raw, make([]byte, 16-len(raw)+1)...)
			return batchOf(raw, 1, 0)
		}, def, ErrCorrupt},
		{"timestamp-too-old", func() []byte { return batchOf(tsRec(-hour-1), 1, 0) }, bounded, ErrInvalidTimestamp},
		{"timestamp-too-new", func() []byte { return batchOf(append(recs(0), encRec(hour+1, 1, nil, 0)...), 2, 1) }, bounded, ErrInvalidTimestamp},
		{"timestamp-none-passes", func() []byte {
			b := batchOf(tsRec(0), 1, 0)
			putTs(b, NoTimestamp)
			fixCRC(b)
			return b
		}, bounded, nil},
		{"timestamp-ignored-on-log-append-time-topic", func() []byte { return batchOf(tsRec(-10*hour), 1, 0) },
			Rules{LogAppendTime: true, Now: testBaseTs}, nil},
		{"producer-log-append-time-on-log-append-time-topic", func() []byte {
			b := batchOf(tsRec(0), 1, 0)
			Batch(b).SetLogAppendTime(testBaseTs)
			return b
		}, Rules{LogAppendTime: true, Now: testBaseTs}, ErrInvalidTimestamp},
		{"producer-log-append-time-out-of-range", func() []byte {
			b := batchOf(tsRec(0), 1, 0)
			Batch(b).SetLogAppendTime(testBaseTs + 2*hour)
			return b
		}, bounded, ErrInvalidTimestamp},
		{"producer-log-append-time-none", func() []byte {
			b := batchOf(tsRec(0), 1, 0)
			Batch(b).SetLogAppendTime(NoTimestamp)
			return b
		}, def, ErrInvalidTimestamp},
		{"timestamp-saturating-bounds", func() []byte {
			b := batchOf(tsRec(0), 1, 0)
			putTs(b, math.MinInt64+5)
			fixCRC(b)
			return b
		}, Rules{TimestampBeforeMax: math.MaxInt64 - 1, TimestampAfterMax: 0, Now: 10}, ErrInvalidTimestamp},
	}
	for _, tc := range tests {
		for _, c := range allCodecs {
			t.Run(tc.name+"/codec="+c.name, func(t *testing.T) {
				b := encode(t, tc.batch(), c.codec, c.xerial)
				r := tc.rules
				checkVerdict(t, b, &r, tc.want)
			})
		}
	}
}

// checkVerdict runs ValidateAppend on b and checks the error kind, and for
// an accepted batch that Iter walks it cleanly.
func checkVerdict(t *testing.T, b []byte, r *Rules, want error) {
	t.Helper()
	n, recsN, err := ValidateAppend(b, r)
	if want == nil {
		if err != nil || n != 1 || recsN != int64(Batch(b).RecordCount()) {
			t.Fatalf("ValidateAppend = %d, %d, %v; want 1 batch, nil", n, recsN, err)
		}
		var it Iter
		it.Reset(Batch(b))
		got := 0
		for it.Next() {
			got++
		}
		if it.Err() != nil || got != int(Batch(b).RecordCount()) {
			t.Fatalf("accepted batch iterates %d of %d records, err %v", got, Batch(b).RecordCount(), it.Err())
		}
		return
	}
	var be *BatchError
	if !errors.Is(err, want) || !errors.As(err, &be) {
		t.Fatalf("ValidateAppend error %v, want a *BatchError of kind %v", err, want)
	}
	for _, other := range []error{ErrCorrupt, ErrInvalid, ErrInvalidTimestamp, ErrTooLarge, ErrUnsupported, ErrNoKey} {
		if other != want && errors.Is(err, other) {
			t.Fatalf("error %v is also %v", err, other)
		}
	}
}

// TestValidateAppendCompressedDamage: faults that exist only in the
// compressed form of a batch.
func TestValidateAppendCompressedDamage(t *testing.T) {
	good := newBatch(testRecords())
	def := DefaultRules()
	for _, c := range codecCases {
		t.Run("codec="+c.name, func(t *testing.T) {
			cb := compressBatch(t, good, c.codec, c.xerial)
			comp := Batch(cb).Records()
			damaged := map[string][]byte{
				"garbage-after-stream": append(append([]byte(nil), comp...), 0xde, 0xad, 0xbe, 0xef),
				"truncated-stream":     comp[:len(comp)-3],
				"empty-stream":         nil,
				"flipped-byte":         flip(comp, len(comp)/2),
			}
			for name, raw := range damaged {
				t.Run(name, func(t *testing.T) {
					checkVerdict(t, withRecords(cb, raw), &def, ErrCorrupt)
				})
			}
		})
	}
}

func flip(b []byte, i int) []byte {
	out := append([]byte(nil), b...)
	out[i] ^= 0x55
	return out
}

// bombBatch is a batch of one record whose value is size zero bytes,
// compressed by enc, which returns the compressed records block: a few KiB
// that expand to size.
func bombBatch(t testing.TB, size int, enc func(raw []byte) []byte) []byte {
	hdr := newBatch([]BuildRecord{{Value: []byte("x"), Timestamp: testBaseTs}})
	raw := encRec(0, 0, make([]byte, size), 0)
	b := withRecords(hdr, enc(raw))
	return b
}

func setCodec(b []byte, codec int) []byte {
	binary.BigEndian.PutUint16(b[offAttributes:], uint16(codec))
	fixCRC(b)
	return b
}

// TestValidateAppendBomb: a small payload that expands past
// Rules.MaxDecompressed is ErrTooLarge, and refusing it allocates a small
// fraction of the expansion (the decoders' fixed buffers at most).
func TestValidateAppendBomb(t *testing.T) {
	const expand = 32 << 20
	rules := DefaultRules()
	rules.MaxDecompressed = 1 << 20
	bombs := []struct {
		name  string
		batch func() []byte
	}{
		{"gzip", func() []byte {
			return setCodec(bombBatch(t, expand, func(raw []byte) []byte {
				var buf bytes.Buffer
				w, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
				w.Write(raw)
				w.Close()
				return buf.Bytes()
			}), CodecGzip)
		}},
		{"zstd-stream", func() []byte {
			return setCodec(bombBatch(t, expand, func(raw []byte) []byte {
				var buf bytes.Buffer
				w, _ := zstd.NewWriter(&buf, zstd.WithWindowSize(1<<20), zstd.WithEncoderConcurrency(1))
				w.Write(raw)
				w.Close()
				return buf.Bytes()
			}), CodecZstd)
		}},
		{"zstd-single-segment", func() []byte {
			return setCodec(bombBatch(t, expand, func(raw []byte) []byte {
				return CompressRecords(nil, CodecZstd, raw, false)
			}), CodecZstd)
		}},
		{"snappy", func() []byte {
			return setCodec(bombBatch(t, expand, func(raw []byte) []byte {
				return CompressRecords(nil, CodecSnappy, raw, false)
			}), CodecSnappy)
		}},
		{"snappy-xerial", func() []byte {
			return setCodec(bombBatch(t, expand, func(raw []byte) []byte {
				return CompressRecords(nil, CodecSnappy, raw, true)
			}), CodecSnappy)
		}},
		{"lz4", func() []byte {
			return setCodec(bombBatch(t, expand, func(raw []byte) []byte {
				return CompressRecords(nil, CodecLZ4, raw, false)
			}), CodecLZ4)
		}},
	}
	for _, bc := range bombs {
		t.Run("codec="+bc.name, func(t *testing.T) {
			b := bc.batch()
			t.Logf("%d-byte batch expands to %d bytes", len(b), expand)
			// The first run fills the pools; the next are measured and
			// the least counts: a GC between two runs empties sync.Pool
			// (every pool, by design), which a loaded machine makes
			// likely, and the refill is not the bomb's doing.
			least := uint64(math.MaxUint64)
			for i := 0; i < 4; i++ {
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				_, _, err := ValidateAppend(b, &rules)
				runtime.ReadMemStats(&after)
				if !errors.Is(err, ErrTooLarge) {
					t.Fatalf("ValidateAppend = %v, want ErrTooLarge", err)
				}
				if i > 0 {
					least = min(least, after.TotalAlloc-before.TotalAlloc)
				}
			}
			// Under -race sync.Pool drops items on purpose, so a warm
			// pool is not guaranteed: only the verdict is checked.
			if least > 2<<20 && !raceEnabled {
				t.Fatalf("refusing the bomb allocated %d bytes (the least of 3 runs)", least)
			}
		})
	}
}

// TestValidateAppendLargeZstdWindow: a zstd frame asking for a larger
// window than the pooled decoders keep (zstd-jni at levels 20-22) passes
// when the window is within the bound, through a one-off decoder.
func TestValidateAppendLargeZstdWindow(t *testing.T) {
	b := newBatch([]BuildRecord{{Value: bytes.Repeat([]byte("0123456789"), 1<<20), Timestamp: testBaseTs}})
	var buf bytes.Buffer
	w, _ := zstd.NewWriter(&buf, zstd.WithWindowSize(2*MaxZstdWindow), zstd.WithEncoderConcurrency(1))
	w.Write(Batch(b).Records())
	w.Close()
	b = setCodec(withRecords(b, buf.Bytes()), CodecZstd)
	if w, ok := zstdWindow(Batch(b).Records()); !ok || w <= MaxZstdWindow {
		t.Fatalf("zstdWindow = %d, %v; want a window above %d", w, ok, MaxZstdWindow)
	}
	def := DefaultRules()
	checkVerdict(t, b, &def, nil)
	small := Rules{MaxDecompressed: MaxZstdWindow}
	checkVerdict(t, b, &small, ErrTooLarge)
}

// TestValidateAppendNoAlloc: the uncompressed append path allocates
// nothing, timestamps checked or not; a compressed batch allocates nothing
// once the pools are warm.
func TestValidateAppendNoAlloc(t *testing.T) {
	bounded := Rules{MaxDecompressed: 1 << 20, TimestampBeforeMax: 1 << 40, TimestampAfterMax: 1 << 40, Now: testBaseTs}
	for _, c := range allCodecs {
		t.Run("codec="+c.name, func(t *testing.T) {
			if raceEnabled && c.codec != CodecNone {
				t.Skip("sync.Pool drops items under the race detector")
			}
			b := encode(t, newBatch(testRecords()), c.codec, c.xerial)
			allocs := testing.AllocsPerRun(100, func() {
				if _, _, err := ValidateAppend(b, &bounded); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Fatalf("ValidateAppend allocates %.1f times per call", allocs)
			}
		})
	}
}

func putTs(b []byte, ts int64) { binary.BigEndian.PutUint64(b[offBaseTimestamp:], uint64(ts)) }

// TestValidateAppendRequireKeys: on a compacted topic (Rules.RequireKeys) a
// record with a null key is ErrNoKey, in any codec and wherever it sits in
// the batch, as Kafka's LogValidator.validateKey has it; an empty key is a
// key. Without the rule, and for a follower's Validate, null keys pass.
func TestValidateAppendRequireKeys(t *testing.T) {
	compacted := DefaultRules()
	compacted.RequireKeys = true
	lat := compacted
	lat.LogAppendTime = true
	keyed := func(keys ...[]byte) func() []byte {
		return func() []byte {
			var rs []BuildRecord
			for i, k := range keys {
				rs = append(rs, BuildRecord{Key: k, Value: []byte("v"), Timestamp: testBaseTs + int64(i)})
			}
			return newBatch(rs)
		}
	}
	k := func(s string) []byte { return []byte(s) }
	tests := []struct {
		name  string
		batch func() []byte
		rules Rules
		want  error
	}{
		{"all-keyed", keyed(k("a"), k("b"), k("c")), compacted, nil},
		{"empty-key-is-a-key", keyed(k(""), k("b")), compacted, nil},
		{"null-key-first", keyed(nil, k("b"), k("c")), compacted, ErrNoKey},
		{"null-key-last", keyed(k("a"), k("b"), nil), compacted, ErrNoKey},
		{"null-key-only", keyed(nil), compacted, ErrNoKey},
		{"null-key-log-append-time-topic", keyed(k("a"), nil), lat, ErrNoKey},
		{"null-key-delete-topic", keyed(nil, nil), DefaultRules(), nil},
	}
	for _, tc := range tests {
		for _, c := range allCodecs {
			t.Run(tc.name+"/codec="+c.name, func(t *testing.T) {
				b := encode(t, tc.batch(), c.codec, c.xerial)
				r := tc.rules
				checkVerdict(t, b, &r, tc.want)
				if _, _, err := ValidateAll(b); err != nil {
					t.Fatalf("Validate (a follower's check) refused the batch: %v", err)
				}
			})
		}
	}
	t.Run("message", func(t *testing.T) {
		_, _, err := ValidateAppend(keyed(k("a"), nil)(), &compacted)
		if err == nil || !strings.Contains(err.Error(), "record 1 has a null key") ||
			!strings.Contains(err.Error(), "compacted topic cannot accept message without key") {
			t.Fatalf("error %v does not say which record and why", err)
		}
	})
}

// TestValidateAppendRequireKeysNoAlloc: the key rule keeps ValidateAppend
// allocation-free on keyed batches, compressed or not.
func TestValidateAppendRequireKeysNoAlloc(t *testing.T) {
	r := DefaultRules()
	r.RequireKeys = true
	var rs []BuildRecord
	for i := range 8 {
		rs = append(rs, BuildRecord{Key: []byte{byte('a' + i)}, Value: bytes.Repeat([]byte("v"), 100), Timestamp: testBaseTs})
	}
	for _, c := range allCodecs {
		t.Run("codec="+c.name, func(t *testing.T) {
			if raceEnabled && c.codec != CodecNone {
				t.Skip("sync.Pool drops items under the race detector")
			}
			b := encode(t, newBatch(rs), c.codec, c.xerial)
			allocs := testing.AllocsPerRun(100, func() {
				if _, _, err := ValidateAppend(b, &r); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Fatalf("ValidateAppend with RequireKeys allocates %.1f times per call", allocs)
			}
		})
	}
}

// What a caller vouches for (Rules.Pre) is not checked again, and the rest
// still is: a CRC the caller checked, records it walked whose facts fit
// the rules; facts that do not fit send the records to the walk, which
// reports the error as without them.
func TestValidateAppendPrechecked(t *testing.T) {
	recs := []BuildRecord{
		{Key: []byte("k"), Value: []byte("a"), Timestamp: 1000},
		{Value: []byte("b"), Timestamp: 3000},
	}
	b := AppendBatch(nil, BatchOptions{ProducerID: -1, BaseSequence: -1}, recs)
	walked := Prechecked{CRC: true}
	walked.StartRecords()
	walked.Note(1000, false)
	walked.Note(3000, true)

	badCRC := bytes.Clone(b)
	badCRC[bytes.LastIndexByte(badCRC, 'b')] = 'c' // a value byte: the records still parse
	r := DefaultRules()
	if _, _, err := ValidateAppend(badCRC, &r); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("bad CRC, nothing vouched: %v, want ErrCorrupt", err)
	}
	r.Pre = Prechecked{CRC: true}
	if _, _, err := ValidateAppend(badCRC, &r); err != nil {
		t.Fatalf("bad CRC the caller vouched for: %v", err)
	}

	// A batch whose records the walk refuses, vouched for: the walk is
	// skipped only when the facts are given.
	tooFew := bytes.Clone(b)
	binary.BigEndian.PutUint32(tooFew[offRecordCount:], 3)
	binary.BigEndian.PutUint32(tooFew[offLastOffsetDelta:], 2)
	binary.BigEndian.PutUint32(tooFew[offCRC:], Batch(tooFew).ComputeCRC())
	r = DefaultRules()
	r.Pre = Prechecked{CRC: true}
	if _, _, err := ValidateAppend(tooFew, &r); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("records walked here: %v, want ErrCorrupt", err)
	}

	for _, tc := range []struct {
		name          string
		before, after int64 // the window around Now = 2000
		keys          bool
		pre           Prechecked
		want          error
	}{
		{"no rules", NoTimestampLimit, NoTimestampLimit, false, walked, nil},
		{"window holds them", 1000, 1000, false, walked, nil},
		{"one before the window", 999, 1000, false, walked, ErrInvalidTimestamp},
		{"one after the window", 1000, 999, false, walked, ErrInvalidTimestamp},
		{"a null key on a compacted topic", NoTimestampLimit, NoTimestampLimit, true, walked, ErrNoKey},
		{"not walked", 999, 1000, false, Prechecked{CRC: true}, ErrInvalidTimestamp},
	} {
		r := DefaultRules()
		r.Now, r.TimestampBeforeMax, r.TimestampAfterMax, r.RequireKeys = 2000, tc.before, tc.after, tc.keys
		r.Pre = tc.pre
		_, _, err := ValidateAppend(b, &r)
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
		var be *BatchError
		if tc.want != nil && errors.As(err, &be) && !strings.Contains(be.Reason, "record ") {
			t.Errorf("%s: %q does not name the record, as the walk's error does", tc.name, be.Reason)
		}
	}
}
