package segment

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/sluice/sluice/engine"
)

// BenchmarkAppendManyPartitions appends one 1 KiB-record batch per call to
// each of partitions logs in turn (a keyed producer over one topic's
// partitions), with the open-segment cache bounded at open: with
// open < partitions every append finds its segment closed and reopens it
// (the 10,000-partition case of issue 33); open >= partitions is the
// baseline in the same run. reopens/op counts the reopens per append.
//
//	go test -run '^$' -bench AppendManyPartitions -benchmem ./segment/
func BenchmarkAppendManyPartitions(b *testing.B) {
	for _, c := range []struct{ parts, open int }{{2000, 200}, {2000, 4000}} {
		b.Run(fmt.Sprintf("partitions=%d/open=%d", c.parts, c.open), func(b *testing.B) {
			noFsync(b)
			withOpenMax(b, c.open)
			st := openStore(b, b.TempDir(), nil)
			defer st.Close()
			ls := createLogs(b, st, c.parts, engine.LogConfig{SegmentBytes: 64 << 20, RetentionMs: -1, RetentionBytes: -1})
			batch := mkBatch(rand.New(rand.NewSource(1)), 4, 1_700_000_000_000, 1000)
			opts := engine.AppendOptions{AssignOffsets: true, LeaderEpoch: 1}
			// One round first: every log's files exist and its epoch is
			// written, so the loop measures the steady state.
			for _, l := range ls {
				if _, err := l.Append(batch, opts); err != nil {
					b.Fatal(err)
				}
			}
			_, re0, _ := st.OpenSegments()
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := ls[i].Append(batch, opts); err != nil {
					b.Fatal(err)
				}
				if i++; i == len(ls) {
					i = 0
				}
			}
			_, re1, _ := st.OpenSegments()
			b.ReportMetric(float64(re1-re0)/float64(b.N), "reopens/op")
		})
	}
}

// BenchmarkTailReadManyPartitions appends a 1 KiB-record batch to each of
// partitions logs in turn and reads it back at once, as a consumer
// tailing every partition does (the OMB shape over 10,000 partitions: a
// batch or two per partition per fetch). The read finds the batch's
// position and end among the last batches the segment remembers, without
// a read of the .log.
//
//	go test -run '^$' -bench TailReadManyPartitions -benchmem ./segment/
func BenchmarkTailReadManyPartitions(b *testing.B) {
	noFsync(b)
	withOpenMax(b, 2*tailBenchParts)
	st := openStore(b, b.TempDir(), nil)
	defer st.Close()
	appendAndReadTails(b, st, false)
}

// tailBenchParts is how many logs the tail benchmarks spread over.
const tailBenchParts = 2000

// appendAndReadTails appends one 1 KiB batch to each of tailBenchParts
// logs of st in turn and reads it back at once; copyOut also copies the
// read's bytes out (a pread of a file slice, a copy of a memory one), as
// the fetch's writer does.
func appendAndReadTails(b *testing.B, st *Store, copyOut bool) {
	ls := createLogs(b, st, tailBenchParts, engine.LogConfig{SegmentBytes: 64 << 20, RetentionMs: -1, RetentionBytes: -1})
	batch := mkBatch(rand.New(rand.NewSource(1)), 1, 1_700_000_000_000, 1000)
	out := make([]byte, len(batch))
	opts := engine.AppendOptions{AssignOffsets: true, LeaderEpoch: 1}
	read := func(l engine.Log, off int64) {
		s, err := l.Read(off, 1<<20, -1)
		if err != nil || s.Len() != int64(len(batch)) {
			b.Fatalf("read at %d: %d bytes, %v", off, s.Len(), err)
		}
		if copyOut {
			if n, err := s.ReadAt(out, 0); n != len(out) {
				b.Fatalf("read at %d: %d bytes, %v", off, n, err)
			}
		}
		s.Release()
	}
	for _, l := range ls {
		info, err := l.Append(batch, opts)
		if err != nil {
			b.Fatal(err)
		}
		read(l, info.FirstOffset)
	}
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		info, err := ls[i].Append(batch, opts)
		if err != nil {
			b.Fatal(err)
		}
		read(ls[i], info.FirstOffset)
		if i++; i == len(ls) {
			i = 0
		}
	}
}

// BenchmarkTailFetchManyPartitions is BenchmarkTailReadManyPartitions with
// the read's bytes copied out, as the fetch's writer does (a pread of a
// file slice, a copy of a memory one), with the tail cache on and off: the
// append and tail fetch of one 1 KiB batch, over 2,000 logs.
func BenchmarkTailFetchManyPartitions(b *testing.B) {
	for _, c := range []struct {
		name  string
		cache int64
	}{{"cache=on", 0}, {"cache=off", -1}} {
		b.Run(c.name, func(b *testing.B) {
			noFsync(b)
			withOpenMax(b, 2*tailBenchParts)
			st, err := Open(engine.Options{Dir: b.TempDir(), Logger: quietLogger(b), TailCacheBytes: c.cache})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			appendAndReadTails(b, st, true)
			hits, misses, _ := st.TailCache()
			b.ReportMetric(float64(hits)/float64(max(hits+misses, 1)), "hit-ratio")
		})
	}
}
