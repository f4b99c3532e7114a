package group

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/internal/errcode"
	"github.com/sluice/sluice/metastore"
)

// OffsetCommit (key 8), versions 1-9.
//
//	v1     member id and generation; a commit timestamp per partition
//	       (-1: the broker's clock), kept as the offset's commit time
//	v2-v4  retention time: an explicit expiry (-1: the broker's retention)
//	v3     throttle time
//	v6     leader epoch per partition
//	v7     group.instance.id (KIP-345)
//	v8     flexible
//	v9     (KIP-848 epochs; classic groups treat it as v8)
//
// A member commits with its member id and generation, checked as Kafka does
// (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID,
// REBALANCE_IN_PROGRESS while CompletingRebalance). A consumer outside group
// management commits with generation -1 and an empty member id ("simple"
// commits), allowed while the group has no members. Offsets are synced to
// the metastore before the answer.

func (c *Coordinator) offsetCommit(ctx context.Context, req *kmsg.OffsetCommitRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	errs := c.commit(ctx, req)
	for i, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for j, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode = errcode.Code(errs[i][j])
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// commit validates and stores one OffsetCommit (Kafka's handleCommitOffsets)
// and returns the error of each partition (nil: committed), indexed like
// req.Topics.
func (c *Coordinator) commit(ctx context.Context, req *kmsg.OffsetCommitRequest) [][]error {
	errs := make([][]error, len(req.Topics))
	for i, t := range req.Topics {
		errs[i] = make([]error, len(t.Partitions))
	}
	failAll := func(err error) [][]error {
		for _, es := range errs {
			for j := range es {
				es[j] = err
			}
		}
		return errs
	}
	if err := c.validateGroup(req.Group); err != nil {
		return failAll(err)
	}
	isConsumer, err := c.validateConsumerCommit(req.Group, req.MemberID, req.InstanceID, req.Generation, req.Version, false)
	if err != nil {
		return failAll(err)
	}
	g := c.getGroup(req.Group, false)
	if isConsumer && g == nil {
		// A consumer group's offsets live in a memberless classic group.
		g = c.getGroup(req.Group, true)
	}
	if g == nil {
		if req.Generation >= 0 {
			// A member of a group we do not know, or of a past generation.
			return failAll(errIllegalGeneration)
		}
		// Not using group management: the group exists to hold offsets.
		if g = c.getGroup(req.Group, true); g == nil {
			return failAll(errCoordinatorNotAvailable)
		}
	}
	var instanceID *string
	if req.Version >= 7 {
		instanceID = req.InstanceID
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if isConsumer {
		if g.state == stateDead {
			return failAll(errCoordinatorNotAvailable)
		}
	} else if err := g.validateCommitLocked(req.Generation, req.MemberID, instanceID); err != nil {
		return failAll(err)
	}
	switch g.state {
	case stateCompletingRebalance:
		// The member has this generation's JoinGroup answer but not its
		// assignment yet.
		return failAll(errRebalanceInProgress)
	case stateStable, statePreparingRebalance:
		// Commits stay allowed while preparing: the member learns of the
		// rebalance from its heartbeat.
		if m := g.members[req.MemberID]; m != nil {
			c.scheduleHeartbeatLocked(g, m, m.sessionTimeout)
		}
	}

	now := c.clock.Now()
	var expire time.Time
	if req.Version <= 4 && req.RetentionTimeMillis >= 0 {
		expire = now.Add(time.Duration(req.RetentionTimeMillis) * time.Millisecond)
	}
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
			if req.Version >= 6 {
				epoch = p.LeaderEpoch
			}
			commitTime := now
			if req.Version == 1 && p.Timestamp != -1 {
				// Kafka's createOffsetAndMetadata: any other value is
				// the client's own commit time, expiry counted from it.
				commitTime = time.UnixMilli(p.Timestamp)
			}
			offsets[metastore.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = metastore.CommittedOffset{
				Offset: p.Offset, LeaderEpoch: epoch, Metadata: md, CommitTime: commitTime, ExpireTime: expire,
			}
		}
	}
	// The commit is durable once __consumer_offsets has it; the metastore
	// then materializes it.
	if err := c.persist(ctx, g.name, offsets, nil); err != nil {
		return failRest(errs, err)
	}
	// Offsets committed in open transactions before this commit are older
	// in log order: a commit of their transaction must not undo this one.
	var superseded []metastore.PendingTxnOffset
	for tp := range offsets {
		superseded = append(superseded, g.supersededLocked(tp, -1, -1)...)
	}
	err = nil
	if len(superseded) == 0 {
		err = c.store.CommitOffsets(g.name, offsets)
	} else {
		err = c.store.UpdateOffsets(g.name, metastore.OffsetsUpdate{Commit: offsets, PutPending: superseded})
	}
	if err != nil {
		c.log.Warn("group: commit offsets", "group", g.name, "err", err)
		return failRest(errs, storeErr(err))
	}
	for tp, o := range offsets {
		g.offsets[tp] = o
	}
	g.addPendingLocked(superseded)
	return errs
}

// validateCommitLocked is Kafka's validateOffsetCommit: a commit naming a
// member (generation >= 0, a member id or an instance id) must come from a
// current member of the current generation; an anonymous one is accepted
// only while the group has no members.
// REQUIRES: g.mu held.
// failRest sets err for every partition of errs that has no error yet and
// returns errs.
func failRest(errs [][]error, err error) [][]error {
	for _, es := range errs {
		for j := range es {
			if es[j] == nil {
				es[j] = err
			}
		}
	}
	return errs
}

func (g *group) validateCommitLocked(generation int32, memberID string, instanceID *string) error {
	if g.state == stateDead {
		return errCoordinatorNotAvailable
	}
	if generation >= 0 || memberID != "" || instanceID != nil {
		if err := g.validateMember(memberID, instanceID); err != nil {
			return err
		}
		if generation != g.generation {
			return errIllegalGeneration
		}
		return nil
	}
	if g.state != stateEmpty {
		return errUnknownMemberID
	}
	return nil
}
