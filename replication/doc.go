// Package replication holds partitions as replicas: the layer between the
// Kafka request handlers and the storage engine. A Partition owns one
// engine.Log; every write goes through it, so it is where offsets are
// assigned, idempotent-producer sequences are checked, concurrent produce
// requests are coalesced into one engine append, and the high watermark
// (the offset below which consumers may read) is advanced.
//
// In single-node mode a partition is always the leader and its ISR is just
// itself, so the high watermark is the log end offset after each append
// (after the fsync when Options.FlushEveryAppend is set). The cluster mode
// adds followers, the ISR and follower fetchers to this package; the high
// watermark then becomes the smallest log end offset in the ISR.
package replication
