package engine

// SnapshotStore is an optional capability of a Log, found by type assertion
// (as TxnIndex): it keeps opaque snapshots of state derived from the log,
// each named by the offset it was taken at, meaning "the state of the log
// below this offset". The store never interprets the bytes; replication
// keeps its producer state in them (Kafka's .snapshot files) and decides
// when to save, load and drop them. Every backend in this repository
// implements it: segment as <20-digit offset>.snapshot files in the
// partition dir, pebblelog as keys, memlog in memory.
//
// Snapshots are not tied to the log's batches: Truncate, retention,
// DeleteBefore and cleaning leave them alone (the caller drops the ones a
// truncation invalidates with DeleteSnapshotsFrom), except that
// TruncateFullyAndStartAt (and a Truncate below StartOffset, which is one)
// and DeleteLog drop every snapshot. Safe for
// concurrent use like Log; after Close the methods return ErrClosed.
type SnapshotStore interface {
	// SaveSnapshot stores data as the snapshot at offset (>= 0),
	// replacing one at the same offset: once it returns, a process crash
	// leaves the new snapshot (never a mix of old and new). It is
	// durable against a machine crash once the store's Close returns, and
	// not necessarily before (the log's Flush need not cover it: segment's
	// does not, pebble's does): a machine crash before may leave it
	// missing or damaged, so the caller must detect damage (a checksum)
	// and be able to do without it. data is not retained.
	SaveSnapshot(offset int64, data []byte) error
	// LatestSnapshot returns the snapshot with the largest offset <=
	// upTo; ok is false when there is none. data is a new slice the
	// caller owns. The store does not check the bytes: a damaged snapshot
	// is returned as it is, and the caller, who can tell, asks again with
	// upTo below it.
	LatestSnapshot(upTo int64) (offset int64, data []byte, ok bool, err error)
	// DeleteSnapshotsFrom removes the snapshots at offsets >= offset.
	DeleteSnapshotsFrom(offset int64) error
	// DeleteSnapshotsBefore removes the snapshots at offsets < offset.
	DeleteSnapshotsBefore(offset int64) error
	// SnapshotDue returns the offset after which the log would like a new
	// snapshot: the base offset of its active segment for segment (Kafka
	// snapshots at each roll, so a restart replays at most one segment),
	// -1 for a backend without segments, whose caller snapshots by bytes
	// written instead. A caller whose last snapshot is at or above it
	// need not snapshot again.
	SnapshotDue() int64
}
