package tiered

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/record"
	"github.com/sluice/sluice/replica"
	"github.com/sluice/sluice/replication"
)

// leaderWithSegment returns a leader partition with at least one rolled
// segment.
func leaderWithSegment(t *testing.T) (*replica.Partition, []engine.SegmentInfo) {
	t.Helper()
	st, err := engine.Open("segment", engine.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	l, err := st.CreateLog(engine.PartitionID{Topic: "t", Partition: 0}, engine.LogConfig{SegmentBytes: 1024})
	if err != nil {
		t.Fatal(err)
	}
	rp, err := replication.NewPartition(l, replication.Options{Topic: "t", Partition: 0, BrokerID: 1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rp.Close() })
	if err := rp.MakeLeader(replication.LeaderAndIsr{Leader: 1, LeaderEpoch: 1, ISR: []int32{1}, Replicas: []int32{1}}); err != nil {
		t.Fatal(err)
	}
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
	return &replica.Partition{Partition: rp}, segs
}

// TestCopyRateWaitReleasesTaskLock: a copy waiting for
// remote.log.manager.copy.max.bytes.per.second does not hold taskMu (a
// topic deletion goes through meanwhile) and gives up at once when the
// manager stops, without copying. Before, the copy slept for the whole
// wait holding taskMu: deletions, retention and shutdown waited with it.
func TestCopyRateWaitReleasesTaskLock(t *testing.T) {
	p, segs := leaderWithSegment(t)
	copied := 0
	meta := newMetadataStore(&memKV{m: map[string][]byte{}})
	m := &Manager{meta: meta, rsm: &hookRSM{onCopy: func() { copied++ }}, log: slog.New(slog.DiscardHandler), now: time.Now,
		copyRate: newRate(1), metrics: newRemoteMetrics(), retry: newBackoff(time.Hour), stopped: make(chan struct{})}
	m.copyRate.reserve(1 << 20) // the quota is used up for about 12 days
	tp := TopicIDPartition{TopicID: UUID{7}, Topic: "t", Partition: 0}
	errc := make(chan error, 1)
	m.taskMu.Lock()
	go func() {
		err := m.copySegment(tp, p, t.TempDir(), segs[0])
		m.taskMu.Unlock()
		errc <- err
	}()
	deleted := make(chan struct{})
	go func() { m.TopicDeleted([16]byte{9}, "other", 1); close(deleted) }()
	select {
	case <-deleted:
	case err := <-errc:
		t.Fatalf("the copy did not wait for the rate: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("a topic deletion waited for a copy throttled by the copy rate")
	}
	close(m.stopped)
	select {
	case err := <-errc:
		if !errors.Is(err, errStopping) {
			t.Fatalf("copy after stop: %v; want errStopping", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a copy waiting for the rate did not end on stop")
	}
	got, err := meta.Segments(tp)
	if err != nil {
		t.Fatal(err)
	}
	if copied != 0 || len(got) != 0 {
		t.Fatalf("after a stop during the rate wait: %d copies, segments %+v; want none", copied, got)
	}
}
