package load

import (
	"math"
	"math/bits"
)

// Histogram counts non-negative int64 values (nanoseconds, here) in
// log-linear buckets, the layout HdrHistogram uses: values below 2^8 each
// have a bucket of their own; above that, every power-of-two range
// [2^k, 2^(k+1)) is cut into 128 equal sub-buckets, so a bucket is at most
// 1/128 (0.8%) of the values it holds wide. That is three significant
// digits for any value an int64 can hold, in a fixed array of 7,296
// counters (57 KiB), with Record a shift, a bit count and an increment:
// no allocation, no per-record state.
//
//	value v            bucket
//	v < 256            v
//	2^k <= v < 2^(k+1) 256 + (k-8)*128 + (v>>(k-7) - 128)     (8 <= k <= 62)
//
// Buckets are ordered like their values, so quantiles read off the
// cumulative counts are ordered too (p50 <= p99 <= p99.9 <= max).
//
// A Histogram is not safe for concurrent use: give each writer its own and
// Merge them afterwards. The zero value is empty and ready to use.
type Histogram struct {
	counts [numBuckets]uint64
	count  uint64
	sum    float64 // for Mean; float64 so that hours of nanoseconds cannot overflow
	min    int64
	max    int64
}

const (
	exactBits  = 8                                          // values below 1<<exactBits are exact
	subBuckets = 1 << (exactBits - 1)                       // sub-buckets per power of two above that
	numBuckets = 1<<exactBits + (62-exactBits+1)*subBuckets // up to 2^63-1
)

// bucketOf returns v's bucket. REQUIRES: v >= 0.
func bucketOf(v int64) int {
	if v < 1<<exactBits {
		return int(v)
	}
	k := bits.Len64(uint64(v)) - 1 // 2^k <= v < 2^(k+1), k >= exactBits
	sub := int(v >> (k - (exactBits - 1)))
	return 1<<exactBits + (k-exactBits)*subBuckets + sub - subBuckets
}

// bucketHigh returns the largest value that falls in bucket i (HdrHistogram's
// "highest equivalent value").
func bucketHigh(i int) int64 {
	if i < 1<<exactBits {
		return int64(i)
	}
	i -= 1 << exactBits
	k := i/subBuckets + exactBits
	sub := int64(i%subBuckets + subBuckets)
	shift := k - (exactBits - 1)
	return (sub+1)<<shift - 1
}

// Record counts v. Negative values (a clock step between two processes)
// count as 0.
func (h *Histogram) Record(v int64) {
	if v < 0 {
		v = 0
	}
	h.counts[bucketOf(v)]++
	if h.count == 0 || v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
	h.count++
	h.sum += float64(v)
}

// Merge adds o's counts to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.count == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.count == 0 || o.min < h.min {
		h.min = o.min
	}
	h.max = max(h.max, o.max)
	h.count += o.count
	h.sum += o.sum
}

// Count returns how many values were recorded.
func (h *Histogram) Count() uint64 { return h.count }

// Min and Max return the exact smallest and largest values recorded (0 when
// empty).
func (h *Histogram) Min() int64 { return h.min }
func (h *Histogram) Max() int64 { return h.max }

// Mean returns the exact mean (0 when empty).
func (h *Histogram) Mean() float64 {
	if h.count == 0 {
		return 0
	}
	return h.sum / float64(h.count)
}

// Quantile returns the value at quantile q in [0, 1]: the highest value of
// the bucket holding the ceil(q*count)-th smallest value, capped at Max, so
// it never understates a latency by more than a bucket's width (0.8%). 0 when
// empty.
func (h *Histogram) Quantile(q float64) int64 {
	if h.count == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.count)))
	rank = max(rank, 1)
	rank = min(rank, h.count)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return min(bucketHigh(i), h.max)
		}
	}
	return h.max
}
