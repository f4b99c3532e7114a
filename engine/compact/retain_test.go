package compact

import (
	"testing"

	"github.com/sluice/sluice/record"
)

// TestRetainEmptyOnlyProducersLast: Kafka's checkBatchRetention keeps a
// batch with no record left (RETAIN_EMPTY) only when it is an active
// producer's last data batch, or, for a producer with no data batch, a
// marker of its current epoch, or the round's last batch
// (upperBoundOffsetOfCleaningRound). Every other emptied batch goes: an
// idempotent producer's earlier batches, a retained empty batch once its
// producer wrote again, a batch that ended some segment of the round, and
// the emptied markers of a producer's earlier epochs.
func TestRetainEmptyOnlyProducersLast(t *testing.T) {
	// Producer 5 (idempotent) writes k at 0, 1, 2; a plain batch
	// overwrites k at 3 and a different key at 4, the round's last.
	l := appendBatch(nil, 0, opts{pid: 5, seq: 0}, r("k", "a", 1))
	l = appendBatch(l, 1, opts{pid: 5, seq: 1}, r("k", "b", 2))
	l = appendBatch(l, 2, opts{pid: 5, seq: 2}, r("k", "c", 3))
	l = appendBatch(l, 3, plain, r("k", "d", 4))
	l = appendBatch(l, 4, plain, r("x", "x", 5))
	empties := func(out []byte) (offs []int64) {
		for _, b := range batchesOf(out) {
			if b.RecordCount() == 0 {
				offs = append(offs, b.LastOffset())
			}
		}
		return offs
	}
	for _, tc := range []struct {
		name  string
		last  map[int64]int64
		upper int64
		want  []int64
	}{
		{name: "the producer's last batch stays", last: map[int64]int64{5: 2}, upper: 5, want: []int64{2}},
		{name: "an expired producer's go", last: map[int64]int64{}, upper: 5, want: nil},
		{name: "the producer wrote later (past this round): the old last goes", last: map[int64]int64{5: 9}, upper: 5, want: nil},
		{name: "the round's last batch stays, no other batch's end", last: map[int64]int64{}, upper: 8, want: []int64{7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c Cleaner
			c.SetAborted(nil)
			m := NewOffsetMap(mib)
			in := l
			if tc.upper == 8 {
				// Batches whose records all go (key-less ones, which
				// a compacted log drops), the last ending the round:
				// as the segments of a round's groups end.
				in = appendBatch(nil, 0, plain, nokey("a", 1))
				in = appendBatch(in, 3, plain, nokey("b", 2))
				in = appendBatch(in, 5, plain, nokey("c", 3), nokey("d", 3), nokey("e", 3))
			}
			if _, _, err := c.Build(m, in, 0); err != nil {
				t.Fatal(err)
			}
			out, _, err := c.Filter(nil, m, in, &Rules{UpperBound: tc.upper,
				ProducerLast: func(pid int64) (int64, bool) { o, ok := tc.last[pid]; return o, ok }})
			if err != nil {
				t.Fatal(err)
			}
			if got := empties(out); len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) {
				t.Fatalf("empty batches ending at %v, want %v", got, tc.want)
			}
		})
	}

	// Producer 9 has no data batch, only markers, at epochs 0 and 1;
	// both are removable (no data of theirs before them). At their delete
	// horizon each is emptied; only the one of the current epoch stays.
	marker := func(base int64, epoch int16) []byte {
		return record.AppendEndTxnMarker(nil, record.MarkerOptions{BaseOffset: base, ProducerID: 9, ProducerEpoch: epoch, Timestamp: 1},
			record.EndTxnMarker{Type: record.ControlCommit})
	}
	ml := append(marker(0, 0), marker(1, 1)...)
	ml = appendBatch(ml, 2, plain, r("x", "x", 5))
	last := func(pid int64) (int64, bool) { return -1, pid == 9 }
	epochOf := func(pid int64) (int16, bool) { return 1, pid == 9 }
	for _, tc := range []struct {
		name   string
		epochs func(int64) (int16, bool)
		want   []int16
	}{
		{name: "current epoch known", epochs: epochOf, want: []int16{1}},
		{name: "epoch not known: every marker stays", epochs: nil, want: []int16{0, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c Cleaner
			out := ml
			for _, now := range []int64{1000, 2000} { // stamp, then past the horizon
				c.SetAborted(nil)
				m := NewOffsetMap(mib)
				if _, _, err := c.Build(m, out, 0); err != nil {
					t.Fatal(err)
				}
				var err error
				out, _, err = c.Filter(nil, m, out, &Rules{Now: now, DeleteRetentionMs: 100, ProducerLast: last, ProducerEpoch: tc.epochs})
				if err != nil {
					t.Fatal(err)
				}
			}
			var got []int16
			for _, b := range batchesOf(out) {
				if b.Control() {
					if b.RecordCount() != 0 {
						t.Fatalf("marker at %d still holds its record past its horizon", b.BaseOffset())
					}
					got = append(got, b.ProducerEpoch())
				}
			}
			if len(got) != len(tc.want) || (len(got) > 0 && got[len(got)-1] != tc.want[len(tc.want)-1]) {
				t.Fatalf("emptied markers kept at epochs %v, want %v", got, tc.want)
			}
		})
	}
}
