package engine

import "errors"

// ErrCleanConflict is returned by SegmentWriter.Commit when the log changed
// under the cleaner in a way that voids its output (the segments it read
// were truncated, deleted or replaced); nothing was replaced and the next
// round starts over.
var ErrCleanConflict = errors.New("engine: log changed during cleaning")

// Compactable is an optional capability of a Log, found by type assertion:
// what the log cleaner (package engine/cleaner) needs to clean a log with
// cleanup.policy=compact. The cleaner reads through Log.Read and writes
// through ReplaceSegments, so the cleaning rules live in one place for
// every backend. Every backend in this repository implements it.
type Compactable interface {
	// InactiveSegments describes every segment but the active one (or
	// the backend's equivalent), oldest first. The cleaner never touches
	// the active segment.
	InactiveSegments() []SegmentInfo
	// ReplaceSegments starts replacing the consecutive inactive segments
	// covering [from, to) (from is the first one's Base, to the Next of
	// the last) with one segment holding what the writer is given. Only
	// one replacement per log may be open at a time.
	ReplaceSegments(from, to int64) (SegmentWriter, error)
	// CleanerCheckpoint is the first offset not yet cleaned (Kafka's
	// cleaner-offset-checkpoint entry), 0 when the log was never cleaned.
	// Truncation below it lowers it to the truncation point, as Kafka's
	// maybeTruncateCheckpoint does.
	CleanerCheckpoint() int64
	// SetCleanerCheckpoint records it durably.
	SetCleanerCheckpoint(offset int64) error
}

// SegmentInfo describes one inactive segment.
type SegmentInfo struct {
	Base int64 // its first possible offset (its file name for segment)
	// Next is where the next segment starts: the segment covers
	// [Base, Next) of the offset space, with gaps once cleaned.
	Next int64
	// End is the offset after its last batch (Base when it has none):
	// below Next once cleaning removed its last batches.
	End   int64
	Bytes int64 // size of its batches
	// FirstBatchTimestamp is the maxTimestamp of its first batch (-1:
	// none or no batch), what max.compaction.lag.ms measures, as Kafka's
	// LogSegment.getFirstBatchTimestamp; LargestTimestamp the largest
	// batch maxTimestamp (-1: none), what min.compaction.lag.ms measures.
	FirstBatchTimestamp, LargestTimestamp int64
}

// SegmentWriter receives the cleaned batches of a ReplaceSegments.
type SegmentWriter interface {
	// Write appends whole batches, in offset order, each with offsets
	// inside [from, to). It does not retain batches.
	Write(batches []byte) error
	// SetCheckpoint makes Commit also set the cleaner checkpoint to
	// offset, atomically with the replacement, so that a truncation
	// cannot come between the two (a truncation lowers the checkpoint;
	// one that lands after the round read its range conflicts with
	// the Commit instead). Call it before Commit.
	SetCheckpoint(offset int64)
	// Commit replaces the segments with what was written, atomically as
	// readers and a crash see it: after a crash the log holds either
	// the old segments or the new one, never both or neither. It
	// returns ErrCleanConflict when the segments are no longer there
	// as they were.
	Commit() error
	// Abort discards what was written; the log is unchanged. It may be
	// called after Commit (then it does nothing).
	Abort()
}
