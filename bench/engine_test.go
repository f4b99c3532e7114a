package bench

import (
	"fmt"
	"testing"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/record"

	_ "github.com/sluice/sluice/engine/memlog"
	_ "github.com/sluice/sluice/engine/pebblelog"
	_ "github.com/sluice/sluice/segment"
)

// batchSizes are the append sizes measured: a small produce, a typical
// linger-batched one, and the default max.message.bytes order.
var batchSizes = []struct {
	name  string
	bytes int
}{
	{"1KiB", 1 << 10},
	{"16KiB", 16 << 10},
	{"1MiB", 1 << 20},
}

// makeBatch builds one uncompressed client batch of at most size bytes
// from 1 KiB records (smaller ones for small batches).
func makeBatch(size int) []byte {
	valueSize := 1000
	if size < 4<<10 {
		valueSize = 100
	}
	value := make([]byte, valueSize)
	for i := range value {
		value[i] = byte(i * 7)
	}
	var recs []record.BuildRecord
	var out []byte
	for {
		recs = append(recs, record.BuildRecord{Key: []byte("key"), Value: value, Timestamp: 1_700_000_000_000 + int64(len(recs))})
		next := record.AppendBatch(nil, record.BatchOptions{LeaderEpoch: -1, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
		if len(next) > size && out != nil {
			return out
		}
		out = next
	}
}

// openLog opens a fresh store of backend in a temp dir with one log.
func openLog(b *testing.B, backend string) (engine.Store, engine.Log) {
	b.Helper()
	s, err := engine.Open(backend, engine.Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatalf("open %s: %v", backend, err)
	}
	l, err := s.CreateLog(engine.PartitionID{Topic: "bench", Partition: 0}, engine.LogConfig{})
	if err != nil {
		b.Fatalf("create log: %v", err)
	}
	return s, l
}

// resetEvery bounds what one benchmark keeps (memory for the memory
// backend, disk and page cache for the others): past it the log is
// truncated to empty with the timer stopped.
const resetEvery = 256 << 20

// BenchmarkEngineAppend measures leader appends of one pre-built batch
// (validation, offset rewrite, write; no fsync, as Kafka's default). The
// batch is rewritten in place each time, which Append allows; the timed
// loop allocates nothing on the benchmark's side, so allocs/op is the
// backend's own.
func BenchmarkEngineAppend(b *testing.B) {
	for _, backend := range engine.Names() {
		for _, bs := range batchSizes {
			b.Run(fmt.Sprintf("backend=%s/batch=%s", backend, bs.name), func(b *testing.B) {
				s, l := openLog(b, backend)
				defer s.Close()
				batch := makeBatch(bs.bytes)
				opts := engine.AppendOptions{AssignOffsets: true, LeaderEpoch: 1}
				written := 0
				b.SetBytes(int64(len(batch)))
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if _, err := l.Append(batch, opts); err != nil {
						b.Fatal(err)
					}
					if written += len(batch); written >= resetEvery {
						b.StopTimer()
						if err := l.Truncate(l.StartOffset()); err != nil {
							b.Fatal(err)
						}
						written = 0
						b.StartTimer()
					}
				}
				b.StopTimer()
			})
		}
	}
}

// BenchmarkEngineRead measures sequential reads of 1 MiB (64 batches of 16
// KiB) of a flushed, warm 32 MiB log through Read and the slice's ReadAt
// into one reused buffer: the copy path (the zero-copy path to a socket is
// measured in zerocopy).
func BenchmarkEngineRead(b *testing.B) {
	const batches = 2048 // 32 MiB of data
	const perRead = 64
	for _, backend := range engine.Names() {
		b.Run("backend="+backend, func(b *testing.B) {
			s, l := openLog(b, backend)
			defer s.Close()
			batch := makeBatch(16 << 10)
			for i := 0; i < batches; i++ {
				if _, err := l.Append(batch, engine.AppendOptions{AssignOffsets: true}); err != nil {
					b.Fatal(err)
				}
			}
			recs := int64(record.Batch(batch).RecordCount())
			want := perRead * len(batch)
			buf := make([]byte, want)
			// Settle before timing: write the data back (so reads do not
			// contend with writeback) and read it all once (page cache and
			// the backend's own caches warm), as a tailing consumer sees it.
			if err := l.Flush(); err != nil {
				b.Fatal(err)
			}
			for pos := int64(0); pos < l.EndOffset(); pos += perRead * recs {
				sl, err := l.Read(pos, want, -1)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := sl.ReadAt(buf[:sl.Len()], 0); err != nil {
					b.Fatal(err)
				}
				sl.Release()
			}
			b.SetBytes(int64(want))
			b.ReportAllocs()
			b.ResetTimer()
			pos := int64(0)
			for i := 0; i < b.N; i++ {
				sl, err := l.Read(pos, want, -1)
				if err != nil {
					b.Fatal(err)
				}
				n := sl.Len()
				if n != int64(want) {
					b.Fatalf("Read(%d) returned %d bytes, want %d", pos, n, want)
				}
				if _, err := sl.ReadAt(buf[:n], 0); err != nil {
					b.Fatal(err)
				}
				sl.Release()
				if pos += perRead * recs; pos >= l.EndOffset() {
					pos = 0
				}
			}
		})
	}
}
