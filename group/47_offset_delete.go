package group

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/metastore"
)

// OffsetDelete (key 47), version 0 (KIP-496).
//
// Deletes committed offsets of a group. In an Empty group any offset may go;
// in a consumer group with members, offsets of topics a member subscribes
// to answer GROUP_SUBSCRIBED_TO_TOPIC; a non-consumer group with members
// answers NON_EMPTY_GROUP. An Empty group left without offsets is removed,
// as Kafka does.

func (c *Coordinator) offsetDelete(req *kmsg.OffsetDeleteRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	top, codes := c.deleteOffsets(req)
	resp.ErrorCode = top
	if top != 0 {
		return resp
	}
	for i, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for j, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, codes[i][j]
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// deleteOffsets returns the top-level code and per-partition codes indexed
// like req.Topics.
func (c *Coordinator) deleteOffsets(req *kmsg.OffsetDeleteRequest) (int16, [][]int16) {
	if code := c.validateGroup(req.Group); code != 0 {
		return code, nil
	}
	g := c.getGroup(req.Group, false)
	if g == nil {
		return errGroupIDNotFound, nil
	}
	g.mu.Lock()
	top, codes, dead := c.deleteOffsetsLocked(g, req.Topics)
	g.mu.Unlock()
	if dead {
		c.forget(g)
	}
	return top, codes
}

// REQUIRES: g.mu held.
func (c *Coordinator) deleteOffsetsLocked(g *group, topics []kmsg.OffsetDeleteRequestTopic) (int16, [][]int16, bool) {
	switch g.state {
	case stateDead:
		return errGroupIDNotFound, nil, false
	case stateEmpty:
	default:
		if g.protocolType != consumerProtocolType {
			return errNonEmptyGroup, nil, false
		}
	}
	codes := make([][]int16, len(topics))
	var tps []metastore.TopicPartition
	for i, t := range topics {
		codes[i] = make([]int16, len(t.Partitions))
		subscribed := g.state != stateEmpty && g.isSubscribed(t.Topic)
		for j, p := range t.Partitions {
			if subscribed {
				codes[i][j] = errGroupSubscribedToTopic
				continue
			}
			tps = append(tps, metastore.TopicPartition{Topic: t.Topic, Partition: p.Partition})
		}
	}
	if code := c.persistDeletes(g.name, tps); code != 0 {
		return code, nil, false
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
		return storeErrorCode(err), nil, false
	}
	for _, tp := range tps {
		delete(g.offsets, tp)
	}
	g.dropPendingLocked(tps)
	if g.state == stateEmpty && len(g.offsets) == 0 && len(g.pendingTxn) == 0 {
		return 0, codes, c.killLocked(g) == 0
	}
	return 0, codes, false
}
