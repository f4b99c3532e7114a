package server

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/replica"
	"github.com/sluice/sluice/server/fetchresp"
	"github.com/sluice/sluice/tiered"
)

// Tiered storage (KIP-405, package tiered): the server's side is small.
// The remote log manager starts with the broker when
// remote.log.storage.system.enable is true (newTiered), owns the retention
// of tiered topics (replica.Options.OwnsRetention), hears of deleted
// topics, answers ListOffsets -2 (the remote log start), -4 (the local
// one) and -5 (the end of what is remote), and serves consumer fetches
// below the local log start (readRemote).

// newTiered returns the remote log manager, nil when tiering is off.
func (s *Server) newTiered(rsm tiered.RemoteStorageManager, md *tiered.TopicMetadata) (*tiered.Manager, error) {
	c := s.currentConfig()
	if !c.RemoteLogStorageSystemEnable {
		return nil, nil
	}
	if rsm == nil {
		var err error
		if rsm, err = tiered.OpenRemoteStorage(c); err != nil {
			return nil, err
		}
	}
	tm, err := tiered.New(tiered.Options{Config: *c, Meta: s.meta, RM: s.rm, RSM: rsm, Metadata: md, Logger: s.log, Now: s.now})
	if err != nil || s.metrics == nil {
		return tm, err
	}
	// Kafka's RemoteLogManager metrics (tiered/metrics.go).
	col := tm.Collector()
	if err := s.metrics.Register(col); err != nil {
		return nil, fmt.Errorf("server: register tiered storage metrics: %w", err)
	}
	s.life.Push("tiered storage metrics", func() error { s.metrics.Unregister(col); return nil })
	return tm, nil
}

// checkTieredConfigs refuses what Kafka's LogConfig.validate refuses of a
// tiered topic: remote.storage.enable with cleanup.policy compact, or on a
// broker without remote.log.storage.system.enable. The error wraps
// errInvalidConfig.
func (s *Server) checkTieredConfigs(overrides map[string]string, compact bool) error {
	if overrides["remote.storage.enable"] != "true" {
		return nil
	}
	if !s.currentConfig().RemoteLogStorageSystemEnable {
		return fmt.Errorf("%w: remote.storage.enable: tiered storage is off on this broker (remote.log.storage.system.enable=false)", errInvalidConfig)
	}
	if compact {
		return fmt.Errorf("%w: remote.storage.enable: remote log storage is not supported for compacted topics (cleanup.policy includes compact)", errInvalidConfig)
	}
	// Tiering copies Kafka-layout segment files: only the segment backend
	// has them (the broker's own backend is checked at start).
	if b, ok := overrides["storage.backend"]; ok && b != "segment" {
		return fmt.Errorf("%w: remote.storage.enable: tiered storage works on topics of the segment backend only; this topic's storage.backend is %s", errInvalidConfig, b)
	}
	return s.checkTieredRetention(overrides)
}

// checkTieredRetention refuses local.retention.* that Kafka's
// LogConfig.validateRemoteStorageRetentionSize / ...Time and
// validateRetentionConfigsWhenRemoteCopyDisabled refuse of a tiered
// topic: with a finite retention.*, local.retention.* -1 or above it; with
// remote.log.copy.disable=true, local.retention.* other than retention.*
// (or -2). The error wraps errInvalidConfig.
func (s *Server) checkTieredRetention(overrides map[string]string) error {
	num := func(name string) int64 {
		v, _ := s.configValue(overrides, name)
		n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		return n
	}
	copyDisable := overrides["remote.log.copy.disable"] == "true"
	for _, k := range []struct{ local, total string }{
		{"local.retention.bytes", "retention.bytes"},
		{"local.retention.ms", "retention.ms"},
	} {
		local, total := num(k.local), num(k.total)
		if total > -1 && local != -2 {
			if local == -1 {
				return fmt.Errorf("%w: %s: Value must not be -1 as %s value is set as %d.", errInvalidConfig, k.local, k.total, total)
			}
			if local > total {
				return fmt.Errorf("%w: %s: Value must not be more than %s property value: %d", errInvalidConfig, k.local, k.total, total)
			}
		}
		if copyDisable && local != -2 && local != total {
			return fmt.Errorf("%w: When `remote.log.copy.disable` is set to true, the `%s` and `%s` must be set to the identical value because there will be no more logs copied to the remote storage.", errInvalidConfig, k.local, k.total)
		}
	}
	return nil
}

// checkTieredTurnOff refuses, as Kafka's
// LogConfig.validateTurningOffRemoteStorageWithDelete, turning
// remote.storage.enable from true (in cur) to false (in overrides)
// without remote.log.delete.on.disable=true. The error wraps
// errInvalidConfig.
func (s *Server) checkTieredTurnOff(cur, overrides map[string]string) error {
	was, _ := s.configValue(cur, "remote.storage.enable")
	now, _ := s.configValue(overrides, "remote.storage.enable")
	if was != "true" || now == "true" || overrides["remote.log.delete.on.disable"] == "true" {
		return nil
	}
	return fmt.Errorf("%w: It is invalid to disable remote storage without deleting remote data. "+
		"If you want to keep the remote data and turn to read only, please set `remote.storage.enable=true,remote.log.copy.disable=true`. "+
		"If you want to disable remote storage and delete all remote data, please set `remote.storage.enable=false,remote.log.delete.on.disable=true`.", errInvalidConfig)
}

// topicDeletedRemote deletes a deleted topic's remote segments.
func (s *Server) topicDeletedRemote(t *replica.Topic) {
	if s.tiered != nil {
		s.tiered.TopicDeleted(t.ID, t.Name, len(t.Parts))
	}
}

// topicDeletion is what a cluster's plane knows of topic deletions
// (zkPlane, cluster.Node.TopicBeingDeleted).
type topicDeletion interface {
	topicBeingDeleted(topic string) (bool, error)
}

// remoteDeletion returns, for a StopReplica with delete of a replica
// whose topic is being deleted, the deletion of the partition's remote
// segments (Kafka's RemoteLogManager.stopPartitions with
// deleteRemoteLog, run by every replica); nil otherwise.
// REQUIRES: s.rm.Lock held.
func (s *Server) remoteDeletion(topic string, ps kmsg.StopReplicaRequestTopicPartitionState) func() {
	if s.tiered == nil || !ps.Delete {
		return nil
	}
	td, ok := s.ib.(topicDeletion)
	t := s.rm.Topic(topic)
	if !ok || t == nil {
		return nil
	}
	if deleting, err := td.topicBeingDeleted(topic); err != nil || !deleting {
		return nil
	}
	id, part := t.ID, ps.Partition
	return func() { s.tiered.PartitionDeleted(id, topic, part) }
}

// deleteRecordsRemote moves the log start offset of a tiered partition
// to offset (-1: low, the local log start DeleteRecordsBefore left, which
// is then the high watermark) after its local log applied a DeleteRecords,
// and returns the new log start, which may lie below the local log start
// (tiered.Manager.DeleteRecords keeps it durably with the log). Other
// partitions answer low.
func (s *Server) deleteRecordsRemote(p *replica.Partition, offset, low int64) (int64, error) {
	if s.tiered == nil {
		return low, nil
	}
	t := s.rm.Topic(p.Topic())
	if t == nil {
		return low, nil
	}
	if offset < 0 {
		offset = low
	}
	start, err := s.tiered.DeleteRecords(t, p, offset)
	if err != nil {
		return -1, fmt.Errorf("%w: %w", errRemoteStorage, err)
	}
	return start, nil
}

// remoteLogStart is the log start offset a fetch or ListOffsets -2
// answers: of a tiered partition the one it keeps (below the local log
// start while the remote tier holds records; tiered.Manager.LogStart),
// else the local log start.
func (s *Server) remoteLogStart(p *replica.Partition) (start, local int64, err error) {
	local = p.LogStartOffset()
	if s.tiered == nil {
		return local, local, nil
	}
	t := s.rm.Topic(p.Topic())
	if t == nil {
		return local, local, nil
	}
	start, local, err = s.tiered.LogStart(t, p)
	if err != nil {
		return local, local, fmt.Errorf("%w: %w", errRemoteStorage, err)
	}
	return start, local, nil
}

// remoteFill is what one fill of a fetch did with the remote tier: read
// is set once a partition read it (one per fill, as Kafka); pending when
// that read did not complete within remote.fetch.max.wait.ms, so that the
// fetch answers at once instead of parking until its max wait (nothing
// wakes the purgatory when the read completes; the next fetch finds it
// cached).
type remoteFill struct{ read, pending bool }

// readRemote serves a consumer fetch of ft.offset, below the local log
// start, from the remote tier: at most limit bytes (at least one batch
// when first), below bound (the high watermark or the LSO), with the
// aborted transactions for read_committed. A read not done within
// remote.fetch.max.wait.ms answers no records (rf.pending), so the
// consumer fetches again; a failed read answers KAFKA_STORAGE_ERROR.
func (s *Server) readRemote(ft *fetchTarget, op *fetchresp.Partition, limit int64, remaining *int64, first bool, rf *remoteFill) error {
	t := s.rm.Topic(ft.p.Topic())
	if t == nil {
		return errUnknownTopicOrPartition
	}
	bound := op.HighWatermark
	if ft.committed {
		bound = op.LastStableOffset
	}
	sl, aborted, err := s.tiered.Read(context.Background(), t, ft.p, ft.offset, int(max(limit, 1)), bound)
	switch {
	case errors.Is(err, tiered.ErrRemoteFetchBusy):
		rf.pending = true
		return nil
	case errors.Is(err, engine.ErrOffsetOutOfRange):
		return err
	case err != nil:
		return fmt.Errorf("%w: %w", errRemoteStorage, err)
	}
	if sl.Len() == 0 {
		return nil
	}
	if !keepRecords(op, sl, limit, remaining, first) {
		return nil
	}
	if ft.committed {
		for _, a := range aborted {
			op.AbortedTransactions = append(op.AbortedTransactions, fetchresp.AbortedTransaction{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset})
		}
	}
	return nil
}

// fetchTiered completes a consumer's read of a tiered partition
// (readPartition answered with err): the log start offset answered is the
// remote one, and an offset below the local log start but in the remote
// tier is read from there instead of OFFSET_OUT_OF_RANGE. As Kafka's
// ReplicaManager, one fill of a fetch reads the remote tier for one
// partition at most (rf records it): the others needing it
// answer no records this time, so a response waits for one bounded
// remote read, and the consumer's next fetches get the rest.
func (s *Server) fetchTiered(ft *fetchTarget, op *fetchresp.Partition, remaining *int64, first bool, err error, rf *remoteFill) error {
	if s.tiered == nil {
		return err
	}
	start, local, serr := s.remoteLogStart(ft.p)
	if serr != nil {
		if err == nil {
			return nil // local data answered; the remote start is unknown
		}
		return serr
	}
	op.LogStartOffset = start
	if err == nil || ft.offset >= local || ft.offset < start {
		return err
	}
	limit := min(int64(ft.maxBytes), *remaining)
	if (limit <= 0 && !first) || rf.read {
		return nil
	}
	rf.read = true
	return s.readRemote(ft, op, limit, remaining, first, rf)
}

// latestTiered is ListOffsets -5: the last offset in remote storage, -1
// when nothing is remote, the topic is not tiered or its metadata cannot
// be read (as Kafka's highestOffsetInRemoteStorage before it is known).
func (s *Server) latestTiered(p *replica.Partition) int64 {
	if s.tiered == nil {
		return -1
	}
	t := s.rm.Topic(p.Topic())
	if t == nil {
		return -1
	}
	end, ok, err := s.tiered.RemoteEnd(t, p)
	if err != nil || !ok {
		return -1
	}
	return end - 1
}

// remoteOffsetForTimestamp is ListOffsets for a timestamp ts >= 0 in the
// remote tier of a tiered partition: ok is false when no remote record has
// a timestamp >= ts (the local log is searched then).
func (s *Server) remoteOffsetForTimestamp(p *replica.Partition, ts int64) (offset, timestamp int64, ok bool, err error) {
	t := s.rm.Topic(p.Topic())
	if t == nil {
		return 0, 0, false, nil
	}
	offset, timestamp, ok, err = s.tiered.OffsetForTimestamp(t, p, ts)
	if err != nil {
		return 0, 0, false, fmt.Errorf("%w: %w", errRemoteStorage, err)
	}
	return offset, timestamp, ok, nil
}
