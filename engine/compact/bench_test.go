package compact

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/sluice/sluice/record"
)

// benchLog is a log of n 1 KiB records over keys keys chosen at random, in
// batches of 16 (16 KiB, the Java producer's batch.size), compressed with
// codec. Values are text-like (2:1 compressible) so that lz4 has work.
func benchLog(n, keys, codec int) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "abcdefghijklmnop"
	var log []byte
	recs := make([]kv, 0, 16)
	for off := 0; off < n; {
		recs = recs[:0]
		for i := 0; i < 16 && off+i < n; i++ {
			v := make([]byte, 1024)
			for j := range v {
				v[j] = alphabet[rng.IntN(len(alphabet))]
			}
			recs = append(recs, kv{Key: fmt.Appendf(nil, "key-%06d", rng.IntN(keys)), Value: v, Ts: int64(off + i)})
		}
		log = appendBatch(log, int64(off), opts{codec: codec}, recs...)
		off += len(recs)
	}
	return log
}

// BenchmarkClean measures a whole cleaning round, Build and Filter, over a
// 20,000-record log of 1 KiB records on 10,000 keys (about 86% of the
// batches lose records and are rewritten): MB/s of log cleaned.
func BenchmarkClean(b *testing.B) {
	for _, bc := range []struct {
		name  string
		codec int
	}{{"none", record.CodecNone}, {"lz4", record.CodecLZ4}} {
		b.Run("codec="+bc.name, func(b *testing.B) {
			log := benchLog(20_000, 10_000, bc.codec)
			m := NewOffsetMap(1 << 20)
			var c Cleaner
			var dst []byte
			var st Stats
			b.SetBytes(int64(len(log)))
			b.ReportAllocs()
			for b.Loop() {
				m.Clear()
				if _, full, err := c.Build(m, log, 0); err != nil || full {
					b.Fatalf("Build: full %v err %v", full, err)
				}
				var err error
				if dst, st, err = c.Filter(dst[:0], m, log, &Rules{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(st.BytesWritten)/float64(st.BytesRead), "kept-ratio")
		})
	}
}
