package group

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/internal/errcode"
	"github.com/sluice/sluice/metastore"
)

// OffsetDelete (key 47), version 0 (KIP-496).
//
// Deletes committed offsets of a group. In an Empty group any offset may go;
// in a consumer group with members, offsets of topics a member subscribes
// to answer GROUP_SUBSCRIBED_TO_TOPIC; a non-consumer group with members
// answers NON_EMPTY_GROUP. A consumer group (KIP-848) answers
// GROUP_SUBSCRIBED_TO_TOPIC for the topics its members subscribe to. An
// Empty group left without offsets is removed, as Kafka does.

func (c *Coordinator) offsetDelete(req *kmsg.OffsetDeleteRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	errs, top := c.deleteOffsets(req)
	resp.ErrorCode = errcode.Code(top)
	if top != nil {
		return resp
	}
	for i, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for j, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, errcode.Code(errs[i][j])
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// deleteOffsets returns the per-partition errors, indexed like req.Topics,
// and the top-level error.
func (c *Coordinator) deleteOffsets(req *kmsg.OffsetDeleteRequest) ([][]error, error) {
	if err := c.validateGroup(req.Group); err != nil {
		return nil, err
	}
	if err := c.notShareGroup(req.Group); err != nil {
		return nil, err
	}
	g := c.getGroup(req.Group, false)
	if g == nil {
		return nil, errGroupIDNotFound
	}
	g.mu.Lock()
	errs, dead, top := c.deleteOffsetsLocked(g, req.Topics)
	g.mu.Unlock()
	if dead {
		c.forget(g)
	}
	return errs, top
}

// deleteOffsetsLocked deletes the offsets of topics from g and returns the
// per-partition errors, whether g died (Empty with nothing left) and the
// top-level error.
// REQUIRES: g.mu held.
func (c *Coordinator) deleteOffsetsLocked(g *group, topics []kmsg.OffsetDeleteRequestTopic) ([][]error, bool, error) {
	switch g.state {
	case stateDead:
		return nil, false, errGroupIDNotFound
	case stateEmpty:
	default:
		if g.protocolType != consumerProtocolType {
			return nil, false, errNonEmptyGroup
		}
	}
	// A consumer group's (KIP-848) offsets sit in a classic group without
	// members: its members' subscriptions, by name or resolved regex, are
	// the consumer group's (Kafka's ConsumerGroup.isSubscribedToTopic).
	consumerSub := c.consumerSubscribed(g.name)
	errs := make([][]error, len(topics))
	var tps []metastore.TopicPartition
	for i, t := range topics {
		errs[i] = make([]error, len(t.Partitions))
		subscribed := g.state != stateEmpty && g.isSubscribed(t.Topic)
		if consumerSub != nil {
			subscribed = consumerSub(t.Topic)
		}
		for j, p := range t.Partitions {
			if subscribed {
				errs[i][j] = errGroupSubscribedToTopic
				continue
			}
			tps = append(tps, metastore.TopicPartition{Topic: t.Topic, Partition: p.Partition})
		}
	}
	if err := c.persistDeletes(g.name, tps); err != nil {
		return nil, false, err
	}
	// As Kafka's GroupMetadata.removeOffsets: the partitions' pending
	// transactional offsets go too.
	var pendKeys []metastore.PendingKey
	for pid, m := range g.pendingTxn {
		for _, tp := range tps {
			if _, ok := m[tp]; ok {
				pendKeys = append(pendKeys, metastore.PendingKey{ProducerID: pid, TopicPartition: tp})
			}
		}
	}
	if err := c.store.UpdateOffsets(g.name, metastore.OffsetsUpdate{DeleteCommit: tps, DeletePending: pendKeys}); err != nil {
		c.log.Warn("group: delete offsets", "group", g.name, "err", err)
		return nil, false, storeErr(err)
	}
	for _, tp := range tps {
		delete(g.offsets, tp)
	}
	g.dropPendingLocked(tps)
	if g.state == stateEmpty && len(g.offsets) == 0 && len(g.pendingTxn) == 0 {
		return errs, c.killLocked(g) == nil, nil
	}
	return errs, false, nil
}
