package tiered

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/sluice/sluice/engine"
)

func add(s SegmentMetadata) MetadataRecord {
	return MetadataRecord{Kind: MetadataSegmentKey, Segment: s}
}

// TestTopicMetadataRefusesImpossibleSegments: records no broker could
// have written (anyone with Write on __remote_log_metadata can produce
// them) are skipped by the view, so they neither move a partition's
// remote end nor hold memory: impossible offsets or sizes, leader epochs
// out of order or outside the segment, a snapshot record, a negative
// partition, and a flood of COPY_SEGMENT_STARTED segments. A valid
// segment next to them applies.
func TestTopicMetadataRefusesImpossibleSegments(t *testing.T) {
	m := viewOnly()
	bad := map[string]func(*SegmentMetadata){
		"end at MaxInt64 (end + 1 wraps)": func(s *SegmentMetadata) { s.EndOffset = math.MaxInt64 },
		"end before start":                func(s *SegmentMetadata) { s.EndOffset = s.StartOffset - 1 },
		"negative start":                  func(s *SegmentMetadata) { s.StartOffset = -5 },
		"no bytes":                        func(s *SegmentMetadata) { s.SizeInBytes = 0 },
		"negative size":                   func(s *SegmentMetadata) { s.SizeInBytes = -1 },
		"negative partition":              func(s *SegmentMetadata) { s.Partition.Partition = -1 },
		"a path for a topic name":         func(s *SegmentMetadata) { s.Partition.Topic = "../../etc" },
		"epoch past the end": func(s *SegmentMetadata) {
			s.LeaderEpochs = []engine.EpochEntry{{Epoch: 0, StartOffset: s.StartOffset}, {Epoch: 1, StartOffset: s.EndOffset + 1}}
		},
		"epoch before the start": func(s *SegmentMetadata) {
			s.LeaderEpochs = []engine.EpochEntry{{Epoch: 0, StartOffset: s.StartOffset - 1}}
		},
		"epochs descending": func(s *SegmentMetadata) {
			s.LeaderEpochs = []engine.EpochEntry{{Epoch: 3, StartOffset: s.StartOffset}, {Epoch: 2, StartOffset: s.StartOffset + 1}}
		},
		"epoch offsets descending": func(s *SegmentMetadata) {
			s.LeaderEpochs = []engine.EpochEntry{{Epoch: 1, StartOffset: s.StartOffset + 2}, {Epoch: 2, StartOffset: s.StartOffset + 1}}
		},
	}
	for name, damage := range bad {
		t.Run(name, func(t *testing.T) {
			s := testSegment(100, 199)
			damage(&s)
			m.applyAll(add(s), update(s, CopySegmentFinished, 1))
			if segs, _ := m.Segments(s.Partition); slices.ContainsFunc(segs, func(x SegmentMetadata) bool { return x.SegmentID == s.SegmentID }) {
				t.Errorf("the view holds %+v", s)
			}
		})
	}
	if rs, _ := m.Finished(testTP); rs.end != -1 {
		t.Fatalf("remote end %d after impossible segments, want -1 (nothing remote)", rs.end)
	}
	snap := testSegment(0, 9)
	m.mu.Lock()
	err := m.applyLocked(&MetadataRecord{Kind: MetadataSnapshotKey, Segment: snap})
	m.mu.Unlock()
	if !errors.Is(err, errRefusedRecord) {
		t.Errorf("a snapshot record in the topic: %v, want it refused", err)
	}

	for i := int64(0); i < 3*maxCopyingSegments; i++ {
		m.applyAll(add(testSegment(10*i, 10*i+9)))
	}
	segs, _ := m.Segments(testTP)
	if len(segs) != maxCopyingSegments {
		t.Fatalf("%d COPY_SEGMENT_STARTED segments held, want at most %d", len(segs), maxCopyingSegments)
	}
	// A leader finishing its copy makes room for the next.
	m.applyAll(update(segs[0], CopySegmentFinished, 1))
	next := testSegment(5000, 5009)
	m.applyAll(add(next))
	if segs, _ := m.Segments(testTP); len(segs) != maxCopyingSegments+1 {
		t.Fatalf("%d segments after one finished and one more started, want %d", len(segs), maxCopyingSegments+1)
	}
}

// TestTopicMetadataBoundsUnknownPartitions: records of partitions this
// broker's metadata does not know (another topic id, an index past the
// topic's partition count) are held, but at most maxUnknownPartitions of
// them: a flood for arbitrary topic ids no longer grows the view without
// bound, while the partitions the broker knows keep applying, and held
// unknown partitions that become known stop counting.
func TestTopicMetadataBoundsUnknownPartitions(t *testing.T) {
	m := viewOnly()
	counts := map[UUID]int32{testTP.TopicID: testTP.Partition + 1}
	m.opts.PartitionCount = func(id [16]byte, _ string) (int32, bool) {
		n, ok := counts[id]
		return n, ok
	}
	forged := func(i int) TopicIDPartition {
		var id UUID
		binary.BigEndian.PutUint64(id[8:], uint64(i)+1)
		return TopicIDPartition{TopicID: id, Topic: "forged", Partition: int32(i % 7)}
	}
	refused := 0
	for i := 0; i < maxUnknownPartitions+500; i++ {
		s := testSegment(0, 9)
		s.Partition = forged(i)
		m.mu.Lock()
		if err := m.applyLocked(&MetadataRecord{Kind: MetadataSegmentKey, Segment: s}); errors.Is(err, errRefusedRecord) {
			refused++
		}
		m.mu.Unlock()
	}
	past := testTP
	past.Partition = testTP.Partition + 1 // past the topic's partition count
	s := testSegment(0, 9)
	s.Partition = past
	m.applyAll(add(s), MetadataRecord{Kind: MetadataDeleteKey, Delete: PartitionDelete{Partition: forged(maxUnknownPartitions + 1), State: DeletePartitionMarked}})
	m.applyAll(add(testSegment(0, 9)))
	parts, _ := m.Partitions()
	if len(parts) != maxUnknownPartitions+1 || refused != 500 {
		t.Fatalf("%d partitions held (%d records refused), want %d unknown ones and the known one", len(parts), refused, maxUnknownPartitions)
	}
	if segs, _ := m.Segments(testTP); len(segs) != 1 {
		t.Fatalf("the known partition holds %d segments, want 1", len(segs))
	}
	// The first forged topic id reaches the broker's metadata: its
	// partition no longer counts, so one more unknown one fits.
	counts[forged(0).TopicID] = 7
	m.applyAll(add(s))
	if segs, _ := m.Segments(past); len(segs) != 1 {
		t.Fatalf("a partition past the count is refused while room was made: %d segments", len(segs))
	}
	// DELETE_PARTITION_FINISHED of an unknown partition frees its room.
	m.applyAll(MetadataRecord{Kind: MetadataDeleteKey, Delete: PartitionDelete{Partition: past, State: DeletePartitionFinished}})
	if len(m.unknown) != maxUnknownPartitions-1 {
		t.Fatalf("%d unknown partitions counted after one became known and one was deleted, want %d", len(m.unknown), maxUnknownPartitions-1)
	}
}
