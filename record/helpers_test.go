package record

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// testRecords is a record set with the awkward cases: null key, empty
// value, headers (one with a null value), timestamps out of order.
func testRecords() []BuildRecord {
	return []BuildRecord{
		{Key: []byte("k0"), Value: []byte("value zero"), Timestamp: 1_700_000_000_000},
		{Key: nil, Value: []byte{}, Timestamp: 1_700_000_000_005},
		{Key: []byte("k2"), Value: bytes.Repeat([]byte("v"), 300), Timestamp: 1_699_999_999_990,
			Headers: []Header{{Key: "h1", Value: []byte("x")}, {Key: "h2", Value: nil}}},
		{Key: []byte("k3"), Value: nil, Timestamp: 1_700_000_000_001},
	}
}

// newBatch builds an uncompressed batch of recs as a client would send it.
func newBatch(recs []BuildRecord) []byte {
	return AppendBatch(nil, BatchOptions{LeaderEpoch: -1, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
}

// fixCRC recomputes the CRC after a test changed a covered field.
func fixCRC(b []byte) {
	Batch(b).setCRC(Batch(b).ComputeCRC())
}

// compressBatch returns a copy of the uncompressed batch b whose records
// block is compressed with codec (xerial selects the Java client's snappy
// framing), with batchLength, codec bits and CRC set to match. b's records
// block need not be valid: tests damage it before compressing.
func compressBatch(t testing.TB, b []byte, codec int, xerial bool) []byte {
	t.Helper()
	out := append([]byte(nil), b[:HeaderSize]...)
	out = CompressRecords(out, codec, Batch(b).Records(), xerial)
	binary.BigEndian.PutUint32(out[offBatchLength:], uint32(len(out)-LogOverhead))
	attrs := uint16(Batch(out).Attributes())&^CodecMask | uint16(codec)
	binary.BigEndian.PutUint16(out[offAttributes:], attrs)
	fixCRC(out)
	return out
}

// withRecords returns a copy of batch b with its records block replaced by
// raw, batchLength and CRC fixed.
func withRecords(b []byte, raw []byte) []byte {
	out := append(append([]byte(nil), b[:HeaderSize]...), raw...)
	binary.BigEndian.PutUint32(out[offBatchLength:], uint32(len(out)-LogOverhead))
	fixCRC(out)
	return out
}

// codecCases names every codec variant compressBatch builds.
var codecCases = []struct {
	name   string
	codec  int
	xerial bool
}{
	{"gzip", CodecGzip, false},
	{"snappy", CodecSnappy, false},
	{"snappy-xerial", CodecSnappy, true},
	{"lz4", CodecLZ4, false},
	{"zstd", CodecZstd, false},
}
