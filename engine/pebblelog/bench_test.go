package pebblelog

import (
	"fmt"
	"testing"
	"time"

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
	for i := range val {
		val[i] = byte(i * 7)
	}
	recs := make([]record.BuildRecord, n)
	for i := range recs {
		recs[i] = record.BuildRecord{Value: val, Timestamp: 1}
	}
	return record.AppendBatch(nil, record.BatchOptions{ProducerID: -1}, recs)
}

// BenchmarkAppend appends one batch per op as a leader, committed synced as
// every Append is. Every 256 MiB the log is emptied with DeleteBefore
// so the benchmark measures appends, not a growing LSM.
func BenchmarkAppend(b *testing.B) {
	for _, sz := range benchSizes {
		b.Run(fmt.Sprintf("backend=pebble/batch=%s", sz.name), func(b *testing.B) {
			s := open(b, b.TempDir())
			defer s.Close()
			l, err := s.CreateLog(pid, engine.LogConfig{SegmentBytes: 64 << 20})
			if err != nil {
				b.Fatal(err)
			}
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
	b.Run("backend=pebble/batch=16KiB/max=1MiB", func(b *testing.B) {
		s := open(b, b.TempDir())
		defer s.Close()
		l, err := s.CreateLog(pid, engine.LogConfig{})
		if err != nil {
			b.Fatal(err)
		}
		buf := benchBatch(16 << 10)
		for l.Size() < 64<<20 {
			if _, err := l.Append(buf, engine.AppendOptions{AssignOffsets: true}); err != nil {
				b.Fatal(err)
			}
		}
		// Flush the memtable now so no background flush runs while timing:
		// reads come from sstables through the block cache.
		db := s.(*Store).db
		if err := db.Flush(); err != nil {
			b.Fatal(err)
		}
		// Let the compaction the flush triggers finish too (bounded wait).
		for i := 0; i < 500 && db.Metrics().Compact.NumInProgress > 0; i++ {
			time.Sleep(10 * time.Millisecond)
		}
		b.ReportAllocs()
		b.ResetTimer()
		var total int64
		next := int64(0)
		for i := 0; i < b.N; i++ {
			sl, err := l.Read(next, 1<<20, -1)
			if err != nil {
				b.Fatal(err)
			}
			n := sl.Len()
			total += n
			next += n / int64(len(buf)) * int64(record.Batch(buf).RecordCount())
			if next >= l.EndOffset() {
				next = 0
			}
			sl.Release()
		}
		b.SetBytes(total / int64(b.N))
	})
}

// BenchmarkAppendLSM appends 1 MiB batches to one log, committed synced as
// the broker does, and reports what the LSM wrote for them: sstables
// written by flushes and compactions per GB appended, and the compactions.
// It records the effect of the Pebble options in options.go (value
// separation, l0TargetFileBytes); run it with -benchtime 1200x to write
// about 1.2 GB, as in BENCHMARKS.md.
func BenchmarkAppendLSM(b *testing.B) {
	b.Run("backend=pebble/batch=1MiB", func(b *testing.B) {
		s := open(b, b.TempDir())
		defer s.Close()
		l, err := s.CreateLog(pid, engine.LogConfig{})
		if err != nil {
			b.Fatal(err)
		}
		buf := benchBatch(1 << 20)
		opts := engine.AppendOptions{AssignOffsets: true}
		b.SetBytes(int64(len(buf)))
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := l.Append(buf, opts); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		m := s.(*Store).db.Metrics()
		t := m.Total()
		gb := float64(b.N) * float64(len(buf)) / 1e9
		b.ReportMetric(float64(t.TablesFlushed+t.TablesCompacted)/gb, "sstables/GB")
		b.ReportMetric(float64(m.Compact.Count)/gb, "compactions/GB")
	})
}
