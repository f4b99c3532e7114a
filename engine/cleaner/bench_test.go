package cleaner_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/engine/cleaner"
	_ "github.com/sluice/sluice/engine/memlog"
	_ "github.com/sluice/sluice/engine/pebblelog"
	"github.com/sluice/sluice/record"
	_ "github.com/sluice/sluice/segment"
)

// BenchmarkClean measures one cleaner round on each backend over a log of
// about 8 MiB in 1 MiB segments: 10,000 keys each written 8 times, 100-byte
// values, 50 records a batch. MB/s counts the log's bytes (what the first
// pass reads; the second reads them again and writes an eighth back). The
// offset map is 16 MiB (the memory bound: log.cleaner.dedupe.buffer.size
// per thread), whatever the number of keys.
//
//	go test -run '^$' -bench Clean -benchtime 10x -count 3 ./engine/cleaner/
func BenchmarkClean(b *testing.B) {
	for _, backend := range []string{"memory", "pebble", "segment"} {
		b.Run(backend, func(b *testing.B) { benchClean(b, backend) })
	}
}

func benchClean(b *testing.B, backend string) {
	const (
		keys      = 10_000
		rounds    = 8
		batchRecs = 50
	)
	cfg := engine.LogConfig{Compact: true, SegmentBytes: 1 << 20, DeleteRetention: time.Hour}.WithDefaults()
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	build := func() (engine.Store, engine.Log) {
		s, err := engine.Open(backend, engine.Options{Dir: b.TempDir(), Now: func() time.Time { return now }})
		if err != nil {
			b.Fatal(err)
		}
		l, err := s.CreateLog(engine.PartitionID{Topic: "bench"}, cfg)
		if err != nil {
			b.Fatal(err)
		}
		value := make([]byte, 100)
		recs := make([]record.BuildRecord, 0, batchRecs)
		for r := 0; r < rounds; r++ {
			for k := 0; k < keys; k += batchRecs {
				recs = recs[:0]
				for i := k; i < k+batchRecs; i++ {
					recs = append(recs, record.BuildRecord{Key: fmt.Appendf(nil, "key-%06d", i), Value: value, Timestamp: now.UnixMilli()})
				}
				bt := record.AppendBatch(nil, record.BatchOptions{LeaderEpoch: -1, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
				if _, err := l.Append(bt, engine.AppendOptions{AssignOffsets: true}); err != nil {
					b.Fatal(err)
				}
			}
		}
		return s, l
	}
	c, err := cleaner.New(16<<20, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		s, l := build()
		b.SetBytes(l.Size())
		b.StartTimer()
		res, err := c.Clean(cleaner.Target{ID: engine.PartitionID{Topic: "bench"}, Log: l, Config: cfg, Bound: -1}, now)
		if err != nil {
			b.Fatal(err)
		}
		if res.CleanedTo <= res.Progress.FirstDirty {
			b.Fatalf("nothing cleaned: %+v", res)
		}
		b.StopTimer()
		s.Close()
		b.StartTimer()
	}
}
