package enginetest

import (
	"fmt"
	"testing"

	"github.com/sluice/sluice/engine"
)

func timestampCases() []testCase {
	return []testCase{
		{"OffsetForTimestamp", testOffsetForTimestamp},
		{"OffsetForTimestampMaxTies", testOffsetForTimestampMaxTies},
		{"OffsetForTimestampAfterDeleteBefore", testOffsetForTimestampAfterDeleteBefore},
	}
}

// tsLog appends, relative to baseTs:
//
//	batch  offsets  record timestamps
//	0      0..2     100 101 102
//	1      3..5     200 205 210
//	2      6        300
//	3      7..9     500 400 600   (out of order inside the batch)
func tsLog(t *testing.T, l engine.Log) {
	t.Helper()
	for i, tss := range [][]int64{{100, 101, 102}, {200, 205, 210}, {300}, {500, 400, 600}} {
		abs := make([]int64, len(tss))
		for j, ts := range tss {
			abs[j] = baseTs + ts
		}
		appendOK(t, l, nil, makeBatchTs(abs, 300, byte(i)), leader(0))
	}
}

// testOffsetForTimestamp: the first record (in offset order) whose
// timestamp is >= ts, at record level inside a batch. Kafka
// (LogSegment.findOffsetByTimestamp): the first batch whose maxTimestamp is
// >= ts, then the first record in it with timestamp >= ts.
func testOffsetForTimestamp(t *testing.T, h *harness) {
	for _, seg := range []int64{0, 700} {
		t.Run(fmt.Sprintf("segmentBytes=%d", seg), func(t *testing.T) {
			id := engine.PartitionID{Topic: "ts", Partition: int32(seg)}
			l := h.createID(id, engine.LogConfig{SegmentBytes: seg})
			if _, _, ok, err := l.OffsetForTimestamp(0); err != nil || ok {
				t.Fatalf("empty log: OffsetForTimestamp(0) ok=%v err=%v, want not found", ok, err)
			}
			if _, _, ok, err := l.OffsetForTimestamp(engine.MaxTimestampQuery); err != nil || ok {
				t.Fatalf("empty log: MaxTimestampQuery ok=%v err=%v, want not found", ok, err)
			}
			tsLog(t, l)
			tests := []struct {
				ts       int64 // relative to baseTs unless max
				max      bool
				wantOff  int64
				wantTs   int64
				wantNone bool
			}{
				{ts: -1000, wantOff: 0, wantTs: 100},
				{ts: 100, wantOff: 0, wantTs: 100},
				{ts: 101, wantOff: 1, wantTs: 101},
				{ts: 102, wantOff: 2, wantTs: 102},
				{ts: 103, wantOff: 3, wantTs: 200},
				{ts: 204, wantOff: 4, wantTs: 205},
				{ts: 210, wantOff: 5, wantTs: 210},
				{ts: 211, wantOff: 6, wantTs: 300},
				{ts: 301, wantOff: 7, wantTs: 500},
				{ts: 450, wantOff: 7, wantTs: 500},
				{ts: 550, wantOff: 9, wantTs: 600},
				{ts: 600, wantOff: 9, wantTs: 600},
				{ts: 601, wantNone: true},
				{max: true, wantOff: 9, wantTs: 600},
			}
			for _, tc := range tests {
				q := baseTs + tc.ts
				if tc.max {
					q = engine.MaxTimestampQuery
				}
				off, ts, ok, err := l.OffsetForTimestamp(q)
				noErr(t, "OffsetForTimestamp", err)
				if tc.wantNone {
					if ok {
						t.Errorf("OffsetForTimestamp(+%d) = %d, %d; want not found", tc.ts, off, ts-baseTs)
					}
					continue
				}
				if !ok || off != tc.wantOff || ts != baseTs+tc.wantTs {
					t.Errorf("OffsetForTimestamp(+%d, max=%v) = %d, +%d, %v; want %d, +%d, true", tc.ts, tc.max, off, ts-baseTs, ok, tc.wantOff, tc.wantTs)
				}
			}
			// Clean reopen keeps the answers (time indexes are rebuilt or reloaded).
			if seg == 700 {
				h.reopen()
				l = h.openID(id, engine.LogConfig{SegmentBytes: seg})
				off, ts, ok, err := l.OffsetForTimestamp(baseTs + 204)
				if err != nil || !ok || off != 4 || ts != baseTs+205 {
					t.Fatalf("after reopen OffsetForTimestamp(+204) = %d, %d, %v, %v; want 4, +205", off, ts-baseTs, ok, err)
				}
			}
		})
	}
}

// testOffsetForTimestampMaxTies: MaxTimestampQuery on ties answers the
// latest record with the largest timestamp, as engine.Log documents.
func testOffsetForTimestampMaxTies(t *testing.T, h *harness) {
	l := h.create(engine.LogConfig{})
	appendOK(t, l, nil, makeBatchTs([]int64{baseTs + 100, baseTs + 300, baseTs + 300}, 10, 1), leader(0)) // 0..2
	appendOK(t, l, nil, makeBatchTs([]int64{baseTs + 300, baseTs + 200}, 10, 2), leader(0))               // 3..4
	off, ts, ok, err := l.OffsetForTimestamp(engine.MaxTimestampQuery)
	noErr(t, "OffsetForTimestamp(max)", err)
	if !ok || off != 3 || ts != baseTs+300 {
		t.Fatalf("MaxTimestampQuery = %d, +%d, %v; want 3, +300, true (latest record with the max timestamp)", off, ts-baseTs, ok)
	}
}

// testOffsetForTimestampAfterDeleteBefore: records below the log start
// offset are gone. Kafka (UnifiedLog.fetchOffsetByTimestamp searches from
// logStartOffset): the answer is never below StartOffset.
func testOffsetForTimestampAfterDeleteBefore(t *testing.T, h *harness) {
	l := h.create(engine.LogConfig{})
	tsLog(t, l)
	noErr(t, "DeleteBefore(4)", l.DeleteBefore(4))
	off, ts, ok, err := l.OffsetForTimestamp(baseTs)
	noErr(t, "OffsetForTimestamp", err)
	if !ok || off != 4 || ts != baseTs+205 {
		t.Fatalf("OffsetForTimestamp(+0) after DeleteBefore(4) = %d, +%d, %v; want 4, +205, true", off, ts-baseTs, ok)
	}
}
