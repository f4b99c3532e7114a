// Package replication holds partitions as replicas: the layer between the
// Kafka request handlers and the storage engine. A Partition owns one
// engine.Log; every write goes through it, so it is where offsets are
// assigned, idempotent-producer sequences are checked, concurrent produce
// requests are coalesced into one engine append, and the high watermark
// (the offset below which consumers may read) is advanced.
//
// In single-node mode a partition is always the leader and its ISR is just
// itself (Options.BrokerID), so the high watermark is the log end offset
// after each append (after the fsync when Options.FlushEveryAppend is set).
//
// In a cluster the broker applies the controller's LeaderAndIsr with
// MakeLeader or MakeFollower (replica.go). The leader learns its followers'
// progress from their fetches (HandleReplicaFetch, which calls
// UpdateFollowerState), keeps the high watermark at the smallest log end
// offset in the ISR, and shrinks (MaybeShrinkISR) or expands the ISR
// through Options.AlterISR. Followers are fed by a FetcherManager
// (fetcher.go), which truncates each log to where it agrees with the
// leader's (OffsetForLeaderEpoch, KIP-101/KIP-279) and then fetches.
//
// Transactions (txn.go): transactional batches open a producer's
// transaction in the partition, WriteTxnMarker (the coordinator's
// WriteTxnMarkers) ends it with a COMMIT or ABORT control batch, aborts
// are recorded in the log's aborted-transaction index (engine.TxnIndex),
// and the last stable offset (LastStableOffset) stays below every
// transaction not yet decided and replicated: read_committed consumers
// read below it.
//
// Waiting for a partition to change: a parked fetch (the server's
// purgatory) registers a Watch on each partition it reads, all sharing one
// Waiter, and is credited with the bytes each append (followers) or
// high-watermark move (consumers) or last-stable-offset move
// (read_committed consumers) makes readable, or woken outright by a
// truncation, leadership change or Close (watch.go). acks=-1 produce
// requests wait on Changed, a channel closed at every change.
package replication
