package replication

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/record"
)

// The test wrappers of engine.Log forward the aborted-transaction index.
func (c *countingLog) AppendAbortedTxn(a engine.AbortedTxn) error {
	return c.Log.(engine.TxnIndex).AppendAbortedTxn(a)
}
func (c *countingLog) AbortedTxns(from, upTo int64) ([]engine.AbortedTxn, error) {
	return c.Log.(engine.TxnIndex).AbortedTxns(from, upTo)
}
func (l *truncLog) AppendAbortedTxn(a engine.AbortedTxn) error {
	return l.Log.(engine.TxnIndex).AppendAbortedTxn(a)
}
func (l *truncLog) AbortedTxns(from, upTo int64) ([]engine.AbortedTxn, error) {
	return l.Log.(engine.TxnIndex).AbortedTxns(from, upTo)
}

// txnBatch builds a transactional batch of n records.
func txnBatch(pid int64, epoch int16, seq int32, n int) []byte {
	recs := make([]record.BuildRecord, n)
	for i := range recs {
		recs[i] = record.BuildRecord{Value: []byte("t"), Timestamp: 1000 + int64(i)}
	}
	return record.AppendBatch(nil, record.BatchOptions{
		ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq, Attributes: record.TransactionalBit,
	}, recs)
}

func mustAppend(t *testing.T, p *Partition, b []byte) AppendResult {
	t.Helper()
	res, err := p.Append(context.Background(), b, -1)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	return res
}

func mustMarker(t *testing.T, p *Partition, m TxnMarker) int64 {
	t.Helper()
	off, err := p.WriteTxnMarker(context.Background(), m)
	if err != nil {
		t.Fatalf("WriteTxnMarker(%+v): %v", m, err)
	}
	return off
}

func wantLSO(t *testing.T, p *Partition, want int64) {
	t.Helper()
	if got := p.LastStableOffset(); got != want {
		t.Fatalf("LSO %d, want %d (HW %d)", got, want, p.HighWatermark())
	}
}

// txnScenario writes: 0-1 plain, 2-4 producer 7's transaction, 5-6
// producer 8's, 7 ABORT of 7, 8 COMMIT of 8, checking the LSO on the way.
func txnScenario(t *testing.T, p *Partition) {
	t.Helper()
	mustAppend(t, p, batch(-1, 0, -1, 2))
	wantLSO(t, p, 2)
	mustAppend(t, p, txnBatch(7, 0, 0, 3))
	wantLSO(t, p, 2) // the HW is 5, the open transaction starts at 2
	mustAppend(t, p, txnBatch(8, 3, 0, 2))
	wantLSO(t, p, 2)
	if off := mustMarker(t, p, TxnMarker{ProducerID: 7, ProducerEpoch: 0, CoordinatorEpoch: 1}); off != 7 {
		t.Fatalf("abort marker at %d, want 7", off)
	}
	wantLSO(t, p, 5) // producer 8's transaction is still open
	if off := mustMarker(t, p, TxnMarker{ProducerID: 8, ProducerEpoch: 3, Commit: true, CoordinatorEpoch: 1}); off != 8 {
		t.Fatalf("commit marker at %d, want 8", off)
	}
	wantLSO(t, p, 9)
}

// wantAbortedTxns checks Kafka's fetch answer for [from, upTo).
func wantAbortedTxns(t *testing.T, p *Partition, from, upTo int64, want ...engine.AbortedTxn) {
	t.Helper()
	got, err := p.AbortedTransactions(from, upTo)
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("AbortedTransactions(%d, %d) = %+v, %v; want %+v", from, upTo, got, err, want)
	}
}

var abort7 = engine.AbortedTxn{ProducerID: 7, FirstOffset: 2, LastOffset: 7, LastStableOffset: 5}

func TestTxnLastStableOffsetAndAbortedIndex(t *testing.T) {
	forEachBackend(t, func(t *testing.T, backend string) {
		st := openStore(t, backend)
		p, _ := newPartition(t, st, engine.LogConfig{}, Options{Topic: "t"})
		txnScenario(t, p)
		wantAbortedTxns(t, p, 0, 9, abort7)
		wantAbortedTxns(t, p, 8, 9)
		wantAbortedTxns(t, p, 0, 2)

		// The markers are control batches as Kafka writes them.
		var markers []record.EndTxnMarker
		for _, b := range readAll(t, p) {
			if m, ok, err := record.BatchEndTxnMarker(b); ok && err == nil {
				if b.BaseSequence() != -1 || !b.Transactional() {
					t.Fatalf("marker batch seq %d transactional %v", b.BaseSequence(), b.Transactional())
				}
				markers = append(markers, m)
			}
		}
		if !slices.Equal(markers, []record.EndTxnMarker{{Type: record.ControlAbort, CoordinatorEpoch: 1}, {Type: record.ControlCommit, CoordinatorEpoch: 1}}) {
			t.Fatalf("markers %+v", markers)
		}

		// Producers: no transaction open, epochs and coordinator epochs kept.
		ps := p.Producers()
		slices.SortFunc(ps, func(a, b ProducerInfo) int { return int(a.ProducerID - b.ProducerID) })
		if len(ps) != 2 || ps[0].ProducerID != 7 || ps[0].CurrentTxnStartOffset != -1 || ps[0].CoordinatorEpoch != 1 || ps[1].ProducerEpoch != 3 {
			t.Fatalf("Producers %+v", ps)
		}

		// A new transaction: open, reported, and holding the LSO.
		mustAppend(t, p, txnBatch(7, 0, 3, 1)) // 9
		wantLSO(t, p, 9)
		for _, pi := range p.Producers() {
			if pi.ProducerID == 7 && (pi.CurrentTxnStartOffset != 9 || pi.LastSequence != 3) {
				t.Fatalf("producer 7: %+v", pi)
			}
		}
		sl, err := p.ReadCommitted(0, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		buf, _ := sl.AppendTo(nil)
		sl.Release()
		var last record.Batch
		for pos := 0; pos < len(buf); pos += last.Size() {
			last = record.Batch(buf[pos:])
		}
		if last.NextOffset() != 9 {
			t.Fatalf("ReadCommitted ends at %d, want the LSO 9", last.NextOffset())
		}
	})
}

func TestTxnFencing(t *testing.T) {
	forEachBackend(t, func(t *testing.T, backend string) {
		st := openStore(t, backend)
		p, _ := newPartition(t, st, engine.LogConfig{}, Options{Topic: "t"})
		mustAppend(t, p, txnBatch(7, 2, 0, 1)) // 0
		ctx := context.Background()
		if _, err := p.WriteTxnMarker(ctx, TxnMarker{ProducerID: 7, ProducerEpoch: 1}); !errors.Is(err, ErrInvalidProducerEpoch) {
			t.Fatalf("marker with an older epoch: %v", err)
		}
		if _, err := p.Append(ctx, batch(7, 2, 1, 1), -1); !errors.Is(err, ErrInvalidTxnState) {
			t.Fatalf("plain batch inside a transaction: %v", err)
		}
		wantLSO(t, p, 0)
		// An abort with a bumped epoch (KIP-360) fences the old epoch.
		mustMarker(t, p, TxnMarker{ProducerID: 7, ProducerEpoch: 3, CoordinatorEpoch: 5}) // 1
		wantLSO(t, p, 2)
		if _, err := p.Append(ctx, txnBatch(7, 2, 1, 1), -1); !errors.Is(err, ErrInvalidProducerEpoch) {
			t.Fatalf("batch of the fenced epoch: %v", err)
		}
		if _, err := p.WriteTxnMarker(ctx, TxnMarker{ProducerID: 7, ProducerEpoch: 3, CoordinatorEpoch: 4}); !errors.Is(err, ErrCoordinatorFenced) {
			t.Fatalf("marker of an older coordinator: %v", err)
		}
		// A marker for a producer never seen here is written, indexes nothing.
		if off := mustMarker(t, p, TxnMarker{ProducerID: 99, ProducerEpoch: 0}); off != 2 {
			t.Fatalf("marker for an unknown producer at %d", off)
		}
		wantAbortedTxns(t, p, 0, 100, engine.AbortedTxn{ProducerID: 7, FirstOffset: 0, LastOffset: 1, LastStableOffset: 2})
		// The new epoch starts a new transaction at sequence 0.
		mustAppend(t, p, txnBatch(7, 4, 0, 1)) // 3
		wantLSO(t, p, 3)
	})
}

// TestTxnRebuildAfterRestart: a reopened partition rebuilds the open
// transactions from the log (the LSO stays below them) and keeps the
// index; a marker then ends them.
func TestTxnRebuildAfterRestart(t *testing.T) {
	forEachBackend(t, func(t *testing.T, backend string) {
		st := openStore(t, backend)
		p, _ := newPartition(t, st, engine.LogConfig{}, Options{Topic: "t"})
		txnScenario(t, p)
		mustAppend(t, p, txnBatch(9, 0, 0, 2)) // 9-10, left open
		wantLSO(t, p, 9)
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		l, err := st.OpenLog(testID, engine.LogConfig{})
		if err != nil {
			t.Fatal(err)
		}
		p2, err := NewPartition(l, Options{Topic: "t"})
		if err != nil {
			t.Fatal(err)
		}
		defer p2.Close()
		wantLSO(t, p2, 9)
		wantAbortedTxns(t, p2, 0, 11, abort7)
		mustMarker(t, p2, TxnMarker{ProducerID: 9, ProducerEpoch: 0}) // 11
		wantLSO(t, p2, 12)
		wantAbortedTxns(t, p2, 0, 12, abort7, engine.AbortedTxn{ProducerID: 9, FirstOffset: 9, LastOffset: 11, LastStableOffset: 12})
	})
}

// TestTxnFollower: a follower learns transactions and markers from the
// leader's batches, writes its own aborted-transaction index, and its LSO
// follows its high watermark.
func TestTxnFollower(t *testing.T) {
	forEachBackend(t, func(t *testing.T, backend string) {
		st := openStore(t, backend)
		leader, _ := newPartition(t, st, engine.LogConfig{}, Options{Topic: "t"})
		txnScenario(t, leader)
		sl, err := leader.ReadReplica(0, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := sl.AppendTo(nil)
		sl.Release()

		c := newTestCluster(t, backend)
		f := c.addBroker(2, nil, Options{})
		if err := f.MakeFollower(c.state(1, 1, 1, 2)); err != nil {
			t.Fatal(err)
		}
		// Up to producer 8's batch: both transactions open.
		cut := 0
		for pos := 0; pos < len(data); {
			b := record.Batch(data[pos:])
			if b.BaseOffset() == 7 {
				cut = pos
				break
			}
			pos += b.Size()
		}
		if err := f.AppendAsFollower(append([]byte(nil), data[:cut]...)); err != nil {
			t.Fatal(err)
		}
		f.UpdateFollowerHW(7)
		wantLSO(t, f, 2)
		if err := f.AppendAsFollower(append([]byte(nil), data[cut:]...)); err != nil {
			t.Fatal(err)
		}
		wantLSO(t, f, 2) // the markers are not below the HW yet
		f.UpdateFollowerHW(8)
		wantLSO(t, f, 5)
		f.UpdateFollowerHW(9)
		wantLSO(t, f, 9)
		wantAbortedTxns(t, f, 0, 9, abort7)
	})
}

// TestTxnCommittedWatchWakesOnMarker: a read_committed fetch parked for
// more bytes than one marker wakes when the marker moves the LSO over
// the transaction's records.
func TestTxnCommittedWatchWakesOnMarker(t *testing.T) {
	forEachBackend(t, func(t *testing.T, backend string) {
		st := openStore(t, backend)
		p, _ := newPartition(t, st, engine.LogConfig{}, Options{Topic: "t"})
		mustAppend(t, p, txnBatch(7, 0, 0, 3))
		w := NewWaiter()
		var n Watch
		w.Reset()
		n.PrepareCommitted(p, w)
		n.Link()
		defer n.Unlink()
		if !w.Arm(1 << 20) {
			t.Fatal("Arm: already satisfied")
		}
		mustAppend(t, p, txnBatch(7, 0, 3, 1)) // the HW moves, the LSO does not
		select {
		case <-w.C():
			t.Fatal("woken by a move of the HW alone")
		default:
		}
		mustMarker(t, p, TxnMarker{ProducerID: 7, Commit: true})
		wantLSO(t, p, 5)
		select {
		case <-w.C():
		case <-time.After(10 * time.Second):
			t.Fatal("the LSO moved past the transaction and the watch was not woken")
		}
		if p.Watchers() != 1 {
			t.Fatalf("Watchers %d", p.Watchers())
		}
	})
}

// TestTxnProducerNotExpiredInTransaction: Kafka's isProducerExpired: a
// producer with an open transaction is kept however idle.
func TestTxnProducerNotExpiredInTransaction(t *testing.T) {
	s := newProducerState(time.Minute)
	s.load(record.Batch(txnBatch(7, 0, 0, 1)), 1000)
	s.load(record.Batch(batch(8, 0, 0, 1)), 1000)
	s.events = nil
	s.expire(1000 + time.Hour.Milliseconds())
	if s.producers[7] == nil || s.producers[8] != nil {
		t.Fatalf("after expiry: 7 kept %v, 8 kept %v", s.producers[7] != nil, s.producers[8] != nil)
	}
}

// TestTxnRebuildRestoresLostIndexEntry: an ABORT marker in the log whose
// index entry was lost (a crash between the two writes) gets its entry
// back when the partition rebuilds its state from the log.
func TestTxnRebuildRestoresLostIndexEntry(t *testing.T) {
	forEachBackend(t, func(t *testing.T, backend string) {
		st := openStore(t, backend)
		l, err := st.CreateLog(testID, engine.LogConfig{})
		if err != nil {
			t.Fatal(err)
		}
		opts := engine.AppendOptions{AssignOffsets: true}
		for _, b := range [][]byte{
			batch(-1, 0, -1, 1),  // 0
			txnBatch(7, 0, 0, 2), // 1-2
			txnBatch(8, 0, 0, 1), // 3
			record.AppendEndTxnMarker(nil, record.MarkerOptions{ProducerID: 7}, record.EndTxnMarker{Type: record.ControlAbort}), // 4
		} {
			if _, err := l.Append(b, opts); err != nil {
				t.Fatal(err)
			}
		}
		p, err := NewPartition(l, Options{Topic: "t"})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		wantAbortedTxns(t, p, 0, 5, engine.AbortedTxn{ProducerID: 7, FirstOffset: 1, LastOffset: 4, LastStableOffset: 3})
		wantLSO(t, p, 3) // producer 8's transaction is open
	})
}
