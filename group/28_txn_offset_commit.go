package group

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/internal/errcode"
	"github.com/sluice/sluice/metastore"
)

// TxnOffsetCommit (key 28), versions 0-3 (KIP-98, KIP-447).
//
//	v1  same as v0
//	v2  committed leader epoch per partition
//	v3  flexible; generation id, member id and group instance id
//	    (KIP-447), checked as Kafka's doTxnCommitOffsets does
//
// A transactional producer commits offsets for a group inside its
// transaction: they stay pending per (group, producer id) until the
// transaction's marker reaches the group's offsets partition
// (HandleTxnCompletion), invisible to OffsetFetch until a commit. The group
// need not exist (a producer outside group management: generation -1, no
// member id); it is created Empty, as Kafka does. Unlike OffsetCommit there
// is no state check: a member of the current generation may commit while
// the group rebalances. The transactional id was authorized by the server.
// The producer's epoch: the __consumer_offsets log refuses an epoch older
// than the producer's (txn.go), and a fenced producer gets
// INVALID_PRODUCER_EPOCH, at every version, as Kafka answers (the log's
// error passes through GroupMetadataManager unmapped; Java clients and
// librdkafka treat it as PRODUCER_FENCED).

func (c *Coordinator) txnOffsetCommit(ctx context.Context, req *kmsg.TxnOffsetCommitRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	errs := c.txnCommit(ctx, req)
	for i, t := range req.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for j, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, errcode.Code(errs[i][j])
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// txnCommit validates and stores one TxnOffsetCommit and returns the error
// of each partition (nil: pending), indexed like req.Topics.
func (c *Coordinator) txnCommit(ctx context.Context, req *kmsg.TxnOffsetCommitRequest) [][]error {
	errs := make([][]error, len(req.Topics))
	for i, t := range req.Topics {
		errs[i] = make([]error, len(t.Partitions))
	}
	setAll := func(err error) [][]error { return failRest(errs, err) }
	if err := c.validateGroup(req.Group); err != nil {
		return setAll(err)
	}
	if req.ProducerID < 0 {
		return setAll(errInvalidRequest)
	}
	generation, memberID, instanceID := int32(-1), "", (*string)(nil)
	if req.Version >= 3 {
		generation, memberID, instanceID = req.Generation, req.MemberID, req.InstanceID
	}
	// A consumer group (KIP-848) checks the member epoch; a stale one is
	// ILLEGAL_GENERATION here, as Kafka's validateTransactionalOffsetCommit.
	isConsumer, err := c.validateConsumerCommit(req.Group, memberID, instanceID, generation, req.Version, true)
	if errors.Is(err, errcode.ErrStaleMemberEpoch) {
		err = fmt.Errorf("%w: %w", errIllegalGeneration, err)
	}
	if err != nil {
		return setAll(err)
	}
	g := c.getGroup(req.Group, true)
	if g == nil {
		return setAll(errCoordinatorNotAvailable)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case isConsumer:
		if g.state == stateDead {
			return setAll(errCoordinatorNotAvailable)
		}
	case g.state == stateDead:
		return setAll(errCoordinatorNotAvailable)
	case g.isStaticMemberFenced(instanceID, memberID):
		return setAll(errFencedInstanceID)
	case memberID != "" && g.members[memberID] == nil:
		return setAll(errUnknownMemberID)
	case generation >= 0 && generation != g.generation:
		return setAll(errIllegalGeneration)
	}

	now := c.clock.Now()
	offsets := make(map[metastore.TopicPartition]metastore.CommittedOffset)
	for i, t := range req.Topics {
		for j, p := range t.Partitions {
			var md string
			if p.Metadata != nil {
				md = *p.Metadata
			}
			if len(md) > c.opts.MaxMetadataSize {
				errs[i][j] = errOffsetMetadataTooLarge
				continue
			}
			epoch := int32(-1)
			if req.Version >= 2 {
				epoch = p.LeaderEpoch
			}
			offsets[metastore.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = metastore.CommittedOffset{
				Offset: p.Offset, LeaderEpoch: epoch, Metadata: md, CommitTime: now,
			}
		}
	}
	if len(offsets) == 0 {
		return errs
	}
	// Index the group for the producer before the offsets become pending,
	// so a marker that raced the append still finds them.
	c.indexTxn(req.ProducerID, g.name)
	// Durable once __consumer_offsets has the transactional batch; its
	// offset orders it among the group's writes.
	pos, err := c.persistTxn(ctx, g.name, req.ProducerID, req.ProducerEpoch, offsets)
	if err != nil {
		return setAll(err)
	}
	put := make([]metastore.PendingTxnOffset, 0, len(offsets))
	for tp, o := range offsets {
		put = append(put, metastore.PendingTxnOffset{
			ProducerID: req.ProducerID, ProducerEpoch: req.ProducerEpoch,
			TopicPartition: tp, Offset: o, Position: pos,
		})
	}
	if err := c.store.UpdateOffsets(g.name, metastore.OffsetsUpdate{PutPending: put}); err != nil {
		c.log.Warn("group: store pending transactional offsets", "group", g.name, "err", err)
		return setAll(storeErr(err))
	}
	g.addPendingLocked(put)
	return errs
}

// persistTxn makes a transactional commit durable before it is applied,
// through the PersistTxn hook. It returns the position (the log offset of
// the batch), or the hook's error marked for errcode.Code.
func (c *Coordinator) persistTxn(ctx context.Context, name string, producerID int64, epoch int16, offsets map[metastore.TopicPartition]metastore.CommittedOffset) (int64, error) {
	pos, err := c.opts.PersistTxn(ctx, name, producerID, epoch, offsets)
	if err != nil {
		c.log.Warn("group: persist transactional offsets", "group", name, "producer", producerID, "err", err)
		// A fenced producer (the log knows a newer epoch) gets
		// INVALID_PRODUCER_EPOCH at every version, as from Kafka.
		return 0, appendErr(err)
	}
	return pos, nil
}
