package group

import (
	"cmp"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/internal/errcode"
	"github.com/sluice/sluice/metastore"
)

// OffsetFetch (key 9), versions 1-9.
//
//	v2  a null topic list fetches every committed offset; top-level error
//	v3  throttle time
//	v5  leader epoch
//	v6  flexible
//	v7  require_stable (KIP-447): a partition with a pending transactional
//	    offset (of any producer) answers UNSTABLE_OFFSET_COMMIT, offset -1,
//	    so the consumer retries until the transaction ends. Without it the
//	    last committed offset is answered, as before.
//	v8  several groups per request, each with its own error
//	v9  member id and epoch (KIP-848), ignored for classic groups
//
// A partition without a committed offset answers offset -1, no error.

func (c *Coordinator) offsetFetch(req *kmsg.OffsetFetchRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	if req.Version >= 8 {
		for _, rg := range req.Groups {
			var topics []kmsg.OffsetFetchRequestTopic
			if rg.Topics != nil {
				topics = []kmsg.OffsetFetchRequestTopic{}
				for _, t := range rg.Topics {
					topics = append(topics, kmsg.OffsetFetchRequestTopic{Topic: t.Topic, Partitions: t.Partitions})
				}
			}
			var fetched []kmsg.OffsetFetchResponseTopic
			var err error
			if req.Version >= 9 {
				err = c.validateConsumerFetch(rg.Group, rg.MemberID, rg.MemberEpoch)
			}
			if err == nil {
				fetched, err = c.fetchOffsets(rg.Group, topics, req.RequireStable)
			}
			g := kmsg.NewOffsetFetchResponseGroup()
			g.Group, g.ErrorCode = rg.Group, errcode.Code(err)
			for _, ft := range fetched {
				gt := kmsg.NewOffsetFetchResponseGroupTopic()
				gt.Topic = ft.Topic
				for _, p := range ft.Partitions {
					gt.Partitions = append(gt.Partitions, kmsg.OffsetFetchResponseGroupTopicPartition{
						Partition: p.Partition, Offset: p.Offset, LeaderEpoch: p.LeaderEpoch,
						Metadata: p.Metadata, ErrorCode: p.ErrorCode,
					})
				}
				g.Topics = append(g.Topics, gt)
			}
			resp.Groups = append(resp.Groups, g)
		}
		return resp
	}
	topics := req.Topics
	if req.Version < 2 && topics == nil {
		topics = []kmsg.OffsetFetchRequestTopic{}
	}
	fetched, err := c.fetchOffsets(req.Group, topics, req.Version >= 7 && req.RequireStable)
	resp.Topics = fetched
	if req.Version >= 2 {
		resp.ErrorCode = errcode.Code(err)
	} else if err != nil {
		// v1 has no top-level error: put it on every partition.
		resp.Topics = nil
		for _, t := range req.Topics {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, unknownOffset(p, err))
			}
			resp.Topics = append(resp.Topics, rt)
		}
	}
	return resp
}

// unknownOffset is the answer for a partition without a committed offset,
// with err's code (nil: none).
func unknownOffset(partition int32, err error) kmsg.OffsetFetchResponseTopicPartition {
	p := kmsg.NewOffsetFetchResponseTopicPartition()
	p.Partition, p.Offset, p.LeaderEpoch, p.ErrorCode = partition, -1, -1, errcode.Code(err)
	empty := ""
	p.Metadata = &empty
	return p
}

// fetchOffsets returns the committed offsets
// of the requested partitions, or of every partition when topics is nil,
// sorted by topic and partition in that case. With requireStable, a
// partition with a pending transactional offset is UNSTABLE_OFFSET_COMMIT
// (Kafka's getOffsets: with every partition asked for, only those with a
// committed offset are listed, the unstable ones among them included), and
// the group-level error.
func (c *Coordinator) fetchOffsets(name string, topics []kmsg.OffsetFetchRequestTopic, requireStable bool) ([]kmsg.OffsetFetchResponseTopic, error) {
	if err := c.validateGroup(name); err != nil {
		return nil, err
	}
	if err := c.notShareGroup(name); err != nil {
		return nil, err
	}
	var offsets map[metastore.TopicPartition]metastore.CommittedOffset
	var unstable map[metastore.TopicPartition]bool
	if g := c.getGroup(name, false); g != nil {
		g.mu.Lock()
		if g.state != stateDead {
			offsets = make(map[metastore.TopicPartition]metastore.CommittedOffset, len(g.offsets))
			for tp, o := range g.offsets {
				offsets[tp] = o
			}
			if requireStable && len(g.pendingTxn) > 0 {
				unstable = make(map[metastore.TopicPartition]bool)
				for _, m := range g.pendingTxn {
					for tp := range m {
						unstable[tp] = true
					}
				}
			}
		}
		g.mu.Unlock()
	}
	answer := func(tp metastore.TopicPartition) kmsg.OffsetFetchResponseTopicPartition {
		if unstable[tp] {
			return unknownOffset(tp.Partition, errUnstableOffsetCommit)
		}
		o, ok := offsets[tp]
		if !ok {
			return unknownOffset(tp.Partition, nil)
		}
		p := kmsg.NewOffsetFetchResponseTopicPartition()
		md := o.Metadata
		p.Partition, p.Offset, p.LeaderEpoch, p.Metadata = tp.Partition, o.Offset, o.LeaderEpoch, &md
		return p
	}
	var out []kmsg.OffsetFetchResponseTopic
	if topics == nil {
		tps := make([]metastore.TopicPartition, 0, len(offsets))
		for tp := range offsets {
			tps = append(tps, tp)
		}
		slices.SortFunc(tps, func(a, b metastore.TopicPartition) int {
			return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
		})
		for _, tp := range tps {
			if len(out) == 0 || out[len(out)-1].Topic != tp.Topic {
				rt := kmsg.NewOffsetFetchResponseTopic()
				rt.Topic = tp.Topic
				out = append(out, rt)
			}
			out[len(out)-1].Partitions = append(out[len(out)-1].Partitions, answer(tp))
		}
		return out, nil
	}
	for _, t := range topics {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rt.Partitions = append(rt.Partitions, answer(metastore.TopicPartition{Topic: t.Topic, Partition: p}))
		}
		out = append(out, rt)
	}
	return out, nil
}
