package enginetest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/sluice/sluice/engine"
)

// txnIndexCases check engine.TxnIndex, the aborted-transaction index
// (Kafka's .txnindex and UnifiedLog.collectAbortedTransactions).
func txnIndexCases() []testCase {
	return []testCase{
		{"TxnIndexQuery", testTxnIndexQuery},
		{"TxnIndexTruncate", testTxnIndexTruncate},
		{"TxnIndexRetention", testTxnIndexRetention},
		{"TxnIndexCompaction", testTxnIndexCompaction},
	}
}

func txnIndex(t *testing.T, h *harness, l engine.Log) engine.TxnIndex {
	t.Helper()
	ti, ok := l.(engine.TxnIndex)
	if !ok {
		t.Skipf("the %s backend's %T is not an engine.TxnIndex", h.backend, l)
	}
	return ti
}

// txnFixture fills a log of several segments (offsets 0..59, 20 batches
// of 3) and records aborted transactions whose markers lie in different
// segments; one began in an earlier segment than its marker.
var txnFixture = []engine.AbortedTxn{
	{ProducerID: 1, FirstOffset: 0, LastOffset: 5, LastStableOffset: 6},
	{ProducerID: 2, FirstOffset: 3, LastOffset: 20, LastStableOffset: 12},
	{ProducerID: 3, FirstOffset: 12, LastOffset: 50, LastStableOffset: 51},
	{ProducerID: 4, FirstOffset: 51, LastOffset: 56, LastStableOffset: 57},
}

func fillTxns(t *testing.T, h *harness, cfg engine.LogConfig) (engine.Log, engine.TxnIndex) {
	t.Helper()
	l := h.create(cfg)
	fill(t, l, nil, 20, 3, 100, baseTs, 10, 1)
	ti := txnIndex(t, h, l)
	for _, a := range txnFixture {
		noErr(t, fmt.Sprintf("AppendAbortedTxn(%+v)", a), ti.AppendAbortedTxn(a))
	}
	return l, ti
}

// wantAborted fails unless AbortedTxns(from, upTo) returns the fixture
// entries of producers pids, in order.
func wantAborted(t *testing.T, what string, ti engine.TxnIndex, from, upTo int64, pids ...int64) {
	t.Helper()
	got, err := ti.AbortedTxns(from, upTo)
	noErr(t, what, err)
	var ids []int64
	for _, a := range got {
		ids = append(ids, a.ProducerID)
		if a != txnFixture[a.ProducerID-1] {
			t.Fatalf("%s: entry %+v, appended as %+v", what, a, txnFixture[a.ProducerID-1])
		}
	}
	if !slices.Equal(ids, pids) {
		t.Fatalf("%s: AbortedTxns(%d, %d) gave producers %v, want %v", what, from, upTo, ids, pids)
	}
}

// testTxnIndexQuery: Kafka (TransactionIndex.collectAbortedTxns): a fetch
// of [from, upTo) gets the aborted transactions with lastOffset >= from
// and firstOffset < upTo, in order, across segments (a transaction whose
// marker lies in a later segment than the fetched range included); a
// marker outside the log is refused; a clean reopen keeps the entries.
func testTxnIndexQuery(t *testing.T, h *harness) {
	cfg := engine.LogConfig{SegmentBytes: 1024}
	l, ti := fillTxns(t, h, cfg)
	if len(l.(engine.Compactable).InactiveSegments()) < 3 {
		t.Fatalf("fixture: want several segments")
	}
	check := func(when string, ti engine.TxnIndex) {
		t.Helper()
		wantAborted(t, when, ti, 0, 60, 1, 2, 3, 4)
		wantAborted(t, when, ti, 0, 3, 1)
		wantAborted(t, when, ti, 6, 12, 2)
		wantAborted(t, when, ti, 13, 14, 2, 3)
		wantAborted(t, when, ti, 21, 30, 3)
		wantAborted(t, when, ti, 57, 60)
	}
	check("open", ti)
	wantErr(t, "marker at the log end", ti.AppendAbortedTxn(engine.AbortedTxn{ProducerID: 9, FirstOffset: 58, LastOffset: 60}), engine.ErrOffsetOutOfRange)
	h.reopen()
	l = h.openID(defaultID, cfg)
	check("after reopen", txnIndex(t, h, l))
}

// testTxnIndexTruncate: Kafka (TransactionIndex.truncateTo): a truncation
// drops the entries whose marker it removes, in the active segment and in
// removed ones; a restart (TruncateFullyAndStartAt) drops them all.
func testTxnIndexTruncate(t *testing.T, h *harness) {
	cfg := engine.LogConfig{SegmentBytes: 1024}
	l, ti := fillTxns(t, h, cfg)
	noErr(t, "Truncate(51)", l.Truncate(51))
	wantAborted(t, "after Truncate(51)", ti, 0, 100, 1, 2, 3)
	noErr(t, "Truncate(18)", l.Truncate(18))
	wantAborted(t, "after Truncate(18)", ti, 0, 100, 1)
	// Appends go on, and an entry for a new marker lands after the cut.
	fill(t, l, nil, 4, 3, 100, baseTs, 10, 2)
	again := engine.AbortedTxn{ProducerID: 2, FirstOffset: 3, LastOffset: 20, LastStableOffset: 12}
	noErr(t, "AppendAbortedTxn after truncation", ti.AppendAbortedTxn(again))
	wantAborted(t, "after append", ti, 0, 100, 1, 2)
	h.reopen()
	l = h.openID(defaultID, cfg)
	wantAborted(t, "after reopen", txnIndex(t, h, l), 0, 100, 1, 2)
	noErr(t, "TruncateFullyAndStartAt", fullTruncater(t, h, l).TruncateFullyAndStartAt(100))
	wantAborted(t, "after restart", txnIndex(t, h, l), 0, 1000)
}

// testTxnIndexRetention: entries go with the segment holding their marker
// (Kafka deletes a segment's .txnindex with it): a fetch from the new log
// start still gets the transactions whose marker is in kept segments.
func testTxnIndexRetention(t *testing.T, h *harness) {
	cfg := engine.LogConfig{SegmentBytes: 1024}
	l, ti := fillTxns(t, h, cfg)
	segs := l.(engine.Compactable).InactiveSegments()
	// Delete the segments before the one holding offset 20.
	var cut int64
	for _, s := range segs {
		if s.Base <= 20 {
			cut = s.Base
		}
	}
	if cut == 0 {
		t.Fatalf("fixture: offset 20 is in the first segment")
	}
	noErr(t, "DeleteBefore", l.DeleteBefore(cut))
	wantAborted(t, "after DeleteBefore", ti, l.StartOffset(), 100, 2, 3, 4)
	h.reopen()
	l = h.openID(defaultID, cfg)
	wantAborted(t, "after reopen", txnIndex(t, h, l), l.StartOffset(), 100, 2, 3, 4)
}

// testTxnIndexCompaction: cleaning replaces segments but keeps their
// aborted transactions (a read_committed consumer of a compacted topic
// must still skip what remains of an aborted transaction).
func testTxnIndexCompaction(t *testing.T, h *harness) {
	l := h.create(compactCfg)
	ti := txnIndex(t, h, l)
	var m keyedModel
	keys := keyNames("key", 50)
	for n := 0; n < 6; n++ {
		m.round(t, l, n, keys, 5, baseTs+int64(n))
	}
	end := l.EndOffset()
	want := []engine.AbortedTxn{
		{ProducerID: 1, FirstOffset: 1, LastOffset: 10, LastStableOffset: 11},
		{ProducerID: 2, FirstOffset: 40, LastOffset: end / 2, LastStableOffset: end/2 + 1},
		{ProducerID: 3, FirstOffset: end - 20, LastOffset: end - 1, LastStableOffset: end},
	}
	for _, a := range want {
		noErr(t, "AppendAbortedTxn", ti.AppendAbortedTxn(a))
	}
	clean(t, h, l, compactCfg)
	got, err := ti.AbortedTxns(0, end)
	noErr(t, "AbortedTxns", err)
	if !slices.Equal(got, want) {
		t.Fatalf("after cleaning: %+v, want %+v", got, want)
	}
	h.reopen()
	l = h.openID(defaultID, compactCfg)
	got, err = txnIndex(t, h, l).AbortedTxns(0, end)
	noErr(t, "AbortedTxns after reopen", err)
	if !slices.Equal(got, want) {
		t.Fatalf("after reopen: %+v, want %+v", got, want)
	}
}
