package tiered

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/sluice/sluice/internal/topicname"
)

// What the topic-based view admits (applyLocked asks admitLocked first).
// __remote_log_metadata is an ordinary topic in Kafka (not one of
// Topic.INTERNAL_TOPICS: the brokers' own producers write it), guarded
// only by ACLs, so any client with Write on it, or damage, can put records
// there that no broker wrote. Kafka's RemoteLogMetadataCache throws on
// the transitions it refuses and RemoteLogSegmentMetadata on impossible
// segments; the view logs and skips them instead (one line a minute for a
// flood, logSkipped), so that every other partition's metadata stays
// served. Refused:
//
//   - a record of apiKey 3 (snapshot records live in Kafka's snapshot
//     files, never in the topic), of a negative partition or of a name no
//     topic can have (a backend builds object paths from it);
//   - a segment with a negative start, an end before its start or at
//     math.MaxInt64 (the end + 1 the view computes would wrap), no bytes,
//     or leader epochs not strictly ascending in epoch and offset within
//     [start, end] (Kafka's epochEntriesInRange gives exactly that);
//   - a COPY_SEGMENT_STARTED segment beyond maxCopyingSegments of its
//     partition at once (a leader copies one at a time; leftovers of
//     crashes are cleaned at its next run);
//   - a record that would add a partition this broker's metadata does
//     not know (TopicMetadataOptions.PartitionCount: an unknown topic id,
//     or an index past the topic's count) once maxUnknownPartitions such
//     partitions are held. They are held up to that bound rather than
//     dropped, because a broker may read the record of a topic, or of
//     partitions just added, before its own metadata has them.
//
// Transitions Kafka refuses are skipped by applyLocked itself
// (State.validNext).
const (
	maxUnknownPartitions = 10000
	maxCopyingSegments   = 64
)

// errRefusedRecord marks a record the view does not apply.
var errRefusedRecord = errors.New("tiered: remote log metadata record refused")

// checkSegment reports what makes s impossible as a remote segment's
// metadata, or nil.
func checkSegment(s *SegmentMetadata) error {
	switch {
	case s.Partition.Partition < 0:
		return fmt.Errorf("%w: partition %d", errRefusedRecord, s.Partition.Partition)
	case s.StartOffset < 0 || s.EndOffset < s.StartOffset || s.EndOffset == math.MaxInt64:
		return fmt.Errorf("%w: offsets [%d, %d]", errRefusedRecord, s.StartOffset, s.EndOffset)
	case s.SizeInBytes <= 0:
		return fmt.Errorf("%w: %d bytes", errRefusedRecord, s.SizeInBytes)
	}
	for i, e := range s.LeaderEpochs {
		if e.Epoch < 0 || e.StartOffset < s.StartOffset || e.StartOffset > s.EndOffset ||
			(i > 0 && (e.Epoch <= s.LeaderEpochs[i-1].Epoch || e.StartOffset <= s.LeaderEpochs[i-1].StartOffset)) {
			return fmt.Errorf("%w: leader epochs %v in [%d, %d]", errRefusedRecord, s.LeaderEpochs, s.StartOffset, s.EndOffset)
		}
	}
	return nil
}

// admitLocked reports why r must not be applied, or nil. REQUIRES: m.mu
// held.
func (m *TopicMetadata) admitLocked(r *MetadataRecord) error {
	var tp TopicIDPartition
	switch r.Kind {
	case MetadataSegmentKey:
		tp = r.Segment.Partition
		if err := checkSegment(&r.Segment); err != nil {
			return err
		}
		if p := m.parts[tp]; p != nil {
			copying := 0
			for i := range p.segs {
				if p.segs[i].State == CopySegmentStarted {
					copying++
				}
			}
			if copying >= maxCopyingSegments {
				return fmt.Errorf("%w: %d segments of %s are being copied already", errRefusedRecord, copying, tp)
			}
		}
	case MetadataUpdateKey:
		return nil // only moves a segment the view holds (applyLocked)
	case MetadataDeleteKey:
		tp = r.Delete.Partition
		if r.Delete.State == DeletePartitionFinished {
			return nil // only drops
		}
	default:
		return fmt.Errorf("%w: apiKey %d in the topic", errRefusedRecord, r.Kind)
	}
	if tp.Partition < 0 {
		return fmt.Errorf("%w: partition %d", errRefusedRecord, tp.Partition)
	}
	if err := topicname.Validate(tp.Topic); err != nil {
		// Never a topic's: and the backends build object paths from it.
		return fmt.Errorf("%w: %v", errRefusedRecord, err)
	}
	if m.parts[tp] != nil || m.knownLocked(tp) {
		return nil
	}
	if len(m.unknown) >= maxUnknownPartitions {
		for u := range m.unknown {
			if m.knownLocked(u) {
				delete(m.unknown, u) // its topic has reached this broker since
			}
		}
	}
	if len(m.unknown) >= maxUnknownPartitions {
		return fmt.Errorf("%w: %s is unknown to this broker and %d unknown partitions are held already", errRefusedRecord, tp, len(m.unknown))
	}
	if m.unknown == nil {
		m.unknown = map[TopicIDPartition]struct{}{}
	}
	m.unknown[tp] = struct{}{}
	return nil
}

// knownLocked reports whether this broker's metadata has tp (always, with
// no PartitionCount). REQUIRES: m.mu held.
func (m *TopicMetadata) knownLocked(tp TopicIDPartition) bool {
	if m.opts.PartitionCount == nil {
		return true
	}
	n, ok := m.opts.PartitionCount(tp.TopicID, tp.Topic)
	return ok && tp.Partition < n
}

// logSkipped logs a record the view does not apply, at most one line a
// minute with the count since the last.
func (m *TopicMetadata) logSkipped(partition int32, offset int64, err error) {
	if n, ok := m.skipped.Note(time.Now(), time.Minute); ok {
		m.log.Error("tiered: skipping remote log metadata records no broker could have written", "records", n,
			"topic", RemoteLogMetadataTopic, "partition", partition, "offset", offset, "err", err)
	}
}
