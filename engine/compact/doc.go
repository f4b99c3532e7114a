// Package compact is the pure core of the log cleaner for
// cleanup.policy=compact: Kafka's two-pass, bounded-memory algorithm
// (LogCleaner, Cleaner.cleanSegments, SkimpyOffsetMap) over RecordBatch v2
// bytes, with no files, threads or backends. A backend feeds it log bytes
// and writes out what it returns.
//
// One cleaning round over the dirty range [start, end) of a partition:
//
//  1. Build: read the dirty batches in offset order and put each keyed
//     record's offset into an OffsetMap, a fixed-size table of key hash →
//     latest offset whose memory is log.cleaner.dedupe.buffer.size (per
//     cleaner thread). When the map reaches its load factor the pass stops;
//     the map covers [start, m.Latest()] and the rest waits for the next
//     round ("a pass cleans what fits and continues next time").
//  2. Filter: read every segment from the log start up to m.Latest()+1 (the
//     already-clean part and the dirty part the map covers), and write
//     each batch with only the records that are their key's latest,
//     tombstones until their delete horizon, and the batches producers
//     need. Offsets never change, so the output has gaps. The next round's
//     start is m.Latest()+1 (the cleaner-offset-checkpoint).
//
// What is kept follows Kafka 3.x (see Filter for each rule and
// MemoryRecords.filterTo / LogCleaner.shouldRetainRecord for the source):
// the latest record per key, records past the map's range, tombstones for
// delete.retention.ms after the cleaning that first stamped their batch
// (KIP-534 delete horizon, stored in baseTimestamp with attribute bit
// 0x40), the last batch of each active producer and the round's last
// batch (as empty batches if need be; no other batch stays empty, so
// earlier retained ones go), and transaction markers (control batches) while data of their
// transaction may remain before them, then for delete.retention.ms after
// the cleaning that found none (the same delete horizon). Key-less records
// and the records of aborted transactions are removed; an aborted record
// never counts as its key's latest.
//
// Output batches are not all valid to record.Validate: a cleaned batch has
// recordCount < lastOffsetDelta+1 and gaps in its offset deltas, and a
// batch kept for producer state has recordCount 0. Kafka allows both
// (DefaultRecordBatch.ensureValid checks size and CRC only). ValidateCleaned
// is the check for cleaned log bytes; recovery of a cleaned segment must
// use it (or record.Validate relaxed the same way), not record.Validate.
//
// Concurrency: none. A Cleaner and its OffsetMap belong to one cleaner
// thread; distinct pairs may run in parallel on distinct partitions.
package compact
