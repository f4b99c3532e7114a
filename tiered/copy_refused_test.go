package tiered

import (
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"
)

// TestCopySkippedWhenStartRefused: when the remote log metadata view
// refuses a new segment's COPY_SEGMENT_STARTED record (here: the
// partition has maxCopyingSegments segments being copied already), the
// copier fails at once and uploads nothing. Before, Add reported success
// for the refused record, the segment was uploaded, and only the
// COPY_SEGMENT_FINISHED step found out and deleted the upload again.
func TestCopySkippedWhenStartRefused(t *testing.T) {
	var hide atomic.Bool
	var seen atomic.Int32
	tm := startHiding(t, true, &hide, &seen, make(chan struct{}, 1))
	awaitReady(t, tm)
	p, segs := leaderWithSegment(t)
	tp := TopicIDPartition{TopicID: UUID{7}, Topic: "t", Partition: 0}
	for i := range maxCopyingSegments {
		s := testSegment(int64(1000+10*i), int64(1009+10*i))
		s.Partition = tp
		tm.applyAll(MetadataRecord{Kind: MetadataSegmentKey, Segment: s})
	}
	if held, _ := tm.Segments(tp); len(held) != maxCopyingSegments {
		t.Fatalf("%d segments held, want %d", len(held), maxCopyingSegments)
	}
	copied := 0
	rsm := &hookRSM{onCopy: func() { copied++ }}
	m := &Manager{meta: tm, topicMeta: tm, rsm: rsm, log: slog.New(slog.DiscardHandler), now: time.Now,
		copyRate: newRate(0), metrics: newRemoteMetrics(), retry: newBackoff(time.Hour), stopped: make(chan struct{})}
	m.taskMu.Lock()
	err := m.copySegment(tp, p, t.TempDir(), segs[0])
	m.taskMu.Unlock()
	if copied != 0 || rsm.deleted != 0 {
		t.Fatalf("%d uploads and %d deletions for a segment the metadata refused, want none", copied, rsm.deleted)
	}
	if err == nil || !errors.Is(err, ErrRemoteStorage) {
		t.Fatalf("copy of a segment whose start was refused: %v, want ErrRemoteStorage", err)
	}
	if held, _ := tm.Segments(tp); len(held) != maxCopyingSegments {
		t.Fatalf("%d segments held after the refused copy, want %d", len(held), maxCopyingSegments)
	}
}
