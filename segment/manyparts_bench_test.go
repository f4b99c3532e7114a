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
			ls := make([]engine.Log, c.parts)
			cfg := engine.LogConfig{SegmentBytes: 64 << 20, RetentionMs: -1, RetentionBytes: -1}
			for i := range ls {
				l, err := st.CreateLog(engine.PartitionID{Topic: "t", Partition: int32(i)}, cfg)
				if err != nil {
					b.Fatal(err)
				}
				ls[i] = l
			}
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
