package tiered

import (
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/metastore"
	"github.com/sluice/sluice/record"
	"github.com/sluice/sluice/replica"
	"github.com/sluice/sluice/replication"
	_ "github.com/sluice/sluice/segment" // the segment backend
)

// memKV is an in-memory checkpoints.
type memKV struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (k *memKV) PutCheckpoint(name string, v []byte) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.m[name] = slices.Clone(v)
	return nil
}

func (k *memKV) GetCheckpoint(name string) ([]byte, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	v, ok := k.m[name]
	if !ok {
		return nil, metastore.ErrNotFound
	}
	return v, nil
}

// hookRSM is a RemoteStorageManager that stores nothing: copy runs
// onCopy, FetchIndex finds nothing, deletions are counted.
type hookRSM struct {
	onCopy  func()
	deleted int
}

func (r *hookRSM) CopyLogSegmentData(md SegmentMetadata, data LogSegmentData) error {
	r.onCopy()
	return nil
}
func (r *hookRSM) FetchLogSegment(md SegmentMetadata, startPos int64) (io.ReadCloser, error) {
	return nil, ErrRemoteNotFound
}
func (r *hookRSM) FetchIndex(md SegmentMetadata, t IndexType) (io.ReadCloser, error) {
	return nil, ErrRemoteNotFound
}
func (r *hookRSM) DeleteLogSegmentData(md SegmentMetadata) error { r.deleted++; return nil }

// TestDeposedLeaderDoesNotRecordCopy: a leader deposed while it copies a
// segment (Kafka fences its copy task by the leader epoch) does not move
// the segment to COPY_SEGMENT_FINISHED; its objects are deleted and the
// COPY_SEGMENT_STARTED record is left for the new leader's cleanup.
// Before, the old leader recorded the segment as copied.
func TestDeposedLeaderDoesNotRecordCopy(t *testing.T) {
	st, err := engine.Open("segment", engine.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	id := engine.PartitionID{Topic: "t", Partition: 0}
	l, err := st.CreateLog(id, engine.LogConfig{SegmentBytes: 1024})
	if err != nil {
		t.Fatal(err)
	}
	rp, err := replication.NewPartition(l, replication.Options{Topic: "t", Partition: 0, BrokerID: 1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer rp.Close()
	if err := rp.MakeLeader(replication.LeaderAndIsr{Leader: 1, LeaderEpoch: 1, ISR: []int32{1}, Replicas: []int32{1, 2}}); err != nil {
		t.Fatal(err)
	}
	p := &replica.Partition{Partition: rp}
	c := l.(engine.Compactable)
	for i := 0; len(c.InactiveSegments()) == 0 && i < 100; i++ {
		b := record.AppendBatch(nil, record.BatchOptions{ProducerID: -1, BaseSequence: -1}, []record.BuildRecord{{Value: []byte(strings.Repeat("x", 300)), Timestamp: 1}})
		if _, err := rp.Append(t.Context(), b, 1); err != nil {
			t.Fatal(err)
		}
	}
	segs := c.InactiveSegments()
	if len(segs) == 0 {
		t.Fatal("no rolled segment")
	}
	rsm := &hookRSM{onCopy: func() {
		// Leadership moves to broker 2 in epoch 2 mid-copy.
		if err := rp.MakeFollower(replication.LeaderAndIsr{Leader: 2, LeaderEpoch: 2, ISR: []int32{2}, Replicas: []int32{1, 2}}); err != nil {
			t.Error(err)
		}
	}}
	meta := newMetadataStore(&memKV{m: map[string][]byte{}})
	m := &Manager{meta: meta, topicMeta: viewOnly(), rsm: rsm, log: slog.New(slog.DiscardHandler), now: time.Now, copyRate: newRate(0), metrics: newRemoteMetrics()}
	tp := TopicIDPartition{Topic: "t", Partition: 0}
	if err := m.copySegment(tp, p, t.TempDir(), segs[0]); err == nil {
		t.Fatal("a deposed leader's copy succeeded")
	}
	got, err := meta.Segments(tp)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].State != CopySegmentStarted || rsm.deleted != 1 {
		t.Fatalf("after a deposed copy: segments %+v, %d deletions; want one COPY_SEGMENT_STARTED and its objects deleted", got, rsm.deleted)
	}
}

// TestMissingTxnIndexIsEmpty: a remote segment whose transaction index
// object is missing (recorded without TxnIndexEmpty, as by Kafka before
// KIP-1058) has no aborted transactions, as Kafka's RemoteIndexCache
// makes an empty index; before, the read failed.
func TestMissingTxnIndexIsEmpty(t *testing.T) {
	r := &reader{m: &Manager{rsm: &hookRSM{}}, cache: newCache(1 << 20)}
	got, err := r.abortedTxns(SegmentMetadata{StartOffset: 0, EndOffset: 9}, 0, 10)
	if err != nil || len(got) != 0 {
		t.Fatalf("aborted transactions of a segment without a txn index: %v, %v; want none", got, err)
	}
}

// TestParseEpochCheckpoint: what epochCheckpoint writes parses back;
// damaged text is an error, never a panic.
func TestParseEpochCheckpoint(t *testing.T) {
	entries := []engine.EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 3, StartOffset: 40}, {Epoch: 5, StartOffset: 90}}
	got, err := parseEpochCheckpoint(epochCheckpoint(entries, 100))
	if err != nil || !slices.Equal(got, entries) {
		t.Fatalf("round trip: %v, %v", got, err)
	}
	for _, bad := range []string{"", "1\n0\n", "0\n2\n0 0\n", "0\n1\n0\n", "0\n1\n-1 5\n", "0\nx\n"} {
		if _, err := parseEpochCheckpoint([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	if _, err := parseEpochCheckpoint([]byte("0\n0\n")); err != nil {
		t.Errorf("an empty checkpoint: %v", err)
	}
}
