package segment

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sluice/sluice/engine"
)

// On-disk layout of one log dir (part of the on-disk format: Kafka's, do
// not change):
//
//	<dir>/
//	  .kafka_cleanshutdown              empty; present only after a clean Close
//	  recovery-point-offset-checkpoint  text, see below
//	  log-start-offset-checkpoint       text, see below
//	  replication-offset-checkpoint     text, see below (high watermarks)
//	  <topic>-<partition>/              one per partition log
//	    00000000000000000000.log        batches back to back
//	    00000000000000000000.index      offset index (package mmapindex)
//	    00000000000000000000.timeindex  time index (package mmapindex)
//	    00000000000000004096.log        next segment: name = its base offset
//	    ...
//	    00000000000000004100.snapshot   producer state as of offset 4100
//	                                    (replication's bytes, Kafka's format;
//	                                    engine.SnapshotStore, snapshot.go)
//	    leader-epoch-checkpoint         text, see below
//
// A segment's .log holds RecordBatch v2 batches (package record) exactly as
// appended, with dense offsets: the first batch's baseOffset is the segment
// base, each next batch starts at the previous lastOffset+1.
//
//	.log                         .index (8 bytes/entry)      .timeindex (12 bytes/entry)
//	+------------------------+   +---------+---------+       +------------+---------+
//	| batch @pos 0           |   | rel off | pos     |       | timestamp  | rel off |
//	| (61-byte header + recs)|   | int32 BE| int32 BE|       | int64 BE   | int32 BE|
//	+------------------------+   +---------+---------+       +------------+---------+
//	| batch ...              |   one entry per index.interval.bytes of log, at a
//	+------------------------+   batch boundary: (batch base - segment base,
//	                             batch position). A time index entry (T, O): T is
//	                             the largest timestamp up to offset O.
//
// Checkpoint files are text, lines ending in '\n':
//
//	offset checkpoints (recovery-point-offset-checkpoint,
//	log-start-offset-checkpoint, replication-offset-checkpoint), one
//	per log dir:
//	+-------------------------------+
//	| 0                             |  version
//	| <count>                       |  number of entries
//	| <topic> <partition> <offset>  |  count lines, space separated
//	+-------------------------------+
//
//	log-start-offset-checkpoint holds each log's log start offset, Kafka's
//	logStartOffset: for a tiered log (KIP-405) it may lie below the first
//	local segment (the first records are remote), and the local start is
//	then that segment's base; a log whose start is unknown (loaded with no
//	entry) has none (logstart.go).
//
//	leader-epoch-checkpoint, one per partition dir:
//	+-------------------------------+
//	| 0                             |  version
//	| <count>                       |
//	| <epoch> <startOffset>         |  count lines, ascending
//	+-------------------------------+
//
// Every checkpoint is written to "<name>.tmp", fsynced, renamed over the
// old one and the directory fsynced, so a crash leaves the old or the new
// file, never a torn one. Stray ".tmp" files are removed on open.
const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
	// Transient suffixes Kafka uses; whatever carries them on open is a
	// leftover of an interrupted operation and is deleted.
	deletedSuffix = ".deleted"
	cleanedSuffix = ".cleaned"
	swapSuffix    = ".swap"
	tmpSuffix     = ".tmp"
	// snapshotSuffix names a producer-state snapshot (Kafka's
	// LogFileUtils.PRODUCER_SNAPSHOT_FILE_SUFFIX).
	snapshotSuffix = ".snapshot"

	cleanShutdownFile  = ".kafka_cleanshutdown"
	recoveryPointFile  = "recovery-point-offset-checkpoint"
	logStartOffsetFile = "log-start-offset-checkpoint"
	cleanerOffsetFile  = "cleaner-offset-checkpoint"
	// logStartMarkerFile is Sluice's own (Kafka has no such file): its
	// presence in the log dir says that log-start-offset-checkpoint
	// holds each log's log start offset (Kafka's logStartOffset, below
	// the first segment of a tiered log). Builds before it wrote the
	// local start there for every log; Open migrates such a file once
	// and then writes the marker (Store.migrateLogStarts, logstart.go).
	logStartMarkerFile = ".sluice_log_start_offsets"
	// replicationOffsetFile holds the high watermarks the broker saves
	// through engine.HighWatermarkStore; the store only reads and
	// writes it.
	replicationOffsetFile = "replication-offset-checkpoint"
	leaderEpochFile       = "leader-epoch-checkpoint"
	checkpointVersion     = 0
	deleteDirSuffix       = "-delete" // a partition dir being removed
	segmentNameDigits     = 20

	// Prefixes of a batch header that readers pread (see record's
	// format): baseOffset+batchLength, through partitionLeaderEpoch, and
	// through lastOffsetDelta.
	headerPeekSize     = 12
	headerEpochSize    = 16
	headerLastDeltaEnd = 27
)

// segmentPath returns the path of the file with suffix for the segment
// with base offset base in dir.
func segmentPath(dir string, base int64, suffix string) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", base, suffix))
}

// parseSegmentName returns the base offset in a segment file name like
// "00000000000000000042.log" (suffix already removed).
func parseSegmentName(stem string) (int64, error) {
	if len(stem) != segmentNameDigits {
		return 0, fmt.Errorf("segment name %q is not %d digits", stem, segmentNameDigits)
	}
	v, err := strconv.ParseInt(stem, 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("segment name %q is not an offset", stem)
	}
	return v, nil
}

// logDirName is the partition directory name "<topic>-<partition>".
func logDirName(topic string, partition int32) string {
	if partition == engine.FuturePartition {
		return topic // a future log: the topic is the whole name (engine.FutureLogID)
	}
	return topic + "-" + strconv.Itoa(int(partition))
}

// parseLogDirName splits "<topic>-<partition>"; ok is false for anything
// else (including dirs being deleted).
func parseLogDirName(name string) (topic string, partition int32, ok bool) {
	if _, _, ok := engine.ParseFutureDirName(name); ok {
		return name, engine.FuturePartition, true
	}
	i := strings.LastIndexByte(name, '-')
	if i <= 0 || strings.HasSuffix(name, deleteDirSuffix) {
		return "", 0, false
	}
	p, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || p < 0 || strconv.Itoa(int(p)) != name[i+1:] {
		return "", 0, false
	}
	return name[:i], int32(p), true
}
