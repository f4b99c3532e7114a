package load

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestBucketBounds checks the bucket layout: every value lands in a bucket
// whose highest value is >= it and within 1/128 of it, buckets are ordered,
// and the last bucket holds MaxInt64.
func TestBucketBounds(t *testing.T) {
	for i := range numBuckets {
		hi := bucketHigh(i)
		if got := bucketOf(hi); got != i {
			t.Fatalf("bucketOf(bucketHigh(%d)=%d) = %d", i, hi, got)
		}
		if i > 0 && bucketOf(bucketHigh(i-1)+1) != i {
			t.Fatalf("value %d after bucket %d does not open bucket %d", bucketHigh(i-1)+1, i-1, i)
		}
	}
	if got := bucketOf(math.MaxInt64); got != numBuckets-1 {
		t.Fatalf("bucketOf(MaxInt64) = %d, want %d", got, numBuckets-1)
	}
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	for range 100_000 {
		v := rng.Int64N(1 << rng.IntN(63))
		hi := bucketHigh(bucketOf(v))
		if hi < v || float64(hi-v) > float64(v)/128+1 {
			t.Fatalf("value %d: bucket high %d", v, hi)
		}
	}
}

// TestQuantiles compares quantiles with the exact ones of a sorted sample.
func TestQuantiles(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	tests := []struct {
		name string
		gen  func() int64
	}{
		{"small", func() int64 { return rng.Int64N(300) }},
		{"uniform-ms", func() int64 { return rng.Int64N(50e6) }},
		{"exp-tail", func() int64 { return int64(rng.ExpFloat64() * 2e6) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var h, a, b Histogram
			vals := make([]int64, 20_001)
			for i := range vals {
				vals[i] = tc.gen()
				h.Record(vals[i])
				if i%2 == 0 {
					a.Record(vals[i])
				} else {
					b.Record(vals[i])
				}
			}
			a.Merge(&b)
			if a != h {
				t.Fatal("merging two halves differs from recording all")
			}
			slices.Sort(vals)
			if h.Min() != vals[0] || h.Max() != vals[len(vals)-1] || h.Count() != uint64(len(vals)) {
				t.Fatalf("min/max/count %d/%d/%d, want %d/%d/%d", h.Min(), h.Max(), h.Count(), vals[0], vals[len(vals)-1], len(vals))
			}
			prev := int64(-1)
			for _, q := range []float64{0, 0.5, 0.9, 0.99, 0.999, 1} {
				rank := max(int(math.Ceil(q*float64(len(vals)))), 1)
				exact := vals[rank-1]
				got := h.Quantile(q)
				if got < exact || float64(got-exact) > float64(exact)/128+1 {
					t.Errorf("q%v = %d, exact %d", q, got, exact)
				}
				if got < prev {
					t.Errorf("q%v = %d below the previous quantile %d", q, got, prev)
				}
				prev = got
			}
			if h.Quantile(1) != h.Max() {
				t.Errorf("q1 = %d, max %d", h.Quantile(1), h.Max())
			}
		})
	}
}

func TestHistogramEmptyAndNegative(t *testing.T) {
	var h Histogram
	if h.Quantile(0.5) != 0 || h.Mean() != 0 || h.Max() != 0 {
		t.Fatal("empty histogram is not all zero")
	}
	h.Record(-5)
	if h.Min() != 0 || h.Quantile(0.99) != 0 {
		t.Fatalf("negative value not counted as 0: min %d", h.Min())
	}
}

func BenchmarkHistogramRecord(b *testing.B) {
	b.ReportAllocs()
	var h Histogram
	v := int64(1)
	for b.Loop() {
		h.Record(v)
		v = (v*7 + 13) & (1<<40 - 1)
	}
}
