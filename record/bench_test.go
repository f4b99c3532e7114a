package record

import (
	"fmt"
	"math/rand"
	"testing"
)

// benchValue returns a 1 KiB value of words drawn from a small vocabulary:
// text-like, compressing about 3-4x, neither random nor constant.
func benchValue(rng *rand.Rand) []byte {
	words := []string{"order", "id", "customer", "amount", "currency", "EUR", "USD", "status",
		"shipped", "pending", "timestamp", "sku", "quantity", "warehouse", "region", "eu-west"}
	v := make([]byte, 0, 1024)
	for len(v) < 1024 {
		v = append(v, words[rng.Intn(len(words))]...)
		v = append(v, ' ')
		v = append(v, byte('0'+rng.Intn(10)), byte('0'+rng.Intn(10)), ',')
	}
	return v[:1024]
}

// benchBatch builds a batch of 1 KiB records of about size bytes
// (uncompressed), compressed with codec.
func benchBatch(size, codec int) []byte {
	rng := rand.New(rand.NewSource(1))
	var recs []BuildRecord
	for n := 0; n < size; n += 1024 + 10 {
		recs = append(recs, BuildRecord{Key: []byte("key"), Value: benchValue(rng), Timestamp: testBaseTs + int64(len(recs))})
	}
	return AppendBatch(nil, BatchOptions{LeaderEpoch: -1, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Codec: codec}, recs)
}

// BenchmarkValidateAppend measures what the broker spends validating one
// produced batch: the whole append-time check, decompression included.
// Bytes/op are the batch's uncompressed size, so MB/s compare codecs on
// the records they carry; ratio is uncompressed/compressed. path=shallow
// is the pre-decompression check (Validate: header, CRC, counts), the
// baseline in the same run.
func BenchmarkValidateAppend(b *testing.B) {
	rules := DefaultRules()
	rules.TimestampBeforeMax, rules.TimestampAfterMax, rules.Now = 1<<40, 1<<40, testBaseTs
	for _, size := range []struct {
		name  string
		bytes int
	}{{"16KiB", 16 << 10}, {"1MiB", 1 << 20}} {
		for _, c := range []struct {
			name  string
			codec int
		}{{"none", CodecNone}, {"gzip", CodecGzip}, {"snappy", CodecSnappy}, {"lz4", CodecLZ4}, {"zstd", CodecZstd}} {
			batch := benchBatch(size.bytes, c.codec)
			raw := len(benchBatch(size.bytes, CodecNone))
			ratio := float64(raw) / float64(len(batch))
			b.Run(fmt.Sprintf("path=append/codec=%s/batch=%s", c.name, size.name), func(b *testing.B) {
				b.SetBytes(int64(raw))
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					if _, _, err := ValidateAppend(batch, &rules); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(ratio, "ratio")
			})
			b.Run(fmt.Sprintf("path=shallow/codec=%s/batch=%s", c.name, size.name), func(b *testing.B) {
				b.SetBytes(int64(raw))
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					if _, err := validateShallow(batch, true); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkWalkRecords is the per-record part of ValidateAppend alone.
func BenchmarkWalkRecords(b *testing.B) {
	bt := Batch(benchBatch(1<<20, CodecNone))
	b.SetBytes(int64(len(bt)))
	for b.Loop() {
		if err := walkRecords(bt.Records(), bt.RecordCount(), bt.BaseTimestamp(), tsWindow{}, false); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(bt.RecordCount()), "ns/record")
}

// BenchmarkValidateStored is what recovery and, before it checked as
// Kafka's does, a follower's append spent per batch they take from a log
// or a leader: 1 MiB of 1 KiB records. check=replicated is what a
// follower's append spends now (ValidateReplicated: the CRC, no walk).
func BenchmarkValidateStored(b *testing.B) {
	bt := benchBatch(1<<20, CodecNone)
	for _, c := range []struct {
		name  string
		check func([]byte) (int, error)
	}{{"stored", ValidateStored}, {"replicated", ValidateReplicated}} {
		b.Run("check="+c.name, func(b *testing.B) {
			b.SetBytes(int64(len(bt)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.check(bt); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
