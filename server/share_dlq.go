package server

// Dead-letter topics of share groups (KIP-1191), single node:
//
//   - A share group with errors.deadletterqueue.topic.name set gets, for
//     every record archived because it was rejected (AckReject) or because
//     its delivery count reached the limit, one record in that topic.
//   - The dead letters are written (acks=all, through the partition's own
//     append path as the share coordinator writes) by sharePersist, before
//     the share state that archives them is written: a failed write keeps
//     them pending and fails the persist (an acknowledgement is undone and
//     answers the error). Once the state is written the records are
//     Archived in it and never delivered, so never dead-lettered, again.
//   - The dead letter of a record of partition P goes to partition
//     P mod (the dead-letter topic's partition count), in the order they
//     were archived, with the headers below; its key and value are the
//     record's with errors.deadletterqueue.copy.record.enable=true, else
//     null.
//   - A missing dead-letter topic is created with the broker's defaults
//     when errors.deadletterqueue.auto.create.topics.enable=true; else the
//     dead letters are skipped with a logged warning and counted in
//     sluice_share_dlq_skipped_total. A dead-letter topic whose partition
//     is not led here (cluster mode) is skipped the same way.
//
// Known gap: a crash after the dead letter is written and before the
// share state is, writes it again when the record is archived again after
// the restart (at-least-once there, not exactly once).

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/sluice/sluice/cluster"
	"github.com/sluice/sluice/coordlog"
	"github.com/sluice/sluice/group/share"
	"github.com/sluice/sluice/record"
)

// The headers of a dead letter. KIP-1191's exact names were not at hand:
// these are Sluice's, documented in README.
const (
	dlqHeaderTopic     = "__dlq.source.topic"
	dlqHeaderPartition = "__dlq.source.partition"
	dlqHeaderOffset    = "__dlq.source.offset"
	dlqHeaderDelivery  = "__dlq.delivery.count"
	dlqHeaderReason    = "__dlq.reason"
	dlqHeaderGroup     = "__dlq.group"

	dlqReasonRejected  = "rejected"
	dlqReasonExhausted = "delivery-count-exhausted"
)

// errDLQNotLeader is coordlog's not-leader error for a dead-letter append.
var errDLQNotLeader = errors.New("server: dead-letter partition not led here")

// dlqAppendTimeout bounds one dead-letter write.
const dlqAppendTimeout = 10 * time.Second

// writeDeadLetters writes the dead letters of share partition k (pending in
// p) to the group's dead-letter topic, before the state archiving them is
// persisted. On an error they stay pending in p. REQUIRES: the share
// partition's lock held.
func (s *Server) writeDeadLetters(ctx context.Context, k share.Key, p *share.Partition) error {
	dead := p.TakeDeadLetters()
	if len(dead) == 0 || s.share == nil {
		return nil
	}
	cfg := s.shareDataConfig(k.Group)
	if cfg.DLQTopic == "" {
		return nil
	}
	if err := s.appendDeadLetters(ctx, k, cfg, dead); err != nil {
		p.RequeueDeadLetters(dead)
		return err
	}
	return nil
}

func (s *Server) appendDeadLetters(ctx context.Context, k share.Key, cfg ShareGroupConfig, dead []share.DeadLetter) error {
	srcName := s.lookup.topicNameByID(k.Topic)
	if srcName == "" {
		return nil // the source topic is gone: nothing to name
	}
	t := s.rm.Topic(cfg.DLQTopic)
	if t == nil && s.currentConfig().GroupShare.DLQAutoCreateTopics {
		if err := s.autoCreateTopic(cfg.DLQTopic); err != nil && !errors.Is(err, cluster.ErrTopicExists) {
			return fmt.Errorf("server: creating dead-letter topic %s: %w", cfg.DLQTopic, err)
		}
		t = s.rm.Topic(cfg.DLQTopic)
	}
	if t == nil || len(t.Parts) == 0 {
		s.share.dlqSkipped.Add(int64(len(dead)))
		s.log.Warn("server: share group dead-letter topic missing, dead letters skipped",
			"group", k.Group, "topic", cfg.DLQTopic, "records", len(dead))
		return nil
	}
	dst := t.Parts[int(k.Partition)%len(t.Parts)]
	if dst == nil || !dst.IsLeader() {
		s.share.dlqSkipped.Add(int64(len(dead)))
		s.log.Warn("server: share group dead-letter partition not led here, dead letters skipped",
			"group", k.Group, "topic", cfg.DLQTopic, "records", len(dead))
		return nil
	}
	var copies map[int64]record.BuildRecord
	if cfg.DLQCopyRecord {
		copies = s.readSourceRecords(srcName, k.Partition, dead)
	}
	ts := s.now().UnixMilli()
	part := strconv.Itoa(int(k.Partition))
	recs := make([]record.BuildRecord, 0, len(dead))
	for _, d := range dead {
		reason := dlqReasonExhausted
		if d.Rejected {
			reason = dlqReasonRejected
		}
		r := copies[d.Offset]
		r.Timestamp = ts
		r.Headers = append(r.Headers,
			record.Header{Key: dlqHeaderTopic, Value: []byte(srcName)},
			record.Header{Key: dlqHeaderPartition, Value: []byte(part)},
			record.Header{Key: dlqHeaderOffset, Value: []byte(strconv.FormatInt(d.Offset, 10))},
			record.Header{Key: dlqHeaderDelivery, Value: []byte(strconv.Itoa(int(d.Deliveries)))},
			record.Header{Key: dlqHeaderReason, Value: []byte(reason)},
			record.Header{Key: dlqHeaderGroup, Value: []byte(k.Group)},
		)
		recs = append(recs, r)
	}
	if err := coordlog.Append(ctx, dst.Partition, recs, dlqAppendTimeout, errDLQNotLeader); err != nil {
		return err
	}
	s.share.dlqWritten.Add(int64(len(recs)))
	return nil
}

// readSourceRecords reads the key, value and headers of the dead records
// from the source partition; a record no longer there (retention) is
// copied as null.
func (s *Server) readSourceRecords(topic string, partition int32, dead []share.DeadLetter) map[int64]record.BuildRecord {
	out := make(map[int64]record.BuildRecord, len(dead))
	p := s.rm.Partition(topic, partition)
	if p == nil {
		return out
	}
	want := make(map[int64]bool, len(dead))
	for _, d := range dead {
		want[d.Offset] = true
	}
	var it record.Iter
	for _, d := range dead {
		if _, ok := out[d.Offset]; ok {
			continue
		}
		sl, err := p.ReadBelow(d.Offset, 1, p.HighWatermark())
		if err != nil {
			continue
		}
		buf, err := sl.AppendTo(nil)
		sl.Release()
		if err != nil {
			continue
		}
		eachBatch(buf, func(b record.Batch) {
			if b.Control() {
				return
			}
			it.Reset(b)
			for it.Next() {
				off := it.Offset()
				if !want[off] {
					continue
				}
				r := it.Record()
				br := record.BuildRecord{Key: dlqClone(r.Key), Value: dlqClone(r.Value)}
				r.Headers(func(k, v []byte) {
					br.Headers = append(br.Headers, record.Header{Key: string(k), Value: dlqClone(v)})
				})
				out[off] = br
			}
		})
	}
	return out
}

// dlqClone copies b, keeping nil as nil (a null key or value).
func dlqClone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}
