package memlog

import (
	"fmt"
	"testing"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/record"
)

var benchSizes = []struct {
	name string
	size int
}{{"1KiB", 1 << 10}, {"16KiB", 16 << 10}, {"1MiB", 1 << 20}}

// benchBatch builds one batch of about size bytes from 1 KiB records.
func benchBatch(size int) []byte {
	n := max(1, size/(1<<10))
	val := make([]byte, size/n-30)
	recs := make([]record.BuildRecord, n)
	for i := range recs {
		recs[i] = record.BuildRecord{Value: val, Timestamp: 1}
	}
	return record.AppendBatch(nil, record.BatchOptions{ProducerID: -1}, recs)
}

// BenchmarkAppend appends one batch per op as a leader. The log is emptied
// (DeleteBefore its end) every 256 MiB so memory stays bounded. 1 KiB and
// 16 KiB batches are packed into shared blocks (0 allocs/op); a 1 MiB
// batch gets a block of its own, one allocation per batch (chunk.go).
// Before blocks (a buffer per chunk grown by doubling, 2026-12-06, shared
// 2-core VM): 1 MiB 470 MB/s, 3.0 MB allocated per op, 18% of the time in
// memclr; after: 1.4-2.5 GB/s, 1.0 MB per op, memmove (the one copy) and
// CRC-32C all that is left.
func BenchmarkAppend(b *testing.B) {
	for _, sz := range benchSizes {
		b.Run(fmt.Sprintf("backend=memory/batch=%s", sz.name), func(b *testing.B) {
			_, l := openLog(b, engine.LogConfig{SegmentBytes: 64 << 20})
			buf := benchBatch(sz.size)
			opts := engine.AppendOptions{AssignOffsets: true}
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := l.Append(buf, opts); err != nil {
					b.Fatal(err)
				}
				if l.Size() > 256<<20 {
					if err := l.DeleteBefore(l.EndOffset()); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkReadSequential reads a 64 MiB log of 16 KiB batches front to
// back, 1 MiB per Read, wrapping around.
func BenchmarkReadSequential(b *testing.B) {
	b.Run("backend=memory/batch=16KiB/max=1MiB", func(b *testing.B) {
		_, l := openLog(b, engine.LogConfig{})
		buf := benchBatch(16 << 10)
		for l.Size() < 64<<20 {
			if _, err := l.Append(buf, engine.AppendOptions{AssignOffsets: true}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportAllocs()
		b.ResetTimer()
		var total int64
		next := int64(0)
		for i := 0; i < b.N; i++ {
			s, err := l.Read(next, 1<<20, -1)
			if err != nil {
				b.Fatal(err)
			}
			total += s.Len()
			bs := s.Bytes()
			last := record.Batch(bs[len(bs)-int(record.Batch(bs).Size()):])
			_ = last
			next += int64(len(bs)/len(buf)) * int64(record.Batch(buf).RecordCount())
			if next >= l.EndOffset() {
				next = 0
			}
			s.Release()
		}
		b.SetBytes(total / int64(b.N))
	})
}
