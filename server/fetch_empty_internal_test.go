package server

import (
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/sluice/sluice/record"
	"github.com/sluice/sluice/zerocopy"
)

// emptyBatchAt is a batch of producer 7 covering [base, last] with no
// record left, as the cleaner keeps one for producer state (a header
// only, recordCount 0).
func emptyBatchAt(base, last int64) []byte {
	b := record.AppendBatch(nil, record.BatchOptions{BaseOffset: base, ProducerID: 7, BaseSequence: 0},
		[]record.BuildRecord{{Key: []byte("k"), Value: []byte("v")}})
	b = b[:record.HeaderSize]
	be := binary.BigEndian
	be.PutUint32(b[8:], record.HeaderSize-record.LogOverhead) // batchLength
	be.PutUint32(b[23:], uint32(last-base))                   // lastOffsetDelta
	be.PutUint32(b[57:], 0)                                   // recordCount
	be.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

func dataBatchAt(base int64, n int) []byte {
	recs := make([]record.BuildRecord, n)
	for i := range recs {
		recs[i] = record.BuildRecord{Key: []byte("k"), Value: []byte("value")}
	}
	return record.AppendBatch(nil, record.BatchOptions{BaseOffset: base, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
}

// TestAfterEmpty: a consumer fetch whose batches all hold no record (a
// compacted segment ending in batches kept for producer state) returns
// the batches after them, which the next read finds, instead of the empty
// ones alone (librdkafka 2.0.2 stalls on those); otherwise the read is
// answered as it is.
func TestAfterEmpty(t *testing.T) {
	empty := append(emptyBatchAt(10, 19), emptyBatchAt(20, 29)...)
	data := dataBatchAt(40, 3)
	for _, tc := range []struct {
		name  string
		first []byte
		log   map[int64][]byte // what a read from each offset returns
		want  []byte
		reads []int64
	}{
		{name: "empty batches at a segment end, data in the next",
			first: empty, log: map[int64][]byte{30: data}, want: data, reads: []int64{30}},
		{name: "several segments of empty batches",
			first: emptyBatchAt(10, 19), log: map[int64][]byte{20: emptyBatchAt(20, 29), 30: data}, want: data, reads: []int64{20, 30}},
		{name: "nothing after the empty batches: they are the answer",
			first: empty, log: map[int64][]byte{}, want: empty, reads: []int64{30}},
		{name: "data first: no second read",
			first: append(dataBatchAt(0, 2), empty...), want: append(dataBatchAt(0, 2), empty...)},
		{name: "an empty batch followed by data in the same segment: returned together",
			first: append(emptyBatchAt(10, 19), data...), want: append(emptyBatchAt(10, 19), data...)},
		{name: "nothing read", first: nil, want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var reads []int64
			read := func(from int64) (zerocopy.Slice, error) {
				reads = append(reads, from)
				return zerocopy.BytesSlice(tc.log[from]), nil
			}
			got := afterEmpty(zerocopy.BytesSlice(tc.first), read)
			if string(got.Bytes()) != string(tc.want) {
				t.Fatalf("afterEmpty returned %d bytes, want %d", got.Len(), len(tc.want))
			}
			if len(reads) != len(tc.reads) || (len(reads) > 0 && reads[len(reads)-1] != tc.reads[len(tc.reads)-1]) {
				t.Fatalf("reads from %v, want %v", reads, tc.reads)
			}
		})
	}
	if _, err := record.ValidateStored(emptyBatchAt(10, 19)); err != nil {
		t.Fatalf("fixture: the empty batch is not a stored batch: %v", err)
	}
}
