// Package segment is the storage backend "segment": each partition is a
// directory of Kafka-format segment files (.log, .index, .timeindex; see
// format.go), byte-compatible with what a Kafka broker writes, so Kafka's
// tools and operational knowledge apply. Reads return file slices that the
// server sends with sendfile(2).
//
// # Disk assumptions
//
// What the backend relies on, and what it does not:
//
//   - A write(2) that returned is in the page cache: every later read (by
//     this or any process) sees it, and it survives the process crashing.
//     It does not survive the machine losing power or the kernel crashing
//     until it has been written back.
//   - fsync(2) on a file returns once its data (including pages dirtied
//     through a shared mmap of it) is on stable storage; fsync on a
//     directory makes renames and creations in it durable. A failed fsync
//     or write is treated as permanent: the log stays failed, every later
//     write and flush returning the first error, until it is reopened and
//     recovered (see Log).
//   - By default nothing is fsynced on the append path (Kafka's default:
//     durability comes from replication and the page cache). A rolled
//     segment is fsynced in the background; flush.messages and
//     log.flush.interval.ms add fsyncs. Store.Close makes everything
//     durable with one syncfs(2) of the log dir (Linux 5.8+, where it
//     reports writeback errors; elsewhere each Log fsyncs its files as it
//     closes), so Log.Close does not fsync; this assumes the partition
//     directories are on the log dir's file system. The recovery point
//     (recovery-point-offset-checkpoint) is an offset below which
//     everything is known to be on disk; loading a log never raises it,
//     recovery included (Kafka's LogLoader): a flush does.
//   - New directories and files are not fsynced when created: the log's
//     first flush after a creation fsyncs the directories (a machine crash
//     before may lose an empty log, or a segment with nothing flushed).
//     Producer-state snapshots are written without fsync (a temp file
//     renamed; the caller checks their CRC).
//   - A crash may leave, past the recovery point: a .log cut anywhere
//     (even inside a batch header), zero-filled or garbage blocks after the
//     last complete write (filesystems that extend a file before its data
//     lands), batches written but indexes not, or indexes written (being
//     mmapped, the kernel writes their pages back at any time) ahead of the
//     log. It may not change bytes below the recovery point. Below it only
//     the indexes are distrusted, and checked.
//   - Writes are not assumed atomic at any size; recovery validates every
//     batch past the recovery point (length, magic, CRC-32C, records,
//     offset continuity) and cuts the log at the first bad one, then
//     rebuilds that segment's indexes. Index files are never trusted for
//     their size: a preallocated file after a crash is mostly zeros.
//   - A clean shutdown (Store.Close) writes .kafka_cleanshutdown last; Open
//     removes it. With it present the next Open recovers nothing but still
//     sanity-checks every index.
//   - The recovery-point checkpoint is written every
//     log.flush.offset.checkpoint.interval.ms (Kafka's 60 s) when a
//     recovery point moved, after a truncation, and at Close, so a killed
//     process re-validates only what lies past offsets fsynced before the
//     last checkpoint. In the broker, the replica manager runs that timer
//     and log.flush.interval.ms's (Store.CheckpointRecoveryPoints and
//     Store.FlushAll, engine.Maintainer); a Store opened directly runs
//     its own, from engine.Options.RecoveryCheckpointInterval and
//     FlushInterval.
//
// # Open files
//
// Descriptors and mappings are bounded by the Store's open-segment cache
// (opencache.go, log.segment.open.files.max), not by the number of
// partitions or segments: every segment, the active one included, keeps its
// .log open and its indexes mapped only while the cache holds it (the
// index files are closed once mapped: mmapindex), and reopens them on its
// next use. Closing an evicted
// segment does not fsync it (the bytes are in the page cache); a later
// flush reopens the file and fsyncs it, which writes those pages and
// reports a writeback error that happened meanwhile.
//
// # Concurrency
//
// A Log serializes appends; reads run concurrently with appends and see a
// prefix of whole batches: the appender publishes the segment's committed
// size and then the log end offset after its write returns, and readers
// never look past them. Deleting a segment (retention, DeleteLog) unlinks
// its files at once; a slice already handed out keeps the file open
// (zerocopy.File reference counts) until released; so does a segment the
// open-segment cache closes: the slice keeps the old descriptor, the
// segment reopens with a new one. Truncate, by contrast,
// cuts the file in place: a slice over the cut bytes reads short, as in
// Kafka, where only followers truncate and they serve no reads.
package segment
