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
// deduplicate as usual; markers stay (through this first cleaning).
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

// markerBatch is a transaction marker of producer pid at base.
func markerBatch(base, pid int64, commit bool, ts int64) []byte {
	typ := record.ControlAbort
	if commit {
		typ = record.ControlCommit
	}
	return record.AppendEndTxnMarker(nil, record.MarkerOptions{BaseOffset: base, ProducerID: pid, Timestamp: ts}, record.EndTxnMarker{Type: typ})
}

// cleanRound runs one cleaning round (SetAborted, Build, Filter) at now
// over l, as engine/cleaner does, with delete.retention.ms 100.
func cleanRound(t *testing.T, c *Cleaner, l []byte, aborted []AbortedTxn, now int64, last func(int64) (int64, bool)) []byte {
	t.Helper()
	c.SetAborted(aborted)
	m := NewOffsetMap(mib)
	if _, _, err := c.Build(m, l, 0); err != nil {
		t.Fatal(err)
	}
	out, _, err := c.Filter(nil, m, l, &Rules{Now: now, DeleteRetentionMs: 100, ProducerLast: last})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ValidateCleaned(out); err != nil {
		t.Fatalf("cleaned log at %d does not validate: %v", now, err)
	}
	return out
}

// markersIn returns the producer ids of the control batches of l with
// their delete horizon (-1: none) and record count.
func markersIn(l []byte) (pids []int64, horizons []int64, counts []int32) {
	for _, b := range batchesOf(l) {
		if !b.Control() {
			continue
		}
		h := int64(-1)
		if b.Attributes()&record.DeleteHorizonBit != 0 {
			h = b.BaseTimestamp()
		}
		pids, horizons, counts = append(pids, b.ProducerID()), append(horizons, h), append(counts, b.RecordCount())
	}
	return pids, horizons, counts
}

// TestMarkersKeptThenRemoved: Kafka's rule for transaction markers
// (LogCleaner's CleanedTransactionMetadata, checkBatchRetention and the
// delete horizon of filterTo). A marker stays unchanged while a cleaning
// still reads data of its transaction before it (a committed transaction's
// records compacted away in that same cleaning, an aborted one's records
// removed then); the next cleaning, finding none, keeps it once more with a
// delete horizon (now + delete.retention.ms) in its baseTimestamp; a
// cleaning before the horizon keeps it; one at or after it removes it. The
// marker of a committed transaction whose records survive is never
// removed.
func TestMarkersKeptThenRemoved(t *testing.T) {
	l := appendBatch(nil, 0, opts{pid: 5, txn: true}, r("a", "a1", 1))
	l = append(l, markerBatch(1, 5, true, 2)...) // commit; a1 goes in round 1
	l = appendBatch(l, 2, plain, r("a", "a2", 3))
	l = appendBatch(l, 3, opts{pid: 6, txn: true}, r("b", "b-aborted", 4))
	l = append(l, markerBatch(4, 6, false, 5)...) // abort
	l = appendBatch(l, 5, opts{pid: 7, txn: true}, r("k", "k-committed", 6))
	l = append(l, markerBatch(6, 7, true, 7)...) // commit; k stays
	l = appendBatch(l, 7, plain, r("c", "c", 8))
	aborted := []AbortedTxn{{ProducerID: 6, FirstOffset: 3, LastOffset: 4}}

	var c Cleaner
	rounds := []struct {
		now          int64
		wantPids     []int64
		wantHorizons []int64
	}{
		{1000, []int64{5, 6, 7}, []int64{-1, -1, -1}},     // data read before each: all kept as they are
		{2000, []int64{5, 6, 7}, []int64{2100, 2100, -1}}, // no data before 5's and 6's: stamped
		{2099, []int64{5, 6, 7}, []int64{2100, 2100, -1}}, // before the horizon: kept
		{2100, []int64{7}, []int64{-1}},                   // at the horizon: removed
		{9000, []int64{7}, []int64{-1}},                   // k-committed still there
	}
	for i, rd := range rounds {
		l = cleanRound(t, &c, l, aborted, rd.now, nil)
		pids, horizons, counts := markersIn(l)
		if !slices.Equal(pids, rd.wantPids) || !slices.Equal(horizons, rd.wantHorizons) {
			t.Fatalf("round %d at %d: markers of %v with horizons %v, want %v %v", i+1, rd.now, pids, horizons, rd.wantPids, rd.wantHorizons)
		}
		for j, n := range counts {
			if n != 1 {
				t.Fatalf("round %d: marker of %d has %d records", i+1, pids[j], n)
			}
		}
		if i == 1 {
			// The stamped markers still read as markers.
			for _, b := range batchesOf(l) {
				if m, ok, err := record.BatchEndTxnMarker(b); b.Control() && (err != nil || !ok || (m.Type == record.ControlCommit) != (b.ProducerID() != 6)) {
					t.Fatalf("stamped marker of %d: %+v %v %v", b.ProducerID(), m, ok, err)
				}
			}
		}
	}
	var values []string
	for _, g := range readLog(t, l) {
		if g.Key != "\x00\x00\x00\x01" {
			values = append(values, g.Value)
		}
	}
	if !slices.Equal(values, []string{"a2", "k-committed", "c"}) {
		t.Fatalf("kept %v", values)
	}
}

// TestMarkerOfActiveProducerStays: a marker of a producer still active
// with no data batch in its state (its last word was the marker, Kafka's
// lastDataOffset None) is kept past its horizon as an empty batch, for the
// epoch it carries; an emptied control batch of no active producer goes at
// the next cleaning.
func TestMarkerOfActiveProducerStays(t *testing.T) {
	l := appendBatch(nil, 0, opts{pid: 5, txn: true}, r("a", "a1", 1))
	l = append(l, markerBatch(1, 5, false, 2)...)
	l = appendBatch(l, 2, plain, r("c", "c", 3))
	aborted := []AbortedTxn{{ProducerID: 5, FirstOffset: 0, LastOffset: 1}}
	active := func(pid int64) (int64, bool) { return -1, pid == 5 }
	var c Cleaner
	for _, now := range []int64{1000, 2000, 2100} {
		l = cleanRound(t, &c, l, aborted, now, active)
	}
	pids, _, counts := markersIn(l)
	if !slices.Equal(pids, []int64{5}) || counts[0] != 0 {
		t.Fatalf("markers %v with %v records, want producer 5's, emptied", pids, counts)
	}
	l = cleanRound(t, &c, l, aborted, 3000, nil)
	if pids, _, _ := markersIn(l); len(pids) != 0 {
		t.Fatalf("an emptied marker of an inactive producer stayed: %v", pids)
	}
}
