package mmapindex

import (
	"fmt"
	"path/filepath"
	"testing"
)

// BenchmarkIndexLookup measures OffsetIndex.Lookup over indexes of several
// sizes: recent offsets (the warm section) and offsets spread over the whole
// index. Target: < 100 ns, 0 allocs/op.
func BenchmarkIndexLookup(b *testing.B) {
	for _, n := range []int{1 << 10, 1 << 14, 1 << 17} {
		x, err := OpenOffset(filepath.Join(b.TempDir(), "0.index"), 0, n*OffsetEntrySize)
		if err != nil {
			b.Fatal(err)
		}
		fillOffset(b, x, n)
		last := int64(10 * n)
		b.Run(fmt.Sprintf("entries=%d/target=recent", n), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if _, _, ok := x.Lookup(last - int64(i%1000)); !ok {
					b.Fatal("miss")
				}
			}
		})
		b.Run(fmt.Sprintf("entries=%d/target=random", n), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				t := int64(uint64(i)*2654435761) % last
				x.Lookup(t + 10)
			}
		})
		x.Close()
	}
}

// BenchmarkTimeIndexLookup measures TimeIndex.Lookup.
func BenchmarkTimeIndexLookup(b *testing.B) {
	n := 1 << 16
	x, err := OpenTime(filepath.Join(b.TempDir(), "0.timeindex"), 0, n*TimeEntrySize)
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	for i := 1; i <= n; i++ {
		x.MaybeAppend(int64(i*1000), int64(i))
	}
	b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			x.Lookup(int64(uint64(i)*2654435761) % int64(n*1000))
		}
	})
}
