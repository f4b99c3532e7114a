package tiered

import (
	"log/slog"
	"sync/atomic"
	"testing"
	"time"
)

// loadingMeta is remote log metadata that never finishes loading; each
// Segments call is counted and runs onSegments first.
type loadingMeta struct {
	calls      atomic.Int32
	onSegments func()
}

func (l *loadingMeta) Segments(TopicIDPartition) ([]SegmentMetadata, error) {
	l.calls.Add(1)
	if l.onSegments != nil {
		l.onSegments()
	}
	return nil, ErrMetadataNotReady
}
func (l *loadingMeta) Finished(TopicIDPartition) (*remoteState, error) {
	return nil, ErrMetadataNotReady
}
func (l *loadingMeta) Add(SegmentMetadata) error                         { return ErrMetadataNotReady }
func (l *loadingMeta) Update(TopicIDPartition, UUID, State, int64) error { return ErrMetadataNotReady }
func (l *loadingMeta) Forget(TopicIDPartition) error                     { return ErrMetadataNotReady }
func (l *loadingMeta) Partitions() ([]TopicIDPartition, error)           { return nil, ErrMetadataNotReady }

// TestPartitionDeletedEndsOnShutdown: PartitionDeleted retries while the
// metadata loads (about a minute of sleeps in all), but a shutdown ends
// it: once the manager stops, no further try is made and no sleep taken.
// Before, the sleeps ran to the end whatever happened, holding a
// StopReplica's goroutine (and the broker's shutdown) for a minute.
func TestPartitionDeletedEndsOnShutdown(t *testing.T) {
	for _, c := range []struct {
		name         string
		stopMidFirst bool // the stop comes while the first try runs
	}{{"stopped before", false}, {"stopped during the first try", true}} {
		t.Run(c.name, func(t *testing.T) {
			meta := &loadingMeta{}
			m := &Manager{meta: meta, rsm: &hookRSM{}, log: slog.New(slog.DiscardHandler), now: time.Now, copyRate: newRate(0),
				metrics: newRemoteMetrics(), retry: newBackoff(time.Hour), stopped: make(chan struct{})}
			stop := func() { m.stopOnce.Do(func() { close(m.stopped) }) }
			if c.stopMidFirst {
				meta.onSegments = stop
			} else {
				stop()
			}
			m.PartitionDeleted(UUID{1}, "gone", 0)
			if n := meta.calls.Load(); n != 1 {
				t.Fatalf("%d tries after the manager stopped, want 1", n)
			}
		})
	}
}
