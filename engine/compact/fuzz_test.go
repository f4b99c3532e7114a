package compact

import (
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/sluice/sluice/record"
)

// FuzzFilter fixes the CRC of each batch it can frame (so that mutations
// reach the records instead of failing the checksum) and runs a cleaning round (Build from start, then Filter with a
// small map and a clock of now) over arbitrary log bytes. Invariants:
//
//   - Build and Filter never panic, whatever the bytes;
//   - when both succeed, the output passes ValidateCleaned (headers, CRCs,
//     records that parse, offsets increasing) and reads with record.Iter;
//   - every output record is an input record: same offset, key and value
//     (output offsets ⊆ input offsets);
//   - cleaning the output again with a fresh map of the same range fails
//     on nothing (the output is valid cleaner input).
func FuzzFilter(f *testing.F) {
	l := appendBatch(nil, 0, plain, r("a", "a1", 1), nokey("x", 2), r("b", "b1", 3))
	l = appendBatch(l, 3, opts{codec: record.CodecLZ4}, r("a", "a2", 4), tomb("b", 5))
	f.Add(l, int64(0), int64(10))
	l2 := appendBatch(nil, 10, opts{pid: 4, epoch: 1, seq: 7, codec: record.CodecSnappy, xerial: true}, r("k", "1", 1), r("k", "2", 2))
	l2 = appendBatch(l2, 12, opts{codec: record.CodecZstd}, tomb("k", 3))
	f.Add(l2, int64(11), int64(1<<40))
	l3 := appendBatch(nil, 0, opts{codec: record.CodecGzip, logAppendTime: 99}, r("a", "1", 1), r("a", "2", 1))
	f.Add(l3, int64(0), int64(0))
	f.Add([]byte("not a log at all"), int64(0), int64(0))
	f.Fuzz(func(t *testing.T, log []byte, start, now int64) {
		fixCRCs(log)
		m := NewOffsetMapLoad(8*BytesPerEntry, 0.9)
		if _, _, err := Build(m, log, start); err != nil {
			return
		}
		out, _, err := Filter(nil, m, log, &Rules{Now: now, DeleteRetentionMs: 100})
		if err != nil {
			return
		}
		in := map[int64]got{}
		for _, x := range readLog(t, log) {
			in[x.Offset] = x
		}
		for _, x := range readLog(t, out) {
			y, ok := in[x.Offset]
			if !ok || y.Key != x.Key || y.Value != x.Value || y.Tombstone != x.Tombstone {
				t.Fatalf("output record %+v is not the input's %+v", x, y)
			}
		}
		m2 := NewOffsetMapLoad(8*BytesPerEntry, 0.9)
		if _, _, err := Build(m2, out, start); err != nil {
			t.Fatalf("Build of the output: %v", err)
		}
		if _, _, err := Filter(nil, m2, out, &Rules{Now: now, DeleteRetentionMs: 100}); err != nil {
			t.Fatalf("Filter of the output: %v", err)
		}
	})
}

// fixCRCs sets the CRC of every batch framed in log by its batchLength.
func fixCRCs(log []byte) {
	for pos := 0; len(log)-pos >= record.HeaderSize; {
		size, _ := record.PeekSize(log[pos:])
		if size < record.HeaderSize || size > len(log)-pos {
			return
		}
		b := log[pos : pos+size]
		binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[crcStart:], castagnoli))
		pos += size
	}
}
