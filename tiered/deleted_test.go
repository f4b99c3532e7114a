package tiered

import (
	"log/slog"
	"testing"
	"time"
)

// TestPartitionDeletedForgetsState: PartitionDeleted (a cluster's
// StopReplica with delete) forgets the partition's backoff and drops its
// topic's metrics, as TopicDeleted does; before, both stayed for a topic
// that no longer exists.
func TestPartitionDeletedForgetsState(t *testing.T) {
	meta := newMetadataStore(&memKV{m: map[string][]byte{}})
	m := &Manager{meta: meta, rsm: &hookRSM{}, log: slog.New(slog.DiscardHandler), now: time.Now, copyRate: newRate(0),
		metrics: newRemoteMetrics(), retry: newBackoff(time.Hour)}
	tp := TopicIDPartition{TopicID: UUID{1}, Topic: "gone", Partition: 0}
	m.retry.done(tp, ErrRemoteStorage)
	if m.retry.ready(tp) {
		t.Fatal("no backoff after a storage failure")
	}
	m.metrics.copied(tp.Topic, 10, nil)
	m.metrics.setLag(tp, copyLag{})
	m.PartitionDeleted(tp.TopicID, tp.Topic, tp.Partition)
	if !m.retry.ready(tp) {
		t.Error("backoff of a deleted partition kept")
	}
	m.metrics.mu.Lock()
	_, topic := m.metrics.topics[tp.Topic]
	_, lag := m.metrics.lag[tp]
	m.metrics.mu.Unlock()
	if topic || lag {
		t.Errorf("metrics of a deleted partition kept: topic series %v, lag %v", topic, lag)
	}
}
