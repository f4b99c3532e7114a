package offsets

import (
	"context"
	"errors"
	"testing"

	"github.com/sluice/sluice/coordlog"
	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/metastore"
	"github.com/sluice/sluice/record"
	"github.com/sluice/sluice/replication"
)

// newFollowerReplica returns partition 0 of __consumer_offsets on a memory
// store as a follower, so tests can write any batch (transactional and
// control batches included) at chosen offsets with AppendAsFollower.
func newFollowerReplica(t *testing.T) *replication.Partition {
	t.Helper()
	st, err := engine.Open("memory", engine.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	l, err := st.CreateLog(engine.PartitionID{Topic: Topic}, engine.LogConfig{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := replication.NewPartition(l, replication.Options{Topic: Topic, Partition: 0, BrokerID: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	if err := p.MakeFollower(replication.LeaderAndIsr{Leader: 2, ISR: []int32{1, 2}, Replicas: []int32{1, 2}}); err != nil {
		t.Fatal(err)
	}
	return p
}

// txnLog writes batches at the end of a follower replica.
type txnLog struct {
	t   *testing.T
	p   *replication.Partition
	c   *Coordinator
	seq map[int64]int32
}

func (l *txnLog) write(b []byte) {
	l.t.Helper()
	record.Batch(b).SetBaseOffset(l.p.LogEndOffset())
	if err := l.p.AppendAsFollower(b); err != nil {
		l.t.Fatal(err)
	}
}

// offsets appends group g's offsets: a transactional batch of pid when pid
// >= 0 (as PersistTxn builds it), a plain one otherwise.
func (l *txnLog) offsets(g string, pid int64, offs map[metastore.TopicPartition]metastore.CommittedOffset) {
	opts := record.BatchOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
	if pid >= 0 {
		opts = record.BatchOptions{ProducerID: pid, ProducerEpoch: 0, BaseSequence: l.seq[pid], Attributes: record.TransactionalBit}
		l.seq[pid] += int32(len(offs))
	}
	l.write(record.AppendBatch(nil, opts, l.c.offsetRecords(g, offs, nil)))
}

func (l *txnLog) marker(pid int64, commit bool) {
	l.write(appendControlBatch(nil, pid, 0, commit, 0))
}

func one(p int32, o int64) map[metastore.TopicPartition]metastore.CommittedOffset {
	return map[metastore.TopicPartition]metastore.CommittedOffset{tp(p): committed(o)}
}

// TestReplayTxnOffsets: transactional offset records stay pending until
// their producer's marker; COMMIT applies those written after the current
// offset of their key, ABORT drops them; a transaction without a marker
// comes out pending, superseded when a later record of its key exists.
func TestReplayTxnOffsets(t *testing.T) {
	p := newFollowerReplica(t)
	l := &txnLog{t: t, p: p, c: New(Options{}), seq: map[int64]int32{}}
	l.offsets("g", -1, one(0, 1))  // plain: 1
	l.offsets("g", 7, one(0, 10))  // txn 7
	l.offsets("g", 8, one(1, 20))  // txn 8, aborted
	l.offsets("g", 9, one(2, 30))  // txn 9, no marker
	l.offsets("g", 10, one(3, 40)) // txn 10, no marker, superseded below
	l.offsets("g", -1, one(3, 41))
	l.offsets("g", 11, one(4, 50)) // txn 11 commits after a later plain offset
	l.offsets("g", -1, one(4, 51))
	l.marker(7, true)
	l.marker(8, false)
	l.marker(11, true)

	v, _, err := replay(p, p.LogEndOffset())
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32]int64{0: 10, 3: 41, 4: 51}
	for part, o := range want {
		if got := v.offsets["g"][tp(part)]; got == nil || got.Offset != o {
			t.Errorf("committed %v = %v, want %d", tp(part), got, o)
		}
	}
	for _, part := range []int32{1, 2} {
		if got := v.offsets["g"][tp(part)]; got != nil {
			t.Errorf("committed %v = %v, want none", tp(part), got)
		}
	}
	pend := map[int64]metastore.PendingTxnOffset{}
	for _, po := range v.pendingOf("g") {
		pend[po.ProducerID] = po
	}
	if len(pend) != 2 {
		t.Fatalf("pending = %+v, want producers 9 and 10", pend)
	}
	if po := pend[9]; po.TopicPartition != tp(2) || po.Offset.Offset != 30 || po.Superseded {
		t.Errorf("pending of 9 = %+v", po)
	}
	if po := pend[10]; po.TopicPartition != tp(3) || !po.Superseded {
		t.Errorf("pending of 10 = %+v, want superseded (a later plain commit)", po)
	}
	if st := v.seqs[7]; st.next != 1 {
		t.Errorf("next sequence of 7 = %+v, want 1", st)
	}

	meta, err := metastore.Open(t.TempDir(), metastore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer meta.Close()
	if err := v.materialize(meta, func(string) bool { return true }); err != nil {
		t.Fatal(err)
	}
	stored, err := meta.FetchPendingTxnOffsets("g")
	if err != nil || len(stored) != 2 {
		t.Fatalf("materialized pending = %+v, %v", stored, err)
	}
}

// TestReplayGroupTombstoneDropsPending: a deleted group's pending
// transactional offsets go with it, so the COMMIT marker of their
// transaction, after the tombstone, does not bring the group back; a
// transaction of another group is untouched.
func TestReplayGroupTombstoneDropsPending(t *testing.T) {
	p := newFollowerReplica(t)
	l := &txnLog{t: t, p: p, c: New(Options{}), seq: map[int64]int32{}}
	l.offsets("g", 7, one(0, 10))
	l.offsets("h", 7, one(0, 20))
	l.write(record.AppendBatch(nil, record.BatchOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
		[]record.BuildRecord{{Key: appendGroupKey(nil, "g"), Timestamp: 1}})) // g deleted
	l.marker(7, true)

	v, _, err := replay(p, p.LogEndOffset())
	if err != nil {
		t.Fatal(err)
	}
	if got := v.offsets["g"]; len(got) != 0 {
		t.Errorf("deleted group g has offsets %v after the marker", got)
	}
	if got := v.offsets["h"][tp(0)]; got == nil || got.Offset != 20 {
		t.Errorf("h's committed t-0 = %v, want 20", got)
	}
	if len(v.pending) != 0 {
		t.Errorf("pending left: %+v", v.pending)
	}
}

func TestControlKey(t *testing.T) {
	b := record.Batch(appendControlBatch(nil, 5, 1, true, 3))
	if !b.Control() || !b.Transactional() || b.ProducerID() != 5 || b.ProducerEpoch() != 1 {
		t.Fatalf("marker header: attrs %#x pid %d epoch %d", b.Attributes(), b.ProducerID(), b.ProducerEpoch())
	}
	var it record.Iter
	it.Reset(b)
	if !it.Next() {
		t.Fatal(it.Err())
	}
	if typ, err := parseControlKey(it.Record().Key); err != nil || typ != controlCommit {
		t.Fatalf("parseControlKey = %d, %v", typ, err)
	}
	for _, bad := range [][]byte{nil, {0, 0, 0}, {0, 1, 0, 1}} {
		if _, err := parseControlKey(bad); !errors.Is(err, ErrBadRecord) {
			t.Errorf("parseControlKey(%x) = %v, want ErrBadRecord", bad, err)
		}
	}
}

// TestPersistTxn writes through the leader as the group coordinator does:
// one transactional batch with the producer's id, epoch and next sequence.
// It needs the log side's transactional appends (branch txnlog); without
// them the partition refuses the batch and the test is skipped.
func TestPersistTxn(t *testing.T) {
	p := newReplica(t, 0)
	c := New(Options{
		NumPartitions: func() int32 { return 1 },
		Partition:     func(int32) *replication.Partition { return p },
	})
	pos, err := c.PersistTxn(context.Background(), "g", 7, 2, one(0, 10))
	if errors.Is(err, replication.ErrTransactional) {
		t.Skip("the log refuses transactional batches (needs the log's transactional side)")
	}
	if err != nil {
		t.Fatal(err)
	}
	pos2, err := c.PersistTxn(context.Background(), "g", 7, 2, one(1, 11))
	if err != nil {
		t.Fatalf("second commit of the transaction: %v", err)
	}
	if pos != 0 || pos2 != 1 {
		t.Fatalf("positions %d, %d; want 0, 1", pos, pos2)
	}
	var batches []record.Batch
	if err := coordlog.ReplayBatches(p, p.LogEndOffset(), func(b record.Batch) error {
		batches = append(batches, append(record.Batch(nil), b...))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for i, b := range batches {
		if !b.Transactional() || b.ProducerID() != 7 || b.ProducerEpoch() != 2 || b.BaseSequence() != int32(i) {
			t.Errorf("batch %d: attrs %#x pid %d epoch %d seq %d", i, b.Attributes(), b.ProducerID(), b.ProducerEpoch(), b.BaseSequence())
		}
	}
}
