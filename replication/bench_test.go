package replication

import (
	"fmt"
	"sync"
	"testing"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/record"
)

// BenchmarkPartitionAppend measures Append of one 16 KiB idempotent batch
// per request, from 1 or 4 concurrent producers, over the memory backend
// (whose chunks are dropped as the benchmark goes, so memory stays flat).
// appends/op is engine appends per request: below 1 when requests coalesce.
// The steady state must allocate O(1) per request, never per record.
func BenchmarkPartitionAppend(b *testing.B) {
	for _, producers := range []int{1, 4} {
		b.Run(fmt.Sprintf("producers=%d/batch=16KiB", producers), func(b *testing.B) {
			st := openStore(b, "memory")
			p, _ := newPartition(b, st, engine.LogConfig{SegmentBytes: 4 << 20}, Options{})
			// 128 records of ~120 bytes: 16 KiB.
			recs := make([]record.BuildRecord, 128)
			for i := range recs {
				recs[i] = record.BuildRecord{Value: make([]byte, 120), Timestamp: 1000}
			}
			bufs := make([][]byte, producers)
			for i := range bufs {
				bufs[i] = record.AppendBatch(nil, record.BatchOptions{ProducerID: int64(i + 1), BaseSequence: 0}, recs)
			}
			b.SetBytes(int64(len(bufs[0])))
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			for i := 0; i < producers; i++ {
				n := b.N / producers
				if i == 0 {
					n += b.N % producers
				}
				wg.Add(1)
				go func(buf []byte, n int) {
					defer wg.Done()
					var seq int32
					for j := 0; j < n; j++ {
						setSequence(buf, seq)
						seq += int32(len(recs))
						if _, err := p.Append(ctx, buf, -1); err != nil {
							b.Error(err)
							return
						}
						if j%256 == 255 {
							if _, err := p.DeleteRecordsBefore(-1); err != nil {
								b.Error(err)
								return
							}
						}
					}
				}(bufs[i], n)
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(p.EngineAppends())/float64(b.N), "appends/op")
		})
	}
}

// discardLog is an engine.Log that numbers batches and drops them: it
// isolates the partition layer's own cost in BenchmarkPartitionOverhead.
type discardLog struct {
	engine.Log // nil: only the methods below are called
	mu         sync.Mutex
	end        int64
}

func (d *discardLog) Append(b []byte, o engine.AppendOptions) (engine.AppendInfo, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	info, err := engine.PrepareAppend(b, d.end, o, 0)
	if err == nil {
		d.end = info.LastOffset + 1
	}
	return info, err
}
func (d *discardLog) EndOffset() int64   { d.mu.Lock(); defer d.mu.Unlock(); return d.end }
func (d *discardLog) StartOffset() int64 { return 0 }
func (d *discardLog) Size() int64        { return 0 }
func (d *discardLog) Close() error       { return nil }

// BenchmarkPartitionOverhead is BenchmarkPartitionAppend over a log that
// discards: what Partition itself costs per request (validation, sequence
// checks, coalescing). It must stay at 0 allocs/op.
func BenchmarkPartitionOverhead(b *testing.B) {
	for _, producers := range []int{1, 4} {
		b.Run(fmt.Sprintf("producers=%d/batch=16KiB", producers), func(b *testing.B) {
			p, err := NewPartition(&discardLog{}, Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			recs := make([]record.BuildRecord, 128)
			for i := range recs {
				recs[i] = record.BuildRecord{Value: make([]byte, 120), Timestamp: 1000}
			}
			bufs := make([][]byte, producers)
			for i := range bufs {
				bufs[i] = record.AppendBatch(nil, record.BatchOptions{ProducerID: int64(i + 1)}, recs)
			}
			b.SetBytes(int64(len(bufs[0])))
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			for i := 0; i < producers; i++ {
				n := b.N / producers
				if i == 0 {
					n += b.N % producers
				}
				wg.Add(1)
				go func(buf []byte, n int) {
					defer wg.Done()
					var seq int32
					for j := 0; j < n; j++ {
						setSequence(buf, seq)
						seq += int32(len(recs))
						if _, err := p.Append(ctx, buf, -1); err != nil {
							b.Error(err)
							return
						}
					}
				}(bufs[i], n)
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(p.EngineAppends())/float64(b.N), "appends/op")
		})
	}
}
