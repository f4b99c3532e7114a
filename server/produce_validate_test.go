package server_test

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/record"
)

// compressedBatch builds a batch of n records compressed with codec, the
// records block passed through damage (nil: intact) before compression.
func compressedBatch(codec, n int, ts int64, damage func(raw []byte) []byte) []byte {
	recs := make([]record.BuildRecord, n)
	for i := range recs {
		recs[i] = record.BuildRecord{Value: []byte("value-" + strconv.Itoa(i)), Timestamp: ts}
	}
	opts := record.BatchOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
	if damage == nil {
		opts.Codec = codec
		return record.AppendBatch(nil, opts, recs)
	}
	plain := record.AppendBatch(nil, opts, recs)
	raw := damage(append([]byte(nil), record.Batch(plain).Records()...))
	b := record.CompressRecords(append([]byte(nil), plain[:record.HeaderSize]...), codec, raw, false)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-record.LogOverhead))
	binary.BigEndian.PutUint16(b[21:], uint16(codec))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// TestProduceValidatesCompressedBatches sends compressed batches over a raw
// connection: good ones are appended; a batch whose decompressed records
// carry trailing garbage is CORRUPT_MESSAGE, one with an offset-delta gap
// INVALID_RECORD, a decompression bomb MESSAGE_TOO_LARGE and a stale
// timestamp INVALID_TIMESTAMP; none of them reaches the log, and the
// partition keeps serving the records appended before and after.
func TestProduceValidatesCompressedBatches(t *testing.T) {
	b := brokertest.Start(t, "segment")
	cl := newClient(t, b.Addr())
	adm := kadm.NewClient(cl)
	createTopic(t, adm, "v", 1, map[string]*string{"message.timestamp.before.max.ms": kmsg.StringPtr("3600000")})
	rc := dialRaw(t, b.Addr())
	now := time.Now().UnixMilli()

	produce := func(batch []byte) error {
		t.Helper()
		resp := rc.Do(produceReq(9, -1, "v", 0, batch)).(*kmsg.ProduceResponse)
		return kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
	}
	gap := func(raw []byte) []byte { // the first record's offset delta 0 -> 1
		// length, attributes, timestampDelta 0, offsetDelta: byte 3.
		raw[3] = 2
		return raw
	}
	garbage := func(raw []byte) []byte { return append(raw, 0xde, 0xad) }
	bomb := func(raw []byte) []byte {
		// One record whose value is 80 MiB of zeros: past 64 x the
		// default max.message.bytes.
		var body []byte
		body = append(body, 0, 0, 0)
		body = binary.AppendVarint(body, -1)
		body = binary.AppendVarint(body, 80<<20)
		body = append(body, make([]byte, 80<<20)...)
		body = binary.AppendVarint(body, 0)
		return append(binary.AppendVarint(nil, int64(len(body))), body...)
	}
	steps := []struct {
		name  string
		batch []byte
		want  *kerr.Error
	}{
		{"good-zstd", compressedBatch(record.CodecZstd, 3, now, nil), nil},
		{"good-gzip", compressedBatch(record.CodecGzip, 3, now, nil), nil},
		{"trailing-garbage-gzip", compressedBatch(record.CodecGzip, 3, now, garbage), kerr.CorruptMessage},
		{"trailing-garbage-lz4", compressedBatch(record.CodecLZ4, 3, now, garbage), kerr.CorruptMessage},
		{"offset-delta-gap-snappy", compressedBatch(record.CodecSnappy, 3, now, gap), kerr.InvalidRecord},
		{"bomb-zstd", func() []byte {
			b := compressedBatch(record.CodecZstd, 1, now, bomb)
			if len(b) > 64<<10 {
				t.Fatalf("bomb is %d bytes", len(b))
			}
			return b
		}(), kerr.MessageTooLarge},
		{"stale-timestamp-zstd", compressedBatch(record.CodecZstd, 3, now-2*3600000, nil), kerr.InvalidTimestamp},
		{"good-snappy", compressedBatch(record.CodecSnappy, 3, now, nil), nil},
	}
	for _, st := range steps {
		if got := produce(st.batch); (st.want == nil) != (got == nil) || st.want != nil && got != error(st.want) {
			t.Fatalf("%s: produce answered %v, want %v", st.name, got, st.want)
		}
	}

	// Exactly the 9 good records, offsets 0..8, all readable.
	cons := newClient(t, b.Addr(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"v": {0: kgo.NewOffset().AtStart()}}))
	ctx := testCtx(t, 15*time.Second)
	var got []*kgo.Record
	for len(got) < 9 {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("timed out after %d records", len(got))
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", topic, p, err) })
		got = append(got, fs.Records()...)
	}
	for i, r := range got {
		want := []byte("value-" + strconv.Itoa(i%3))
		if r.Offset != int64(i) || !bytes.Equal(r.Value, want) {
			t.Fatalf("record %d: offset %d value %q, want offset %d value %q", i, r.Offset, r.Value, i, want)
		}
	}
	ends, err := adm.ListEndOffsets(ctx, "v")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup("v", 0); o.Offset != 9 {
		t.Fatalf("end offset %d, want 9", o.Offset)
	}
}
