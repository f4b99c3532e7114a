package group

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/metastore"
	"github.com/sluice/sluice/replication"
)

// txnCommitAt is TxnOffsetCommit of one partition at the given version and
// producer epoch, outside group management; it returns the code.
func (e *env) txnCommitAt(version int16, pid int64, epoch int16, partition int32, offset int64) int16 {
	e.t.Helper()
	r := kmsg.NewPtrTxnOffsetCommitRequest()
	r.Version = version
	r.TransactionalID, r.Group, r.ProducerID, r.ProducerEpoch, r.Generation = "tx", "g", pid, epoch, -1
	p := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	p.Partition, p.Offset = partition, offset
	r.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{p}}}
	resp := do[*kmsg.TxnOffsetCommitResponse](e, r)
	return resp.Topics[0].Partitions[0].ErrorCode
}

func (e *env) completeAt(pid int64, epoch int16, commit bool) {
	e.t.Helper()
	e.endTxn(pid, epoch, commit)
}

// TestTxnOffsetCommitFencedEpoch: the epoch a marker carries (in the log)
// fences older ones: a zombie's TxnOffsetCommit is refused with
// INVALID_PRODUCER_EPOCH at every version, and the new epoch's commit
// applies alone.
func TestTxnOffsetCommitFencedEpoch(t *testing.T) {
	for _, v := range []int16{0, 2, 3} {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			e := newEnv(t, nil)
			if code := e.txnCommitAt(v, 7, 0, 0, 5); code != 0 {
				t.Fatalf("epoch 0 commit: %d", code)
			}
			e.completeAt(7, 1, false) // fencing abort at the bumped epoch
			if code := e.txnCommitAt(v, 7, 0, 1, 99); code != kerr.InvalidProducerEpoch.Code {
				t.Fatalf("zombie at epoch 0: code %d, want INVALID_PRODUCER_EPOCH", code)
			}
			if code := e.txnCommitAt(v, 7, 2, 0, 10); code != 0 {
				t.Fatalf("epoch 2 commit: %d", code)
			}
			if code := e.txnCommitAt(v, 7, 1, 1, 98); code != kerr.InvalidProducerEpoch.Code {
				t.Fatalf("epoch 1 after epoch 2: code %d, want INVALID_PRODUCER_EPOCH", code)
			}
			e.completeAt(7, 2, true)
			if got := e.fetch("g", "t", 0); got != 10 {
				t.Fatalf("t-0 = %d, want 10", got)
			}
			if off, code := e.fetchStable("g", "t", 1); code != 0 || off != -1 {
				t.Fatalf("t-1 = %d, code %d; want -1, 0 (the zombie's offset neither pending nor committed)", off, code)
			}
		})
	}
}

// TestTxnCompletionDropsOlderEpochs: a marker drops, even on commit, the
// producer's pending offsets written at an older epoch, and leaves those at
// a newer epoch pending. The coordinator decides this itself, so the test
// brings a PersistTxn that fences nothing (the log would refuse the
// zombie's batch: TestTxnOffsetCommitFencedEpoch).
func TestTxnCompletionDropsOlderEpochs(t *testing.T) {
	var pos atomic.Int64
	e := newEnv(t, func(o *Options) {
		o.PersistTxn = func(context.Context, string, int64, int16, map[metastore.TopicPartition]metastore.CommittedOffset) (int64, error) {
			return pos.Add(1), nil
		}
	})
	if code := e.txnCommitAt(3, 7, 1, 0, 5); code != 0 {
		t.Fatalf("commit: %d", code)
	}
	e.completeAt(7, 1, true)
	// A pending offset at epoch 0 (a zombie's) is dropped by the epoch 2
	// marker.
	if code := e.txnCommitAt(3, 7, 0, 1, 99); code != 0 {
		t.Fatalf("zombie commit: %d", code)
	}
	e.completeAt(7, 2, true)
	if off, code := e.fetchStable("g", "t", 1); code != 0 || off != -1 {
		t.Fatalf("t-1 = %d, code %d; want -1, 0 (the older epoch's offset dropped)", off, code)
	}
	if pend, _ := e.store.FetchPendingTxnOffsets("g"); len(pend) != 0 {
		t.Fatalf("pending left in the store: %+v", pend)
	}
	// Pending at epoch 3; a stale marker at epoch 2 leaves it.
	if code := e.txnCommitAt(3, 7, 3, 0, 30); code != 0 {
		t.Fatalf("epoch 3 commit: %d", code)
	}
	e.completeAt(7, 2, true)
	if _, code := e.fetchStable("g", "t", 0); code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("after a stale marker: code %d, want UNSTABLE_OFFSET_COMMIT (still pending)", code)
	}
	e.completeAt(7, 3, true)
	if got := e.fetch("g", "t", 0); got != 30 {
		t.Fatalf("t-0 = %d, want 30", got)
	}
}

// TestTxnEpochLoadedFromPending: after a restart the epoch of stored
// pending offsets is known again.
func TestTxnEpochLoadedFromPending(t *testing.T) {
	e := newEnv(t, nil)
	if code := e.txnCommitAt(3, 7, 4, 0, 5); code != 0 {
		t.Fatalf("commit: %d", code)
	}
	e.restart()
	if code := e.txnCommitAt(3, 7, 3, 1, 6); code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("older epoch after restart: code %d, want INVALID_PRODUCER_EPOCH", code)
	}
}

// TestTxnOffsetCommitClusterFenced: the log's INVALID_PRODUCER_EPOCH
// reaches the client (not COORDINATOR_NOT_AVAILABLE), and the coordinator
// refuses no epoch of its own.
func TestTxnOffsetCommitClusterFenced(t *testing.T) {
	fenced := false
	e := newEnv(t, func(o *Options) {
		o.PersistTxn = func(_ context.Context, _ string, pid int64, epoch int16, _ map[metastore.TopicPartition]metastore.CommittedOffset) (int64, error) {
			if fenced {
				return 0, fmt.Errorf("offsets: append: %w: producer %d epoch %d", replication.ErrInvalidProducerEpoch, pid, epoch)
			}
			return 1, nil
		}
	})
	if code := e.txnCommitAt(3, 7, 5, 0, 1); code != 0 {
		t.Fatalf("commit: %d", code)
	}
	if code := e.txnCommitAt(3, 7, 4, 1, 1); code != 0 {
		t.Fatalf("the coordinator refused an epoch itself (the log decides): %d", code)
	}
	fenced = true
	for _, v := range []int16{0, 3} {
		if code := e.txnCommitAt(v, 7, 0, 1, 1); code != kerr.InvalidProducerEpoch.Code {
			t.Fatalf("v%d: code %d, want INVALID_PRODUCER_EPOCH", v, code)
		}
	}
}

// TestTxnEpochSurvivesRestart: the epoch a marker raised is in the log, so
// after a restart a zombie's TxnOffsetCommit at an older epoch is still
// refused, though the producer has no pending offsets left to relearn it
// from.
func TestTxnEpochSurvivesRestart(t *testing.T) {
	e := newEnv(t, nil)
	if code := e.txnCommitAt(3, 7, 0, 0, 5); code != 0 {
		t.Fatalf("commit: %d", code)
	}
	e.completeAt(7, 1, false) // fencing abort at the bumped epoch
	if code := e.txnCommitAt(3, 8, 2, 0, 5); code != 0 {
		t.Fatalf("commit: %d", code)
	}
	e.completeAt(8, 2, true)
	if code := e.txnCommitAt(3, 8, 3, 1, 6); code != 0 { // pending at epoch 3
		t.Fatalf("commit: %d", code)
	}
	e.restart()
	if code := e.txnCommitAt(3, 7, 0, 1, 99); code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("zombie at epoch 0 after restart: code %d, want INVALID_PRODUCER_EPOCH", code)
	}
	if code := e.txnCommitAt(3, 8, 2, 2, 99); code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("producer 8 at epoch 2 after restart: code %d, want INVALID_PRODUCER_EPOCH", code)
	}
	if code := e.txnCommitAt(3, 7, 1, 1, 10); code != 0 {
		t.Fatalf("epoch 1 after restart: code %d", code)
	}
	e.completeAt(7, 1, true)
	e.completeAt(8, 3, true)
	if got := e.fetch("g", "t", 1); got != 10 {
		t.Fatalf("t-1 = %d, want 10", got)
	}
}
