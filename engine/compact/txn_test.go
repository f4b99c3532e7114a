package compact

import (
	"slices"
	"testing"

	"github.com/sluice/sluice/record"
)

// TestAbortedRecordsNeitherHideNorStay: Kafka's cleaner skips aborted
// batches when it builds the offset map and discards them when it filters:
// an aborted value written after a committed one does not remove the
// committed one, and is gone itself; a committed transaction's records
// deduplicate as usual; markers stay.
func TestAbortedRecordsNeitherHideNorStay(t *testing.T) {
	abortMarker := record.AppendEndTxnMarker(nil, record.MarkerOptions{BaseOffset: 2, ProducerID: 5}, record.EndTxnMarker{Type: record.ControlAbort})
	commitMarker := record.AppendEndTxnMarker(nil, record.MarkerOptions{BaseOffset: 4, ProducerID: 6}, record.EndTxnMarker{Type: record.ControlCommit})
	l := appendBatch(nil, 0, plain, r("a", "a-committed", 1))
	l = appendBatch(l, 1, opts{pid: 5, txn: true}, r("a", "a-aborted", 2))
	l = append(l, abortMarker...)
	l = appendBatch(l, 3, opts{pid: 6, txn: true}, r("b", "b-txn", 3))
	l = append(l, commitMarker...)
	l = appendBatch(l, 5, plain, r("b", "b-later", 4), r("c", "c", 5))

	var c Cleaner
	c.SetAborted([]AbortedTxn{{ProducerID: 5, FirstOffset: 1, LastOffset: 2}})
	m := NewOffsetMap(mib)
	if _, _, err := c.Build(m, l, 0); err != nil {
		t.Fatal(err)
	}
	out, _, err := c.Filter(nil, m, l, &Rules{})
	if err != nil {
		t.Fatal(err)
	}
	var values []string
	for _, g := range readLog(t, out) {
		if g.Key != "\x00\x00\x00\x00" && g.Key != "\x00\x00\x00\x01" { // not a marker
			values = append(values, g.Value)
		}
	}
	if !slices.Equal(values, []string{"a-committed", "b-later", "c"}) {
		t.Fatalf("kept %v", values)
	}
	if !containsBatch(out, abortMarker) || !containsBatch(out, commitMarker) {
		t.Fatal("a marker was not kept")
	}
	// Without the aborted transaction, the aborted value would win.
	c.SetAborted(nil)
	m.Clear()
	if _, _, err := c.Build(m, l, 0); err != nil {
		t.Fatal(err)
	}
	if off, ok := m.Get([]byte("a")); !ok || off != 1 {
		t.Fatalf("without SetAborted: a at %d %v", off, ok)
	}
}
