// Package tiered is tiered storage (Kafka's KIP-405): the
// remote log manager (manager.go) copies each rolled segment of a topic
// with remote.storage.enable=true, once it lies wholly below the high
// watermark, to a RemoteStorageManager (rsm.go; the local-directory
// backend in localdir.go, S3 in s3.go), records what is remote in the remote log
// metadata (metadata.go, kept in the metastore by metastore.go), then lets
// local retention (local.retention.ms/.bytes) delete only segments already
// remote. Whole-log retention (retention.ms/.bytes) and topic deletion
// delete remote segments. Fetches below the local log start are served
// from the remote tier (read.go).
//
// Crash safety. A segment's copy is recorded COPY_SEGMENT_STARTED before
// any object is written and COPY_SEGMENT_FINISHED after every object is
// durable; only FINISHED segments are read or counted as remote, and only
// they let local retention delete a local segment. Each object is written
// to a temporary name, fsynced and renamed, so no reader ever sees a torn
// object. At start (and on every task run) a segment left STARTED by a
// crash is deleted (DELETE_SEGMENT_STARTED, its objects removed,
// DELETE_SEGMENT_FINISHED) and copied again under a new segment id: it is
// never trusted, and never copied twice into the set of FINISHED segments.
// Deletion is recorded DELETE_SEGMENT_STARTED before any object goes, so a
// crash mid-delete is finished by the next run.
//
// Cluster mode (topicmeta.go): the metadata is Kafka's topic-based one,
// __remote_log_metadata, replayed by every broker; only a partition's
// leader copies and expires remote segments (a new leader cleans what a
// dead one left COPY_SEGMENT_STARTED, then continues after the last
// finished segment), followers apply local retention to what is remote.
//
// A follower below the leader's local log start is answered
// OFFSET_MOVED_TO_TIERED_STORAGE and rebuilds its start, leader epochs and
// producer state from the remote tier (follower.go, replication/tierstate.go).
package tiered
