package replication

import (
	"math"
	"testing"

	"github.com/sluice/sluice/engine"
)

// Regression tests: producer state after a crash before the first segment
// roll (large segments), when the transaction began before the last
// ProducerScanBytes of the log.

// bigSegments never rolls in these tests, as the default 1 GiB segments
// before a busy partition's first roll.
var bigSegments = engine.LogConfig{SegmentBytes: 1 << 30}

// wantAbortIndexed writes producer 2's ABORT marker and checks that its
// transaction, begun at txnFirst, is in the aborted-transaction index
// and no longer holds the LSO.
func wantAbortIndexed(t *testing.T, p *Partition, txnFirst int64) {
	t.Helper()
	off := mustMarker(t, p, TxnMarker{ProducerID: 2, ProducerEpoch: 0, Commit: false})
	ab, err := p.AbortedTransactions(0, off+1)
	if err != nil {
		t.Fatal(err)
	}
	if len(ab) != 1 || ab[0].ProducerID != 2 || ab[0].FirstOffset != txnFirst {
		t.Fatalf("after the ABORT marker at %d: aborted index %+v, want producer 2 from %d: read_committed consumers would read the aborted records", off, ab, txnFirst)
	}
	wantLSO(t, p, off+1)
}

// TestNoSnapshotRebuildSeesTxnBeforeScanWindow: with no snapshot at all,
// the rebuild reads the whole log, so an open transaction begun before
// the last ProducerScanBytes still holds the LSO and its ABORT is
// indexed.
func TestNoSnapshotRebuildSeesTxnBeforeScanWindow(t *testing.T) {
	forEachBackend(t, func(t *testing.T, backend string) {
		st := openStore(t, backend)
		p, _ := newPartition(t, st, bigSegments, Options{Topic: "t", ProducerScanBytes: snapScanBytes})
		txnFirst := mustAppend(t, p, txnBatch(2, 0, 0, 2)).BaseOffset
		for i := 0; i < 300; i++ {
			mustAppend(t, p, batch(-1, 0, -1, 5))
		}
		wantLSO(t, p, txnFirst)
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		l, err := st.OpenLog(testID, bigSegments)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.(engine.SnapshotStore).DeleteSnapshotsFrom(0); err != nil {
			t.Fatal(err)
		}
		p2, err := NewPartition(l, Options{Topic: "t", ProducerScanBytes: snapScanBytes})
		if err != nil {
			t.Fatal(err)
		}
		defer p2.Close()
		wantLSO(t, p2, txnFirst)
		wantAbortIndexed(t, p2, txnFirst)
	})
}

// TestSnapshotEveryScanBytesBeforeFirstRoll: without a roll, a snapshot
// is still taken every ProducerScanBytes appended, so a crash (no
// snapshot at the log end) leaves one at most that far back, on every
// backend, and the state is loaded from it.
func TestSnapshotEveryScanBytesBeforeFirstRoll(t *testing.T) {
	for _, backend := range snapshotBackends {
		t.Run(backend, func(t *testing.T) {
			st := openStore(t, backend)
			p, cl := newPartition(t, st, bigSegments, Options{Topic: "t", ProducerScanBytes: snapScanBytes})
			b1, r1, txnFirst := oldStateScenario(t, p)
			ss := cl.Log.(engine.SnapshotStore)
			if due := ss.SnapshotDue(); due > 0 {
				t.Fatalf("the log rolled (SnapshotDue %d): the test needs a log that did not", due)
			}
			off, _, ok, err := ss.LatestSnapshot(math.MaxInt64)
			if err != nil || !ok || off <= txnFirst {
				t.Fatalf("latest snapshot before Close: %d %v %v, want one above %d", off, ok, err, txnFirst)
			}
			// Each batch of 5 records is well under snapScanBytes/5 bytes.
			if lag := p.LogEndOffset() - off; lag > snapScanBytes/10 {
				t.Fatalf("latest snapshot at %d, log end %d: more than ProducerScanBytes behind", off, p.LogEndOffset())
			}
			p2 := reopenPartition2(t, st, p, func(l engine.Log) { dropLatestSnapshot(t, l) })
			wantLSO(t, p2, txnFirst)
			res := mustAppend(t, p2, append([]byte(nil), b1...))
			if !res.Duplicate || res.BaseOffset != r1.BaseOffset {
				t.Fatalf("retry of producer 1's batch: %+v, want a duplicate of %+v", res, r1)
			}
			wantAbortIndexed(t, p2, txnFirst)
		})
	}
}

// TestTruncationBeforeFirstRollKeepsOpenTxn: a follower's truncation
// reloads the producer state from a snapshot below the new end, which
// exists without a roll, and the old transaction still holds the LSO.
func TestTruncationBeforeFirstRollKeepsOpenTxn(t *testing.T) {
	st := openStore(t, "segment")
	p, _ := newPartition(t, st, bigSegments, Options{Topic: "t", ProducerScanBytes: snapScanBytes})
	_, _, txnFirst := oldStateScenario(t, p)
	if err := p.MakeFollower(LeaderAndIsr{Leader: 2, LeaderEpoch: 1, ISR: []int32{0, 2}, Replicas: []int32{0, 2}}); err != nil {
		t.Fatal(err)
	}
	if err := p.TruncateTo(p.LogEndOffset() - 1); err != nil {
		t.Fatal(err)
	}
	if err := p.MakeLeader(LeaderAndIsr{Leader: 0, LeaderEpoch: 2, ISR: []int32{0}, Replicas: []int32{0}}); err != nil {
		t.Fatal(err)
	}
	wantLSO(t, p, txnFirst)
	wantAbortIndexed(t, p, txnFirst)
}

// reopenPartition2 is reopenPartition for bigSegments logs.
func reopenPartition2(t *testing.T, st engine.Store, p *Partition, damage func(engine.Log)) *Partition {
	t.Helper()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := st.OpenLog(testID, bigSegments)
	if err != nil {
		t.Fatal(err)
	}
	if damage != nil {
		damage(l)
	}
	p2, err := NewPartition(l, Options{Topic: "t", ProducerScanBytes: snapScanBytes})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p2.Close() })
	return p2
}
