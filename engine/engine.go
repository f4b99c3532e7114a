// Package engine defines what a storage backend is: a Store of partition
// logs, each an append-only sequence of Kafka RecordBatch v2 batches with
// dense offsets. Backends ("segment", "pebble", "memory") register themselves
// by name; the broker picks one with the storage.backend config key.
//
// Every backend passes the conformance suite in engine/enginetest. The
// contract below is what that suite checks.
package engine

import (
	"errors"
	"log/slog"
	"math"
	"time"

	"github.com/sluice/sluice/zerocopy"
)

// Errors. Backends wrap these with %w and add where it happened; callers
// classify with errors.Is. Batch validation errors come from package record
// (record.ErrCorrupt, record.ErrInvalid, record.ErrUnsupported).
var (
	ErrOffsetOutOfRange = errors.New("engine: offset out of range")
	ErrLogExists        = errors.New("engine: log already exists")
	ErrNoLog            = errors.New("engine: no such log")
	ErrClosed           = errors.New("engine: closed")
	// ErrCorruptStore means files or keys on disk are damaged beyond what
	// recovery repairs; the message names the file.
	ErrCorruptStore = errors.New("engine: corrupt store")
	// ErrOffsetMismatch is returned by a follower append (AssignOffsets
	// false) whose batches start below the log end offset or overlap.
	ErrOffsetMismatch = errors.New("engine: batch offset does not match log end")
	// ErrBatchTooLarge is returned when a batch exceeds LogConfig.MaxBatchBytes.
	ErrBatchTooLarge = errors.New("engine: batch too large")
	// ErrStorage marks a failed write or sync of a log's files: the log
	// refuses writes until it is reopened (KAFKA_STORAGE_ERROR).
	ErrStorage = errors.New("engine: storage failure")
)

// PartitionID names one partition log.
type PartitionID struct {
	Topic     string
	Partition int32
}

// Backend opens stores of one kind.
type Backend interface {
	// Open opens (creating if needed) the store rooted at opts.Dir.
	Open(opts Options) (Store, error)
}

// DefaultOpenFilesMax is the bound of a store opened without
// Options.OpenSegmentsMax (log.segment.open.files.max; the broker sizes it
// from its limits): open segments for "segment" (1 descriptor and 2
// mappings each), open data files for "pebble" (1 descriptor each).
const DefaultOpenFilesMax = 1000

// Options configure a Store. Zero values mean the documented default.
type Options struct {
	Dir    string
	Logger *slog.Logger // nil: slog.Default()
	// FlushInterval is the periodic fsync of every log
	// (log.flush.interval.ms), run by the store itself; 0 means never by
	// time, leaving durability to the page cache, replication and clean
	// shutdown, as Kafka does. It is for direct users of a store (tests,
	// benchmarks): the broker leaves it 0 and its replica manager calls
	// Maintainer.FlushAll on its own timer.
	FlushInterval time.Duration
	// Now returns the current time; tests replace it. nil: time.Now.
	Now func() time.Time
	// OpenSegmentsMax bounds the segments whose files a file-based
	// backend keeps open (log.segment.open.files.max; for "pebble", its
	// per-log data files); 0: DefaultOpenFilesMax.
	OpenSegmentsMax int
	// RecoveryCheckpointInterval is how often the store itself
	// checkpoints the recovery points
	// (log.flush.offset.checkpoint.interval.ms); 0: the backend's default,
	// negative: only at Close. Like FlushInterval it is for direct users
	// of a store: the broker passes a negative value and its replica
	// manager calls Maintainer.CheckpointRecoveryPoints on its own timer.
	RecoveryCheckpointInterval time.Duration
	// DeleteDelay is how long bytes a log stopped indexing (retention,
	// truncation, the cleaner) stay on disk before a backend that reclaims
	// them in place removes them (log.segment.delete.delay.ms; "pebble"
	// punches its data files); 0: at once.
	DeleteDelay time.Duration
	// TailCacheBytes bounds the memory a backend keeps copies of the
	// partitions' most recently appended small batches in, so that a
	// fetch at the tail is a copy rather than a read of the file
	// (log.segment.tail.cache.bytes; "segment" and "pebble"); 0: the
	// backend's default, negative: none.
	TailCacheBytes int64
}

// Store is a set of partition logs in one directory. Safe for concurrent use.
type Store interface {
	// CreateLog creates an empty log; ErrLogExists if it exists.
	CreateLog(id PartitionID, cfg LogConfig) (Log, error)
	// OpenLog opens an existing log; ErrNoLog if there is none. A log
	// may be opened once; opening an open log returns the same Log.
	OpenLog(id PartitionID, cfg LogConfig) (Log, error)
	// ListLogs lists the logs in the store, in no particular order.
	ListLogs() ([]PartitionID, error)
	// DeleteLog closes (if open) and removes a log and all its data.
	// Slices already handed out stay readable until released.
	DeleteLog(id PartitionID) error
	// Close closes every open log and the store, after making every
	// log's data durable (the logs closed before included). After a
	// clean Close, the next Open skips recovery.
	Close() error
}

// Log is one partition: batches with dense, increasing offsets in
// [StartOffset, EndOffset). Safe for concurrent use: appends are
// serialized; reads run concurrently with appends and see whole batches
// only.
type Log interface {
	// Append validates every batch in batches (one or more RecordBatch v2
	// back to back) and appends them all, or none on error. batches is
	// rewritten in place (baseOffset, partitionLeaderEpoch, and for
	// LogAppendTime maxTimestamp and CRC) and not retained after return.
	Append(batches []byte, opts AppendOptions) (AppendInfo, error)

	// Read returns whole batches starting with the one that holds offset,
	// at most maxBytes of them but always at least one when offset is
	// below the bound (KIP-74), and only batches that end before upTo
	// (upTo < 0: no bound; the bound is the high watermark). Offsets in
	// [EndOffset, ...] or at/after upTo give an empty slice; offsets below
	// StartOffset or above EndOffset give ErrOffsetOutOfRange. The slice
	// must be Released.
	Read(offset int64, maxBytes int, upTo int64) (zerocopy.Slice, error)

	// OffsetForTimestamp returns the offset and timestamp of the first
	// record whose timestamp is >= ts; ok is false when there is none.
	// ts == MaxTimestampQuery asks for the record with the largest
	// timestamp (the latest such record on ties), KIP-734.
	OffsetForTimestamp(ts int64) (offset, timestamp int64, ok bool, err error)

	StartOffset() int64
	EndOffset() int64
	// Size is the number of bytes the log's batches occupy.
	Size() int64

	// Truncate removes every batch with an offset >= offset (a follower
	// realigning with its leader). offset must fall on a batch boundary
	// or at/after EndOffset; the end offset becomes offset. An offset
	// below StartOffset empties the log and restarts it there with no
	// epoch history, as TruncateFullyAndStartAt does; a negative one gives
	// ErrOffsetOutOfRange.
	Truncate(offset int64) error
	// DeleteBefore advances the log start offset to offset (DeleteRecords);
	// data below it may be reclaimed lazily. Offsets above EndOffset give
	// ErrOffsetOutOfRange; offsets at or below StartOffset are a no-op.
	DeleteBefore(offset int64) error
	// ApplyRetention deletes data older than RetentionMs or beyond
	// RetentionBytes as of now, whole segments (or their equivalent) at a
	// time and never the active one, and returns the new start offset.
	ApplyRetention(now time.Time) (int64, error)

	// LeaderEpochs returns the leader epoch history: for each epoch the
	// first offset written in it, ascending. It is maintained from the
	// partitionLeaderEpoch of appended batches and cut by Truncate.
	LeaderEpochs() []EpochEntry

	// SetConfig applies a changed topic config (retention, segment size).
	SetConfig(cfg LogConfig) error
	// Flush makes every appended batch durable.
	Flush() error
	// Close closes the log. Its data is durable once Flush returned or
	// the store's Close has; Close itself need not fsync (with many
	// partitions, the store syncs them all at once).
	Close() error
}

// MaxTimestampQuery as a ts to OffsetForTimestamp asks for the record with
// the largest timestamp (ListOffsets timestamp -3).
const MaxTimestampQuery = -3

// EpochEntry says that leader epoch Epoch began at StartOffset.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// AppendOptions say how the broker owns the batches it appends.
type AppendOptions struct {
	// AssignOffsets: true for a leader, which numbers the batches from
	// the log end offset; false for a follower, whose batches already
	// carry the leader's offsets, increasing from the log end offset on
	// (gaps allowed: a compacted leader log has them; validated with
	// record.ValidateStored, which allows cleaned batches).
	AssignOffsets bool
	// LeaderEpoch is written into partitionLeaderEpoch when AssignOffsets.
	LeaderEpoch int32
	// LogAppendTime, when > 0, marks the batches LogAppendTime with this
	// timestamp (ms) and recomputes their CRC.
	LogAppendTime int64
	// Prevalidated says the caller already ran record.ValidateAll on these
	// exact bytes (the partition layer does, to fail one request of a
	// coalesced round alone), so the CRC is not computed a second time.
	// Batch framing is still checked, so a wrong claim cannot make the
	// backend read out of bounds.
	Prevalidated bool
}

// AppendInfo describes a successful append.
type AppendInfo struct {
	FirstOffset  int64 // baseOffset of the first batch
	LastOffset   int64 // last offset of the last batch
	Batches      int
	Records      int64
	MaxTimestamp int64 // largest maxTimestamp among the batches
	// MaxTimestampOffset is the last offset of a batch with that timestamp.
	MaxTimestampOffset int64
}

// LogConfig is the part of a topic's config a log applies. Zero values mean
// Kafka's defaults (DefaultLogConfig).
type LogConfig struct {
	SegmentBytes       int64         // segment.bytes
	SegmentMs          time.Duration // segment.ms
	RetentionMs        time.Duration // retention.ms; < 0: unlimited
	RetentionBytes     int64         // retention.bytes; < 0: unlimited
	IndexIntervalBytes int           // index.interval.bytes
	IndexMaxBytes      int           // segment.index.bytes
	MaxBatchBytes      int           // max.message.bytes
	// FlushMessages: fsync after this many records (flush.messages);
	// 1 means every append, with concurrent appends sharing one fsync.
	// 0 or negative: never by count.
	FlushMessages int64

	// Compact and Delete are cleanup.policy. Delete: ApplyRetention
	// removes old data by RetentionMs and RetentionBytes. Compact: the log
	// cleaner keeps the latest record per key (and ApplyRetention removes
	// nothing unless Delete is also set). Neither set means Kafka's
	// default, delete alone (see DeletePolicy), so that a zero LogConfig
	// keeps its meaning.
	Compact bool
	Delete  bool
	// DeleteRetention is delete.retention.ms: how long a tombstone (a
	// record with a null value) of a compacted log stays after the
	// segment holding it was cleaned. Taken as given (0 is valid);
	// DefaultLogConfig has Kafka's 1 day.
	DeleteRetention time.Duration
	// MinCleanableDirtyRatio is min.cleanable.dirty.ratio, in [0, 1]: a
	// compacted log is cleaned once this share of its cleanable bytes is
	// dirty (written since the last cleaning). Taken as given (0 is valid);
	// DefaultLogConfig has Kafka's 0.5.
	MinCleanableDirtyRatio float64
	// MinCompactionLag is min.compaction.lag.ms: a record younger than
	// this is not compacted. Taken as given (0, Kafka's default: no lag).
	MinCompactionLag time.Duration
	// MaxCompactionLag is max.compaction.lag.ms: a record older than this
	// is compacted even when the dirty ratio is below the minimum.
	// Invariant: MinCompactionLag <= MaxCompactionLag. Kafka's default,
	// Long.MAX_VALUE ms, does not fit a Duration: math.MaxInt64 (about 292
	// years) stands for it, and WithDefaults sets it when <= 0.
	MaxCompactionLag time.Duration
	// RemoteStorage: the log is tiered (remote.storage.enable on a broker
	// with remote.log.storage.system.enable, Kafka's
	// UnifiedLog.remoteLogEnabled): its log start offset may be below its
	// first local offset, its older records being in the remote tier.
	RemoteStorage bool
}

// RollAge is how old the active segment may get before a roll: segment.ms,
// or max.compaction.lag.ms when that is shorter on a compacted log, since
// the cleaner never touches the active segment (Kafka's
// LogConfig.maxSegmentMs).
func (c LogConfig) RollAge() time.Duration {
	if c.Compact && c.MaxCompactionLag > 0 && c.MaxCompactionLag < c.SegmentMs {
		return c.MaxCompactionLag
	}
	return c.SegmentMs
}

// DeletePolicy reports whether retention (RetentionMs, RetentionBytes)
// applies: cleanup.policy includes delete, or names nothing.
func (c LogConfig) DeletePolicy() bool { return c.Delete || !c.Compact }

// Kafka's defaults.
const (
	DefaultSegmentBytes       = 1 << 30
	DefaultSegmentMs          = 7 * 24 * time.Hour
	DefaultRetentionMs        = 7 * 24 * time.Hour
	DefaultIndexIntervalBytes = 4096
	DefaultIndexMaxBytes      = 10 << 20
	DefaultMaxBatchBytes      = 1048588
	DefaultDeleteRetention    = 24 * time.Hour
	DefaultMinCleanableRatio  = 0.5
	NoMaxCompactionLag        = time.Duration(math.MaxInt64) // max.compaction.lag.ms Long.MAX_VALUE
)

// DefaultLogConfig returns Kafka's defaults.
func DefaultLogConfig() LogConfig {
	return LogConfig{
		SegmentBytes:       DefaultSegmentBytes,
		SegmentMs:          DefaultSegmentMs,
		RetentionMs:        DefaultRetentionMs,
		RetentionBytes:     -1,
		IndexIntervalBytes: DefaultIndexIntervalBytes,
		IndexMaxBytes:      DefaultIndexMaxBytes,
		MaxBatchBytes:      DefaultMaxBatchBytes,

		Delete:                 true,
		DeleteRetention:        DefaultDeleteRetention,
		MinCleanableDirtyRatio: DefaultMinCleanableRatio,
		MaxCompactionLag:       NoMaxCompactionLag,
	}
}

// WithDefaults fills zero fields of c with Kafka's defaults.
func (c LogConfig) WithDefaults() LogConfig {
	d := DefaultLogConfig()
	if c.SegmentBytes <= 0 {
		c.SegmentBytes = d.SegmentBytes
	}
	if c.SegmentMs <= 0 {
		c.SegmentMs = d.SegmentMs
	}
	if c.RetentionMs == 0 {
		c.RetentionMs = d.RetentionMs
	}
	if c.RetentionBytes == 0 {
		c.RetentionBytes = d.RetentionBytes
	}
	if c.IndexIntervalBytes <= 0 {
		c.IndexIntervalBytes = d.IndexIntervalBytes
	}
	if c.IndexMaxBytes <= 0 {
		c.IndexMaxBytes = d.IndexMaxBytes
	}
	if c.MaxBatchBytes <= 0 {
		c.MaxBatchBytes = d.MaxBatchBytes
	}
	if !c.Compact && !c.Delete {
		c.Delete = true
	}
	if c.MaxCompactionLag <= 0 {
		c.MaxCompactionLag = d.MaxCompactionLag
	}
	return c
}

// FullTruncater is an optional capability of a Log, found by type
// assertion (as hashicorp/raft finds MonotonicLogStore): replication uses
// it when a follower's log must restart at an offset the ordinary Truncate
// cannot reach. Every backend in this repository implements it.
type FullTruncater interface {
	// TruncateFullyAndStartAt deletes every batch and restarts the log
	// empty with StartOffset == EndOffset == offset, as Kafka's
	// UnifiedLog.truncateFullyAndStartAt does for a follower that fell
	// behind the leader's log start. offset may be below, inside or above
	// the current [StartOffset, EndOffset]; offset < 0 gives
	// ErrOffsetOutOfRange and changes nothing. The leader epoch history
	// is cleared. The next append (leader or follower) starts at offset;
	// reads below offset give ErrOffsetOutOfRange. The new start is
	// durable when it returns: a reopen, clean or not, finds the log empty
	// at offset. A crash before it returns leaves either that or the old
	// log, possibly with its tail cut as by Truncate (which a follower
	// realigns anyway). Slices already handed out stay readable until
	// released.
	TruncateFullyAndStartAt(offset int64) error
}

// EpochRestorer is an optional capability of a Log, found by type
// assertion: a follower that fell below its leader's local log start on a
// tiered topic (KIP-405) restarts its log there with
// TruncateFullyAndStartAt, which clears the leader epoch history, and then
// restores the history below the restart offset from the remote tier, as
// Kafka's ReplicaFetcherTierStateMachine assigns the remote segment's
// leader-epoch checkpoint to the log's epoch cache. The segment and memlog
// backends implement it.
type EpochRestorer interface {
	// RestoreLeaderEpochs replaces the epoch history of an empty log
	// (StartOffset == EndOffset) with entries, ascending (what breaks
	// EpochCache's invariant is dropped, as NewEpochCache does), cut as
	// the log's own history is: entries at or above the start offset go
	// (the next append assigns them) and the one covering the start
	// offset starts there (EpochCache.TruncateFromStart). It is written
	// where the log keeps its history before it returns, but a reopen
	// applies the log's recovery to it: the segment backend cuts entries
	// at or above the log end, so on a log still empty the restored entry
	// lasts until the first append (which assigns the epoch of the batch
	// at the start offset, the same or a later one) or a reopen. A log
	// with batches gives ErrOffsetOutOfRange and changes nothing.
	RestoreLeaderEpochs(entries []EpochEntry) error
}

// RestoredEpochs returns the history RestoreLeaderEpochs keeps of entries
// for a log empty at start.
func RestoredEpochs(entries []EpochEntry, start int64) *EpochCache {
	c := NewEpochCache(entries)
	c.TruncateFromEnd(start)
	c.TruncateFromStart(start)
	return c
}

// HighWatermarkStore is an optional capability of a Store, found by type
// assertion: it keeps the partitions' high watermarks across restarts, as
// Kafka's replication-offset-checkpoint does per log dir. The store does
// not interpret the offsets and does not tie them to its logs (DeleteLog
// leaves an entry until the next save drops it); the caller clamps a loaded
// high watermark to its log's [StartOffset, EndOffset]. Every backend in
// this repository implements it. Safe for concurrent use; after Close both
// methods return ErrClosed.
type HighWatermarkStore interface {
	// SaveHighWatermarks replaces the saved set with hw and makes it
	// durable before returning; a crash leaves the old set or the new
	// one. Offsets must be >= 0. hw is not retained.
	SaveHighWatermarks(hw map[PartitionID]int64) error
	// HighWatermarks returns the last saved set (empty, not an error,
	// when none was ever saved), in a new map the caller owns. Damaged
	// saved data gives an error wrapping ErrCorruptStore that names the
	// file or key; the store does not fall back on its own, because the
	// fallback is the caller's: Kafka, finding no checkpointed high
	// watermark, starts from the log start offset and lets the leader's
	// followers move it up again.
	HighWatermarks() (map[PartitionID]int64, error)
}

// Maintainer is an optional capability of a Store, found by type
// assertion: it lets the broker's replica manager run the periodic work
// of the logs on its own timers (log.flush.interval.ms and
// log.flush.offset.checkpoint.interval.ms), instead of the store running
// them itself (Options.FlushInterval, Options.RecoveryCheckpointInterval,
// which the broker leaves off). Both methods are safe for concurrent use
// with each other and with every other method of the Store; after Close
// both return ErrClosed. A Store without it (the "memory" backend) has
// nothing to make durable.
type Maintainer interface {
	// FlushAll makes every batch appended so far to every open log
	// durable, as Log.Flush of each would, in one pass over the store
	// (the "pebble" backend syncs once for all its logs). A log whose
	// flush fails stays failed, as after a failed Log.Flush; FlushAll
	// goes on with the others and returns an error naming what failed.
	// A log closed or deleted meanwhile is skipped.
	FlushAll() error
	// CheckpointRecoveryPoints records the logs' recovery points (the
	// offsets below which their data is known durable) so that recovery
	// after a crash re-validates only what lies past them (Kafka's
	// recovery-point-offset-checkpoint). Store.Close writes the last one
	// itself. A backend whose flushes record their own recovery state
	// ("pebble": each flush commits the flushed positions) does nothing
	// here.
	CheckpointRecoveryPoints() error
}
