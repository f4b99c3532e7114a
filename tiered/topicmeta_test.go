package tiered

import (
	"errors"
	"log/slog"
	"sync"
	"testing"
)

// viewOnly is a TopicMetadata with no client: records are applied
// directly, as the replay loop applies what it reads.
func viewOnly() *TopicMetadata {
	m := &TopicMetadata{log: slog.Default(), parts: map[TopicIDPartition]*topicPart{}, ready: true, n: 50}
	m.cond = sync.NewCond(&m.mu)
	return m
}

func (m *TopicMetadata) applyAll(recs ...MetadataRecord) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range recs {
		m.applyLocked(&recs[i])
	}
}

func update(s SegmentMetadata, st State, broker int32) MetadataRecord {
	return MetadataRecord{Kind: MetadataUpdateKey, Segment: SegmentMetadata{Partition: s.Partition, SegmentID: s.SegmentID, State: st, BrokerID: broker, EventTimestamp: 1}}
}

// TestTopicMetadataApply: the materialized view follows Kafka's
// RemoteLogMetadataCache: a segment is added once, moves only along valid
// transitions (a second broker's record of the same deletion changes
// nothing), is dropped at DELETE_SEGMENT_FINISHED, and a partition at
// DELETE_PARTITION_FINISHED; the finished summary follows.
func TestTopicMetadataApply(t *testing.T) {
	m := viewOnly()
	a, b := testSegment(0, 9), testSegment(10, 19)
	m.applyAll(
		MetadataRecord{Kind: MetadataSegmentKey, Segment: a},
		MetadataRecord{Kind: MetadataSegmentKey, Segment: a}, // replayed twice
		MetadataRecord{Kind: MetadataSegmentKey, Segment: b},
		update(a, CopySegmentFinished, 1),
		update(b, DeleteSegmentFinished, 1), // invalid from STARTED: ignored
	)
	segs, err := m.Segments(testTP)
	if err != nil || len(segs) != 2 || segs[0].State != CopySegmentFinished || segs[1].State != CopySegmentStarted {
		t.Fatalf("segments %+v, %v", segs, err)
	}
	rs, _ := m.Finished(testTP)
	if rs.start != 0 || rs.end != 10 || len(rs.segs) != 1 {
		t.Fatalf("finished %+v", rs)
	}
	// Two brokers delete b (a leftover) at once.
	m.applyAll(update(b, DeleteSegmentStarted, 1), update(b, DeleteSegmentStarted, 2), update(b, DeleteSegmentFinished, 2), update(b, DeleteSegmentFinished, 1))
	if segs, _ := m.Segments(testTP); len(segs) != 1 || segs[0].SegmentID != a.SegmentID {
		t.Fatalf("after deleting b: %+v", segs)
	}
	// The broker that lost the race asks again: success, nothing written
	// (the view has no client to write with).
	if err := m.Update(testTP, b.SegmentID, DeleteSegmentFinished, 2); err != nil {
		t.Fatalf("deleting a deleted segment: %v", err)
	}
	m.applyAll(update(a, DeleteSegmentStarted, 1))
	if err := m.Update(testTP, a.SegmentID, DeleteSegmentStarted, 2); err != nil {
		t.Fatalf("starting a started deletion: %v", err)
	}
	if err := m.Update(testTP, a.SegmentID, CopySegmentFinished, 2); err == nil {
		t.Fatal("DELETE_SEGMENT_STARTED -> COPY_SEGMENT_FINISHED accepted")
	}
	if rs, _ := m.Finished(testTP); rs.end != -1 {
		t.Fatalf("a segment being deleted is still counted remote: %+v", rs)
	}
	m.applyAll(MetadataRecord{Kind: MetadataDeleteKey, Delete: PartitionDelete{Partition: testTP, State: DeletePartitionFinished}})
	if parts, _ := m.Partitions(); len(parts) != 0 {
		t.Fatalf("partitions after DELETE_PARTITION_FINISHED: %v", parts)
	}
}

// TestTopicMetadataNotReady: before the replay reaches the end seen at
// start, reads and writes answer ErrMetadataNotReady, never an empty
// view that would let a new leader copy everything again.
func TestTopicMetadataNotReady(t *testing.T) {
	m := viewOnly()
	m.ready = false
	if _, err := m.Segments(testTP); !errors.Is(err, ErrMetadataNotReady) {
		t.Fatalf("Segments: %v", err)
	}
	if _, err := m.Finished(testTP); !errors.Is(err, ErrMetadataNotReady) {
		t.Fatalf("Finished: %v", err)
	}
	if err := m.Add(testSegment(0, 9)); !errors.Is(err, ErrMetadataNotReady) {
		t.Fatalf("Add: %v", err)
	}
}

// TestTopicMetadataFinishRefusedAfterRace: a deposed leader's
// COPY_SEGMENT_FINISHED that reaches the topic after the new leader's
// DELETE_SEGMENT_STARTED of the same leftover is skipped by the view
// (applyLocked), and write's read-back check (finishedLocked) reports it
// refused, so the copier deletes what it uploaded instead of leaving
// objects no metadata names.
func TestTopicMetadataFinishRefusedAfterRace(t *testing.T) {
	m := viewOnly()
	a := testSegment(0, 9)
	fin := update(a, CopySegmentFinished, 1)
	m.applyAll(MetadataRecord{Kind: MetadataSegmentKey, Segment: a}, update(a, DeleteSegmentStarted, 2), fin)
	m.mu.Lock()
	done := m.finishedLocked(fin.Segment)
	m.mu.Unlock()
	if done {
		t.Fatal("a finish applied after the new leader's delete reads as recorded")
	}
	b := testSegment(10, 19)
	finB := update(b, CopySegmentFinished, 1)
	m.applyAll(MetadataRecord{Kind: MetadataSegmentKey, Segment: b}, finB)
	m.mu.Lock()
	done = m.finishedLocked(finB.Segment)
	m.mu.Unlock()
	if !done {
		t.Fatal("a finish with no race reads as refused")
	}
}
