package record

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
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
// framing), with batchLength, codec bits and CRC set to match.
func compressBatch(t testing.TB, b []byte, codec int, xerial bool) []byte {
	t.Helper()
	raw := Batch(b).Records()
	var comp []byte
	switch codec {
	case CodecGzip:
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		mustDo(t, w.Write, raw)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		comp = buf.Bytes()
	case CodecSnappy:
		block := s2.EncodeSnappy(nil, raw)
		if !xerial {
			comp = block
			break
		}
		comp = append(comp, xerialHeader...)
		comp = binary.BigEndian.AppendUint32(comp, 1) // version
		comp = binary.BigEndian.AppendUint32(comp, 1) // compatible version
		// Two chunks, to exercise the chunk loop.
		half := len(raw) / 2
		for _, part := range [][]byte{raw[:half], raw[half:]} {
			blk := s2.EncodeSnappy(nil, part)
			comp = binary.BigEndian.AppendUint32(comp, uint32(len(blk)))
			comp = append(comp, blk...)
		}
	case CodecLZ4:
		var buf bytes.Buffer
		w := lz4.NewWriter(&buf)
		mustDo(t, w.Write, raw)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		comp = buf.Bytes()
	case CodecZstd:
		enc, err := zstd.NewWriter(nil)
		if err != nil {
			t.Fatal(err)
		}
		comp = enc.EncodeAll(raw, nil)
		enc.Close()
	default:
		t.Fatalf("compressBatch: codec %d", codec)
	}
	out := append([]byte(nil), b[:HeaderSize]...)
	out = append(out, comp...)
	binary.BigEndian.PutUint32(out[offBatchLength:], uint32(len(out)-LogOverhead))
	attrs := uint16(Batch(out).Attributes())&^CodecMask | uint16(codec)
	binary.BigEndian.PutUint16(out[offAttributes:], attrs)
	fixCRC(out)
	return out
}

func mustDo(t testing.TB, write func([]byte) (int, error), p []byte) {
	t.Helper()
	if _, err := write(p); err != nil {
		t.Fatal(err)
	}
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
