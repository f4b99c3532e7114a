package cleaner

import (
	"fmt"
	"math"
	"testing"

	"github.com/sluice/sluice/engine"
)

// TestGroups checks groups against Kafka's groupSegmentsBySize: a segment
// joins the run before it while the run stays within segment.bytes, its
// index within segment.index.bytes, and its offsets within an int32 of the
// run's base (an empty segment joins regardless of offsets); segments at
// or past the round's end are not grouped.
func TestGroups(t *testing.T) {
	// seg builds consecutive segments from (base, bytes) pairs; the last
	// one's Next is next.
	seg := func(next int64, pairs ...int64) []engine.SegmentInfo {
		var out []engine.SegmentInfo
		for i := 0; i < len(pairs); i += 2 {
			s := engine.SegmentInfo{Base: pairs[i], Bytes: pairs[i+1], Next: next}
			if i+2 < len(pairs) {
				s.Next = pairs[i+2]
			}
			out = append(out, s)
		}
		return out
	}
	for _, tc := range []struct {
		name                    string
		segs                    []engine.SegmentInfo
		end, uncleanable        int64
		maxBytes                int64
		maxIndexBytes, interval int
		want                    string
	}{
		{name: "small segments merge up to segment.bytes",
			segs: seg(500, 0, 61, 100, 61, 200, 900, 300, 61, 400, 0), end: 500, uncleanable: 500, maxBytes: 1000,
			maxIndexBytes: 1 << 20, interval: 4096, want: "[{0 200 2} {200 500 3}]"},
		{name: "a full segment is a group of its own",
			segs: seg(300, 0, 1000, 100, 1000, 200, 10), end: 300, uncleanable: 300, maxBytes: 1000,
			maxIndexBytes: 1 << 20, interval: 4096, want: "[{0 100 1} {100 200 1} {200 300 1}]"},
		{name: "stops at the round's end",
			segs: seg(400, 0, 10, 100, 10, 200, 10, 300, 10), end: 150, uncleanable: 400, maxBytes: 1000,
			maxIndexBytes: 1 << 20, interval: 4096, want: "[{0 200 2}]"},
		{name: "index limit: one entry per interval, 12 bytes each",
			// 1000 bytes at interval 100: 11 entries, 132 bytes each.
			segs: seg(400, 0, 1000, 100, 1000, 200, 1000, 300, 1000), end: 400, uncleanable: 400, maxBytes: 1 << 20,
			maxIndexBytes: 300, interval: 100, want: "[{0 200 2} {200 400 2}]"},
		{name: "no index limit when segment.index.bytes is unset",
			segs: seg(400, 0, 1000, 100, 1000, 200, 1000, 300, 1000), end: 400, uncleanable: 400, maxBytes: 1 << 20,
			maxIndexBytes: 0, interval: 100, want: "[{0 400 4}]"},
		{name: "offsets up to an int32 past the group's base join",
			// The second segment's last offset is at most MaxInt32.
			segs: seg(math.MaxInt32+1, 0, 10, 100, 10), end: math.MaxInt32 + 1, uncleanable: math.MaxInt32 + 1, maxBytes: 1000,
			maxIndexBytes: 1 << 20, interval: 4096, want: fmt.Sprintf("[{0 %d 2}]", int64(math.MaxInt32+1))},
		{name: "offsets beyond an int32 of the group's base start a group",
			segs: seg(math.MaxInt32+2, 0, 10, 100, 10), end: math.MaxInt32 + 2, uncleanable: math.MaxInt32 + 2, maxBytes: 1000,
			maxIndexBytes: 1 << 20, interval: 4096, want: fmt.Sprintf("[{0 100 1} {100 %d 1}]", int64(math.MaxInt32+2))},
		{name: "an empty segment joins whatever its offsets",
			segs: seg(1<<33, 0, 10, 100, 0), end: 1 << 33, uncleanable: 1 << 33, maxBytes: 1000,
			maxIndexBytes: 1 << 20, interval: 4096, want: fmt.Sprintf("[{0 %d 2}]", int64(1)<<33)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := fmt.Sprint(groups(tc.segs, tc.end, tc.uncleanable, tc.maxBytes, tc.maxIndexBytes, tc.interval))
			if got != tc.want {
				t.Fatalf("groups = %s, want %s", got, tc.want)
			}
		})
	}
}
