package metastore

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkCommitOffsets measures one synced offset commit of N partitions,
// the consumer's hot write. Allocations must not grow with N; most of the
// time is the fsync.
func BenchmarkCommitOffsets(b *testing.B) {
	for _, n := range []int{1, 16, 256} {
		b.Run(fmt.Sprintf("partitions=%d", n), func(b *testing.B) {
			s := openTest(b, b.TempDir())
			offs := make(map[TopicPartition]CommittedOffset, n)
			for p := 0; p < n; p++ {
				offs[TopicPartition{Topic: "bench-topic", Partition: int32(p)}] = CommittedOffset{
					Offset: int64(p), LeaderEpoch: 3, CommitTime: time.UnixMilli(1_700_000_000_000),
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := s.CommitOffsets("bench-group", offs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkFetchOffsets measures reading back a group's N committed offsets.
func BenchmarkFetchOffsets(b *testing.B) {
	for _, n := range []int{16, 256} {
		b.Run(fmt.Sprintf("partitions=%d", n), func(b *testing.B) {
			s := openTest(b, b.TempDir())
			offs := make(map[TopicPartition]CommittedOffset, n)
			for p := 0; p < n; p++ {
				offs[TopicPartition{Topic: "bench-topic", Partition: int32(p)}] = CommittedOffset{Offset: int64(p)}
			}
			if err := s.CommitOffsets("bench-group", offs); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				got, err := s.FetchOffsets("bench-group")
				if err != nil || len(got) != n {
					b.Fatalf("FetchOffsets = %d, %v", len(got), err)
				}
			}
		})
	}
}
