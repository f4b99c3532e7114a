package engine

import (
	"fmt"
	"testing"
)

func ee(epoch int32, start int64) EpochEntry { return EpochEntry{Epoch: epoch, StartOffset: start} }

func entriesEqual(a, b []EpochEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestEpochCacheAssign: only newer epochs are recorded; an epoch that
// starts where (or before) the previous one did replaces it, as Kafka's
// LeaderEpochFileCache.assign does; negative epochs are ignored.
func TestEpochCacheAssign(t *testing.T) {
	type step struct {
		epoch   int32
		start   int64
		changed bool
	}
	tests := []struct {
		name  string
		steps []step
		want  []EpochEntry
	}{
		{"empty", nil, nil},
		{"ascending", []step{{0, 0, true}, {1, 10, true}, {3, 25, true}}, []EpochEntry{ee(0, 0), ee(1, 10), ee(3, 25)}},
		{"same-epoch-again", []step{{1, 0, true}, {1, 5, false}}, []EpochEntry{ee(1, 0)}},
		{"older-epoch", []step{{2, 0, true}, {1, 5, false}}, []EpochEntry{ee(2, 0)}},
		{"negative", []step{{-1, 0, false}, {0, 3, true}, {-1, 5, false}}, []EpochEntry{ee(0, 3)}},
		{"empty-epoch-replaced", []step{{1, 0, true}, {2, 10, true}, {3, 10, true}}, []EpochEntry{ee(1, 0), ee(3, 10)}},
		{"start-behind", []step{{1, 0, true}, {2, 10, true}, {3, 5, true}}, []EpochEntry{ee(1, 0), ee(3, 5)}},
		{"replaces-all", []step{{1, 5, true}, {2, 8, true}, {4, 0, true}}, []EpochEntry{ee(4, 0)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := NewEpochCache(nil)
			for i, s := range tc.steps {
				if got := c.Assign(s.epoch, s.start); got != s.changed {
					t.Fatalf("step %d Assign(%d, %d) = %v, want %v", i, s.epoch, s.start, got, s.changed)
				}
			}
			if got := c.Entries(); !entriesEqual(got, tc.want) {
				t.Fatalf("Entries = %v, want %v", got, tc.want)
			}
			wantLatest := int32(-1)
			if n := len(tc.want); n > 0 {
				wantLatest = tc.want[n-1].Epoch
			}
			if c.Latest() != wantLatest {
				t.Fatalf("Latest = %d, want %d", c.Latest(), wantLatest)
			}
		})
	}
}

// TestNewEpochCacheSanitizes: a damaged checkpoint (unordered entries) is
// loaded keeping the invariant (strictly ascending epoch and offset).
func TestNewEpochCacheSanitizes(t *testing.T) {
	c := NewEpochCache([]EpochEntry{ee(1, 0), ee(3, 10), ee(2, 20), ee(5, 10), ee(-1, 30), ee(6, 40)})
	want := []EpochEntry{ee(1, 0), ee(5, 10), ee(6, 40)}
	if got := c.Entries(); !entriesEqual(got, want) {
		t.Fatalf("Entries = %v, want %v", got, want)
	}
	got := c.Entries()
	got[0].Epoch = 99
	if !entriesEqual(c.Entries(), want) {
		t.Fatalf("Entries returned the cache's own slice")
	}
}

func TestEpochCacheTruncateFromEnd(t *testing.T) {
	base := []EpochEntry{ee(1, 0), ee(2, 10), ee(4, 20)}
	tests := []struct {
		end     int64
		want    []EpochEntry
		changed bool
	}{
		{30, base, false},
		{21, base, false},
		{20, base[:2], true},
		{11, base[:2], true},
		{10, base[:1], true},
		{1, base[:1], true},
		{0, nil, true},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("end=%d", tc.end), func(t *testing.T) {
			c := NewEpochCache(base)
			if got := c.TruncateFromEnd(tc.end); got != tc.changed {
				t.Fatalf("changed = %v, want %v", got, tc.changed)
			}
			if got := c.Entries(); !entriesEqual(got, tc.want) {
				t.Fatalf("Entries = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestEpochCacheTruncateFromStart(t *testing.T) {
	base := []EpochEntry{ee(1, 0), ee(2, 10), ee(4, 20)}
	tests := []struct {
		start   int64
		want    []EpochEntry
		changed bool
	}{
		{0, base, false},
		{5, []EpochEntry{ee(1, 5), ee(2, 10), ee(4, 20)}, true},
		{10, []EpochEntry{ee(2, 10), ee(4, 20)}, true},
		{15, []EpochEntry{ee(2, 15), ee(4, 20)}, true},
		{20, []EpochEntry{ee(4, 20)}, true},
		{100, []EpochEntry{ee(4, 100)}, true},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("start=%d", tc.start), func(t *testing.T) {
			c := NewEpochCache(base)
			if got := c.TruncateFromStart(tc.start); got != tc.changed {
				t.Fatalf("changed = %v, want %v", got, tc.changed)
			}
			if got := c.Entries(); !entriesEqual(got, tc.want) {
				t.Fatalf("Entries = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestEndOffsetForEpoch follows KIP-101/KIP-279 and Kafka's
// LeaderEpochFileCache.endOffsetFor: the largest known epoch <= the asked
// one, and where the next epoch starts (log end for the latest); an epoch
// older than the history answers itself and the history's first start
// offset; a newer one, or none, is UNDEFINED.
func TestEndOffsetForEpoch(t *testing.T) {
	hist := []EpochEntry{ee(1, 0), ee(3, 10), ee(6, 25)}
	tests := []struct {
		name      string
		entries   []EpochEntry
		epoch     int32
		wantEpoch int32
		wantEnd   int64
	}{
		{"empty", nil, 5, -1, -1},
		{"undefined", hist, -1, -1, -1},
		{"older-than-history", hist[1:], 1, 1, 10},
		{"older-than-history-2", hist[1:], 2, 2, 10},
		{"exact-first", hist, 1, 1, 10},
		{"between", hist, 2, 1, 10},
		{"exact-middle", hist, 3, 3, 25},
		{"between-later", hist, 5, 3, 25},
		{"latest", hist, 6, 6, 40},
		{"newer-than-latest", hist, 9, -1, -1},
		{"single-latest", hist[:1], 1, 1, 40},
		{"single-newer", hist[:1], 2, -1, -1},
		{"single-older", hist[:1], 0, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, end := EndOffsetForEpoch(tc.entries, tc.epoch, 40)
			if e != tc.wantEpoch || end != tc.wantEnd {
				t.Fatalf("EndOffsetForEpoch(%d) = %d, %d; want %d, %d", tc.epoch, e, end, tc.wantEpoch, tc.wantEnd)
			}
		})
	}
}
