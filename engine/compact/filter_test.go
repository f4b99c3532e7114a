package compact

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"

	"github.com/sluice/sluice/record"
)

const mib = 1 << 20

var plain = opts{}

// TestFilter runs one cleaning round over hand-built logs and checks the
// records that survive, by offset.
func TestFilter(t *testing.T) {
	tests := []struct {
		name  string
		log   func() []byte
		rules Rules
		want  []got
	}{
		{
			name: "keys repeated across batches",
			log: func() []byte {
				l := appendBatch(nil, 0, plain, r("a", "a1", 10), r("b", "b1", 11), r("c", "c1", 12))
				l = appendBatch(l, 3, plain, r("a", "a2", 13), r("b", "b2", 14))
				return appendBatch(l, 5, plain, r("c", "c3", 15))
			},
			want: []got{{3, "a", "a2", false, 13}, {4, "b", "b2", false, 14}, {5, "c", "c3", false, 15}},
		},
		{
			name: "a batch loses its first record",
			log: func() []byte {
				l := appendBatch(nil, 0, plain, r("a", "a1", 10), r("b", "b1", 20), r("c", "c1", 5))
				return appendBatch(l, 3, plain, r("a", "a2", 30))
			},
			want: []got{{1, "b", "b1", false, 20}, {2, "c", "c1", false, 5}, {3, "a", "a2", false, 30}},
		},
		{
			name: "key-less records are dropped",
			log: func() []byte {
				l := appendBatch(nil, 0, plain, nokey("x", 1), r("a", "a1", 2), nokey("y", 3))
				return appendBatch(l, 3, plain, nokey("z", 4))
			},
			want: []got{{1, "a", "a1", false, 2}},
		},
		{
			name: "a tombstone without a horizon is kept and stamped",
			log: func() []byte {
				l := appendBatch(nil, 0, plain, r("a", "a1", 10), r("b", "b1", 11))
				return appendBatch(l, 2, plain, tomb("a", 12))
			},
			rules: Rules{Now: 1000, DeleteRetentionMs: 500},
			want:  []got{{1, "b", "b1", false, 11}, {2, "a", "", true, 12}},
		},
		{
			name: "an older tombstone is superseded like any record",
			log: func() []byte {
				l := appendBatch(nil, 0, plain, tomb("a", 10))
				return appendBatch(l, 1, plain, r("a", "back", 11))
			},
			want: []got{{1, "a", "back", false, 11}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, _ := clean(t, tc.log(), mib, 0, tc.rules)
			if g := readLog(t, out); !reflect.DeepEqual(g, tc.want) {
				t.Fatalf("got  %v\nwant %v", g, tc.want)
			}
		})
	}
}

// TestRewrittenBatchKeepsOffsets checks the header of a batch that lost
// records: base offset and last offset delta as before, count of kept
// records, timestamps from the kept records, same leader epoch.
func TestRewrittenBatchKeepsOffsets(t *testing.T) {
	l := appendBatch(nil, 100, plain, r("a", "a1", 10), r("b", "b1", 20), r("c", "c1", 5), r("d", "d1", 7))
	l = appendBatch(l, 104, plain, r("a", "a2", 30), r("d", "d2", 31))
	out, st := clean(t, l, mib, 0, Rules{})
	bs := batchesOf(out)
	if len(bs) != 2 {
		t.Fatalf("%d batches, want 2", len(bs))
	}
	b := bs[0]
	if b.BaseOffset() != 100 || b.LastOffsetDelta() != 3 || b.RecordCount() != 2 || b.LeaderEpoch() != 3 {
		t.Fatalf("base %d lod %d count %d epoch %d, want 100 3 2 3", b.BaseOffset(), b.LastOffsetDelta(), b.RecordCount(), b.LeaderEpoch())
	}
	if b.BaseTimestamp() != 20 || b.MaxTimestamp() != 20 {
		t.Fatalf("timestamps %d..%d, want first kept 20 and max 20", b.BaseTimestamp(), b.MaxTimestamp())
	}
	if !bytes.Equal(bs[1], batchesOf(l)[1]) {
		t.Fatal("the batch whose records all survive was not copied byte for byte")
	}
	if st.BatchesCopied != 1 || st.BatchesWritten != 2 || st.RecordsKept != 4 || st.RecordsRead != 6 {
		t.Fatalf("stats %+v", st)
	}
}

// TestAllKeptIsCopied: a log with nothing to clean comes out identical.
func TestAllKeptIsCopied(t *testing.T) {
	var l []byte
	for i, c := range []int{record.CodecNone, record.CodecGzip, record.CodecLZ4} {
		base := int64(i * 2)
		l = appendBatch(l, base, opts{codec: c}, r(fmt.Sprint("k", base), "v", 1), r(fmt.Sprint("k", base+1), "v", 2))
	}
	out, st := clean(t, l, mib, 0, Rules{})
	if !bytes.Equal(out, l) || st.BatchesCopied != 3 {
		t.Fatalf("output differs from input (copied %d)", st.BatchesCopied)
	}
}

// TestTombstoneHorizon follows a tombstone through three cleanings: the
// first stamps its batch with Now+delete.retention.ms, the second (before
// the horizon) keeps it byte for byte, the third (at the horizon) drops it.
func TestTombstoneHorizon(t *testing.T) {
	l := appendBatch(nil, 0, plain, r("a", "a1", 10), r("b", "b1", 11))
	l = appendBatch(l, 2, plain, tomb("a", 12), r("c", "c1", 13))

	first, _ := clean(t, l, mib, 0, Rules{Now: 1000, DeleteRetentionMs: 500})
	bs := batchesOf(first)
	stamped := bs[len(bs)-1]
	if stamped.Attributes()&record.DeleteHorizonBit == 0 || stamped.BaseTimestamp() != 1500 {
		t.Fatalf("attributes %#x base timestamp %d, want the delete-horizon bit and 1500", stamped.Attributes(), stamped.BaseTimestamp())
	}
	if g := readLog(t, first); g[1].Ts != 12 || g[2].Ts != 13 || stamped.MaxTimestamp() != 13 {
		t.Fatalf("record timestamps changed by the stamp: %v (max %d)", g, stamped.MaxTimestamp())
	}

	second, _ := clean(t, first, mib, 0, Rules{Now: 1499, DeleteRetentionMs: 500})
	if !bytes.Equal(second, first) {
		t.Fatal("a cleaning before the horizon changed the log")
	}

	third, _ := clean(t, second, mib, 0, Rules{Now: 1500, DeleteRetentionMs: 500})
	want := []got{{1, "b", "b1", false, 11}, {3, "c", "c1", false, 13}}
	if g := readLog(t, third); !reflect.DeepEqual(g, want) {
		t.Fatalf("after the horizon: %v, want %v", g, want)
	}
	if b := batchesOf(third)[1]; b.Attributes()&record.DeleteHorizonBit == 0 || b.BaseTimestamp() != 1500 {
		t.Fatal("the rewritten batch lost its delete horizon")
	}
}

// TestCompressedRewrittenWithCodec rewrites a batch of each codec that
// loses records, and checks the codec (and snappy framing) is kept.
func TestCompressedRewrittenWithCodec(t *testing.T) {
	for _, tc := range []struct {
		name   string
		codec  int
		xerial bool
	}{
		{"gzip", record.CodecGzip, false},
		{"snappy", record.CodecSnappy, false},
		{"snappy-xerial", record.CodecSnappy, true},
		{"lz4", record.CodecLZ4, false},
		{"zstd", record.CodecZstd, false},
	} {
		t.Run("codec="+tc.name, func(t *testing.T) {
			o := opts{codec: tc.codec, xerial: tc.xerial}
			l := appendBatch(nil, 0, o, r("a", "a1", 10), r("b", "b1", 11), r("c", "c1", 12), tomb("d", 13))
			l = appendBatch(l, 4, o, r("b", "b2", 14))
			out, _ := clean(t, l, mib, 0, Rules{Now: 50, DeleteRetentionMs: 10})
			want := []got{{0, "a", "a1", false, 10}, {2, "c", "c1", false, 12}, {3, "d", "", true, 13}, {4, "b", "b2", false, 14}}
			if g := readLog(t, out); !reflect.DeepEqual(g, want) {
				t.Fatalf("got  %v\nwant %v", g, want)
			}
			b := batchesOf(out)[0]
			if b.Codec() != tc.codec || isXerial(b.Records()) != tc.xerial {
				t.Fatalf("codec %d xerial %v, want %d %v", b.Codec(), isXerial(b.Records()), tc.codec, tc.xerial)
			}
			if b.BaseTimestamp() != 60 || b.RecordCount() != 3 || b.LastOffsetDelta() != 3 {
				t.Fatalf("base ts %d count %d lod %d", b.BaseTimestamp(), b.RecordCount(), b.LastOffsetDelta())
			}
		})
	}
}

// TestIdempotentProducer: a producer's batches keep producer id, epoch and
// base sequence when rewritten; its last batch stays, empty, when all its
// records are superseded; its earlier emptied batches go.
func TestIdempotentProducer(t *testing.T) {
	l := appendBatch(nil, 0, opts{pid: 7, epoch: 2, seq: 0}, r("a", "a1", 1), r("b", "b1", 2))
	l = appendBatch(l, 2, opts{pid: 7, epoch: 2, seq: 2}, r("a", "a2", 3), r("b", "b2", 4), r("c", "c2", 5))
	l = appendBatch(l, 5, opts{pid: 7, epoch: 2, seq: 5}, r("a", "a3", 6), r("b", "b3", 7))
	l = appendBatch(l, 7, plain, r("a", "x", 8), r("b", "x", 9), r("c", "x", 10))
	last := map[int64]int64{7: 6}
	rules := Rules{ProducerLast: func(pid int64) (int64, bool) { o, ok := last[pid]; return o, ok }}
	out, st := clean(t, l, mib, 0, rules)
	bs := batchesOf(out)
	if len(bs) != 2 || st.BatchesEmptied != 1 {
		t.Fatalf("%d batches (%d emptied), want the producer's last batch, empty, and the last batch", len(bs), st.BatchesEmptied)
	}
	e := bs[0]
	if e.BaseOffset() != 5 || e.LastOffsetDelta() != 1 || e.RecordCount() != 0 || e.ProducerID() != 7 ||
		e.ProducerEpoch() != 2 || e.BaseSequence() != 5 || e.LastSequence() != 6 || e.Codec() != record.CodecNone ||
		e.BaseTimestamp() != 7 || e.MaxTimestamp() != 7 || len(e) != record.HeaderSize {
		t.Fatalf("empty batch: base %d lod %d count %d pid %d epoch %d seq %d..%d ts %d..%d size %d",
			e.BaseOffset(), e.LastOffsetDelta(), e.RecordCount(), e.ProducerID(), e.ProducerEpoch(),
			e.BaseSequence(), e.LastSequence(), e.BaseTimestamp(), e.MaxTimestamp(), len(e))
	}

	// Partially cleaned: the batch keeps its sequence range.
	l2 := appendBatch(nil, 0, opts{pid: 9, epoch: 4, seq: 100, codec: record.CodecZstd}, r("a", "a1", 1), r("b", "b1", 2), r("c", "c1", 3))
	l2 = appendBatch(l2, 3, plain, r("a", "x", 4))
	out2, _ := clean(t, l2, mib, 0, Rules{})
	b := batchesOf(out2)[0]
	if b.ProducerID() != 9 || b.ProducerEpoch() != 4 || b.BaseSequence() != 100 || b.LastSequence() != 102 || b.RecordCount() != 2 {
		t.Fatalf("pid %d epoch %d seq %d..%d count %d, want 9 4 100..102 2", b.ProducerID(), b.ProducerEpoch(), b.BaseSequence(), b.LastSequence(), b.RecordCount())
	}
}

// TestUpperBoundKeepsLastBatch: the batch that ends the cleaning round
// stays, empty, so the cleaned log ends where it did.
func TestUpperBoundKeepsLastBatch(t *testing.T) {
	l := appendBatch(nil, 0, plain, r("a", "a1", 1))
	l = appendBatch(l, 1, plain, nokey("x", 2))
	out, _ := clean(t, l, mib, 0, Rules{UpperBound: 2})
	bs := batchesOf(out)
	if len(bs) != 2 || bs[1].RecordCount() != 0 || bs[1].NextOffset() != 2 {
		t.Fatalf("%d batches, want the last one kept empty", len(bs))
	}
}

// TestLogAppendTime: a rewritten LogAppendTime batch keeps its type and
// maxTimestamp, and every record still reads that timestamp.
func TestLogAppendTime(t *testing.T) {
	l := appendBatch(nil, 0, opts{logAppendTime: 5000, codec: record.CodecLZ4}, r("a", "a1", 1), r("b", "b1", 2))
	l = appendBatch(l, 2, plain, r("a", "a2", 3))
	out, _ := clean(t, l, mib, 0, Rules{})
	b := batchesOf(out)[0]
	if !b.LogAppendTime() || b.MaxTimestamp() != 5000 || b.BaseTimestamp() != 5000 {
		t.Fatalf("log append time %v, ts %d..%d", b.LogAppendTime(), b.BaseTimestamp(), b.MaxTimestamp())
	}
	if g := readLog(t, out); g[0].Ts != 5000 || g[0].Key != "b" {
		t.Fatalf("%v", g)
	}
}

// TestControlBatchCopied: a transaction marker whose transaction had data
// in the round passes through unchanged (txn_test.go has the rest of the
// marker rules).
func TestControlBatchCopied(t *testing.T) {
	ctl := appendBatch(nil, 1, opts{pid: 3, epoch: 1, control: true}, kv{Key: []byte{0, 0, 0, 1}, Value: []byte{0, 0, 0, 0, 0, 0}, Ts: 2})
	l := appendBatch(nil, 0, opts{pid: 3, epoch: 1, txn: true}, r("a", "a1", 1))
	l = append(l, ctl...)
	l = appendBatch(l, 2, plain, r("a", "a2", 3))
	out, _ := clean(t, l, mib, 0, Rules{})
	if !containsBatch(out, ctl) || len(batchesOf(out)) != 2 {
		t.Fatal("control batch not copied unchanged")
	}
}

// TestMapFull: a map too small for the dirty range cleans what it covers,
// keeps the rest, and a second round finishes the job.
func TestMapFull(t *testing.T) {
	var l []byte
	for i := int64(0); i < 40; i++ {
		l = appendBatch(l, i*2, plain, r(fmt.Sprint("k", i%20), fmt.Sprint("v", i), i), nokey("n", i))
	}
	m := NewOffsetMapLoad(11*BytesPerEntry, 0.9) // 11 slots, 9 keys
	last, full, err := Build(m, l, 0)
	if err != nil || !full {
		t.Fatalf("Build: full %v err %v, want full", full, err)
	}
	if last != 17 || m.Latest() != 17 || m.Len() != 9 {
		t.Fatalf("last %d latest %d len %d, want 17 17 9 (k9 at offset 18 did not fit)", last, m.Latest(), m.Len())
	}
	out, _, err := Filter(nil, m, l, &Rules{})
	if err != nil {
		t.Fatal(err)
	}
	g := readLog(t, out)
	for _, x := range g {
		if x.Offset <= last && x.Key == "" {
			t.Fatalf("key-less record at %d below the map's range kept", x.Offset)
		}
	}
	if len(g) != 9+62 {
		t.Fatalf("%d records, want k0..k8 (latest within the range) and the 62 past offset 17", len(g))
	}
	// Round two (a map big enough) from last+1 over the cleaned log: one value per key left,
	// and nothing key-less below the new range.
	m = NewOffsetMap(mib)
	if _, full, err = Build(m, out, last+1); err != nil || full {
		t.Fatalf("round two: full %v err %v", full, err)
	}
	out2, _, err := Filter(nil, m, out, &Rules{})
	if err != nil {
		t.Fatal(err)
	}
	g = readLog(t, out2)
	if len(g) != 20 {
		t.Fatalf("%d records after two rounds, want 20: %v", len(g), g)
	}
}

// TestCorrupt: damaged input is an error wrapping ErrCorrupt and leaves
// dst as it was.
func TestCorrupt(t *testing.T) {
	l := appendBatch(nil, 0, plain, r("a", "a1", 1), r("b", "b1", 2))
	for _, tc := range []struct {
		name   string
		damage func([]byte)
	}{
		{"crc", func(b []byte) { b[len(b)-1] ^= 1 }},
		{"truncated", nil},
		{"magic", func(b []byte) { b[offMagic] = 1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := append([]byte(nil), l...)
			if tc.damage != nil {
				tc.damage(d)
			} else {
				d = d[:len(d)-3]
			}
			m := NewOffsetMap(mib)
			if _, _, err := Build(m, d, 0); err == nil {
				t.Fatal("Build: no error")
			}
			dst := []byte("prefix")
			out, _, err := Filter(dst, m, d, &Rules{})
			if err == nil || string(out) != "prefix" {
				t.Fatalf("Filter: err %v, dst %q", err, out)
			}
		})
	}
}
