package server

// Dead-letter topics of share groups (KIP-1191), both modes:
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
//     sluice_share_dlq_skipped_total. A dead-letter partition led by
//     another broker gets them as a Produce (acks=all, the same batch,
//     producer id and sequence) over the inter-broker listener
//     (produceDeadLetters); one without a leader keeps them pending.
//
// Exactly once per archived record, across crashes and failovers
// (sharecoord/dlq.go): dead letters are written into the share
// partition's durable state, as a pending chunk with the producer
// sequence it will carry, in the same write that archives their records;
// then each pending chunk is appended to the dead-letter partition as one
// idempotent batch of the share partition's own producer id (allocated
// once, kept in the state) at that sequence (flushDeadLetters). A chunk
// whose append failed, or whose success was not yet written, is appended
// again later (at the next write, or when a leader opens the share
// partition after a failover) with the same producer and sequences: the
// partition answers a duplicate, and nothing lands twice.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/cluster"
	"github.com/sluice/sluice/group/share"
	"github.com/sluice/sluice/record"
	"github.com/sluice/sluice/replication"
	"github.com/sluice/sluice/sharecoord"
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

// dlqAppendTimeout bounds one dead-letter write.
const dlqAppendTimeout = 10 * time.Second

// dlqStateOf returns a copy of k's dead-letter bookkeeping, nil when
// none.
func (s *Server) dlqStateOf(k share.Key) *sharecoord.DLQState {
	s.share.dlqMu.Lock()
	defer s.share.dlqMu.Unlock()
	return s.share.dlq[k].Clone()
}

// setDLQState records k's dead-letter bookkeeping (nil forgets it).
func (s *Server) setDLQState(k share.Key, d *sharecoord.DLQState) {
	s.share.dlqMu.Lock()
	defer s.share.dlqMu.Unlock()
	if d == nil {
		delete(s.share.dlq, k)
		return
	}
	if s.share.dlq == nil {
		s.share.dlq = map[share.Key]*sharecoord.DLQState{}
	}
	s.share.dlq[k] = d.Clone()
}

// takeDeadLetters moves the dead letters pending in p into a new pending
// chunk of a copy of k's bookkeeping, to be written with the state that
// archives them (nil: none kept), and returns the letters it moved (to
// give back to p when that write fails). Without a dead-letter topic the
// letters are dropped. REQUIRES: the share partition's lock held.
func (s *Server) takeDeadLetters(k share.Key, p *share.Partition) (*sharecoord.DLQState, []share.DeadLetter, error) {
	d := s.dlqStateOf(k)
	dead := p.TakeDeadLetters()
	if len(dead) == 0 || s.shareDataConfig(k.Group).DLQTopic == "" {
		return d, nil, nil
	}
	if d == nil {
		pid, err := s.pids.allocate()
		if err != nil {
			p.RequeueDeadLetters(dead)
			return nil, nil, fmt.Errorf("server: a producer id for dead letters: %w", err)
		}
		d = &sharecoord.DLQState{ProducerID: pid}
	}
	d.Pending = append(d.Pending, sharecoord.DLQChunk{BaseSeq: d.NextSeq, Letters: dead})
	d.NextSeq = seqAdd(d.NextSeq, len(dead))
	return d, dead, nil
}

// seqAdd is Kafka's DefaultRecordBatch.incrementSequence.
func seqAdd(seq int32, n int) int32 {
	if int64(seq)+int64(n) > math.MaxInt32 {
		return int32(int64(seq) + int64(n) - math.MaxInt32 - 1)
	}
	return seq + int32(n)
}

// flushDeadLetters appends k's pending dead-letter chunks, in order, to
// the group's dead-letter topic; a chunk appended (or answered as a
// duplicate) leaves the bookkeeping, the first failure stops it (what is
// left is appended again later). Serialized per share partition by the
// caller (the share partition's lock, or a partition not published yet:
// two concurrent flushes append a chunk twice, the second a duplicate).
func (s *Server) flushDeadLetters(ctx context.Context, k share.Key) {
	d := s.dlqStateOf(k)
	if d == nil || len(d.Pending) == 0 {
		return
	}
	cfg := s.shareDataConfig(k.Group)
	for len(d.Pending) > 0 {
		ch := d.Pending[0]
		if cfg.DLQTopic != "" {
			if err := s.appendDeadLetters(ctx, k, cfg, ch.Letters, d.ProducerID, d.ProducerEpoch, ch.BaseSeq); err != nil {
				s.log.Warn("server: dead letters not written yet", "group", k.Group, "partition", k.Partition, "records", len(ch.Letters), "err", err)
				break
			}
		}
		d.Pending = d.Pending[1:]
	}
	s.setDLQState(k, d)
}

// appendDeadLetters appends dead as one idempotent batch of producer pid
// (epoch, first sequence seq) to the group's dead-letter partition of
// k, acks=all; a retry of the same batch is answered as a duplicate and
// writes nothing.
func (s *Server) appendDeadLetters(ctx context.Context, k share.Key, cfg ShareGroupConfig, dead []share.DeadLetter, pid int64, epoch int16, seq int32) error {
	srcName := s.lookup.topicNameByID(k.Topic)
	if srcName == "" {
		return nil // the source topic is gone: nothing to name
	}
	// The cluster's metadata: the dead-letter partition may be led by
	// another broker, or have no replica here at all.
	parts := s.md.partitions(cfg.DLQTopic)
	if len(parts) == 0 && s.currentConfig().GroupShare.DLQAutoCreateTopics {
		if err := s.autoCreateTopic(cfg.DLQTopic); err != nil && !errors.Is(err, cluster.ErrTopicExists) {
			return fmt.Errorf("server: creating dead-letter topic %s: %w", cfg.DLQTopic, err)
		}
		if parts = s.md.partitions(cfg.DLQTopic); len(parts) == 0 {
			// Created, not in the metadata yet: appended at the next try.
			return fmt.Errorf("server: dead-letter topic %s is being created", cfg.DLQTopic)
		}
	}
	if len(parts) == 0 {
		s.share.dlqSkipped.Add(int64(len(dead)))
		s.log.Warn("server: share group dead-letter topic missing, dead letters skipped",
			"group", k.Group, "topic", cfg.DLQTopic, "records", len(dead))
		return nil
	}
	dstIndex := k.Partition % int32(len(parts))
	leader := parts[dstIndex].Leader
	if leader < 0 {
		return fmt.Errorf("server: dead-letter partition %s-%d has no leader", cfg.DLQTopic, dstIndex)
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
	batch := record.AppendBatch(nil, record.BatchOptions{ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq}, recs)
	actx, cancel := context.WithTimeout(ctx, dlqAppendTimeout)
	defer cancel()
	if leader == s.nodeID {
		dst := s.rm.Partition(cfg.DLQTopic, dstIndex)
		if dst == nil || !dst.IsLeader() {
			return fmt.Errorf("server: dead letters to %s-%d: %w", cfg.DLQTopic, dstIndex, replication.ErrNotLeader)
		}
		if _, err := dst.Partition.Append(actx, batch, -1); err != nil {
			return fmt.Errorf("server: dead letters to %s-%d: %w", cfg.DLQTopic, dstIndex, err)
		}
	} else if err := s.produceDeadLetters(actx, leader, cfg.DLQTopic, dstIndex, batch); err != nil {
		return err
	}
	s.share.dlqWritten.Add(int64(len(recs)))
	return nil
}

// produceDeadLetters sends batch to the leader of topic-partition, another
// broker, as a Produce with acks=all over the inter-broker listener (the
// persister's connections, share_persister.go). The batch keeps its
// producer id and sequence, so the leader answers a batch it already has
// (a retry after a failover) as a duplicate, without writing it again.
func (s *Server) produceDeadLetters(ctx context.Context, leader int32, topic string, partition int32, batch []byte) error {
	c, err := s.share.persister.conn(leader)
	if err != nil {
		return fmt.Errorf("server: dead letters to %s-%d: %w", topic, partition, err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Version = 9
	req.Acks = -1
	req.TimeoutMillis = int32(dlqAppendTimeout / time.Millisecond)
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := c.Request(ctx, req)
	if err != nil {
		if ctx.Err() == nil {
			s.share.persister.drop(c) // redial next time
		}
		return fmt.Errorf("server: dead letters to %s-%d on broker %d: %w", topic, partition, leader, err)
	}
	r := resp.(*kmsg.ProduceResponse)
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		return fmt.Errorf("server: dead letters to %s-%d on broker %d: %d topics answered", topic, partition, leader, len(r.Topics))
	}
	switch code := r.Topics[0].Partitions[0].ErrorCode; code {
	case 0, kerr.DuplicateSequenceNumber.Code:
		return nil
	default:
		return fmt.Errorf("server: dead letters to %s-%d on broker %d: %w", topic, partition, leader, kerr.ErrorForCode(code))
	}
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
