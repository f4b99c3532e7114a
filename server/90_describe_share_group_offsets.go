package server

// DescribeShareGroupOffsets (key 90), versions 0-1 (KIP-932; v1 adds Lag,
// KIP-1226). Each partition's share-partition start offset (SPSO) and lag,
// read as Kafka 4.2's group coordinator does, with the persister's
// ReadShareGroupStateSummary from whichever share coordinator has each
// share partition (sharePersister.summaries; a copy in this broker's
// memory is as new and is used when there is one):
//
//   - Describe on the group, else GROUP_AUTHORIZATION_FAILED for it;
//     NOT_COORDINATOR when this broker is not the group's coordinator
//     (COORDINATOR_LOAD_IN_PROGRESS while its partition loads);
//   - Topics null: every topic the group has share state for, topics the
//     principal may not Describe left out silently; a named topic it may
//     not Describe is TOPIC_AUTHORIZATION_FAILED on each partition;
//   - a partition without share state (or of no topic) has start offset
//     and lag -1, without an error;
//   - Lag = high watermark - SPSO - the records between them already
//     acknowledged or archived (the summary's DeliveryCompleteCount); the
//     high watermark of a local replica, else its leader's (ListOffsets,
//     metrics_lag.go's cache, at most remoteEndTTL old); -1 when none
//     answers.
//
// Served with 76-79 under group.share.enable.

import (
	"context"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/group/share"
	"github.com/sluice/sluice/metastore"
)

const apiKeyDescribeShareGroupOffsets int16 = 90

func handleDescribeShareGroupOffsets(s *Server, rc *reqCtx, kreq kmsg.Request) (*response, error) {
	req := kreq.(*kmsg.DescribeShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	ctx := context.Background()
	if rc.conn != nil {
		ctx = rc.conn.ctx
	}
	for _, rg := range req.Groups {
		g := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		g.GroupID = rg.GroupID
		if !s.az.allowed(rc, acl.OpDescribe, acl.ResourceGroup, rg.GroupID) {
			g.ErrorCode = errorCode(errGroupAuthorization)
			resp.Groups = append(resp.Groups, g)
			continue
		}
		if owned, loading := s.offsets.Owns(rg.GroupID); !owned {
			g.ErrorCode = kerr.NotCoordinator.Code
			if loading {
				g.ErrorCode = kerr.CoordinatorLoadInProgress.Code
			}
			resp.Groups = append(resp.Groups, g)
			continue
		}
		type ask struct {
			topic string
			id    [16]byte
			known bool
			parts []int32
			all   bool
		}
		var asks []ask
		var keys []share.Key
		if rg.Topics == nil {
			found, err := s.groupShareKeys(ctx, rg.GroupID, [16]byte{})
			if err != nil {
				g.ErrorCode = errorCode(err)
				resp.Groups = append(resp.Groups, g)
				continue
			}
			byTopic := map[[16]byte][]int32{}
			for k := range found {
				byTopic[k.Topic] = append(byTopic[k.Topic], k.Partition)
			}
			for id, parts := range byTopic {
				name := s.lookup.topicNameByID(id)
				if name == "" {
					continue
				}
				slices.Sort(parts)
				asks = append(asks, ask{name, id, true, parts, true})
			}
			slices.SortFunc(asks, func(a, b ask) int { return strings.Compare(a.topic, b.topic) })
		} else {
			for _, rt := range rg.Topics {
				id, ok := s.md.topicID(rt.Topic)
				asks = append(asks, ask{topic: rt.Topic, id: id, known: ok, parts: rt.Partitions})
			}
		}
		for i, a := range asks {
			if !s.az.allowed(rc, acl.OpDescribe, acl.ResourceTopic, a.topic) {
				asks[i].known = false
				if a.all {
					asks[i].parts = nil
				}
				continue
			}
			n := int32(len(s.md.partitions(a.topic)))
			for _, p := range a.parts {
				if a.known && p >= 0 && p < n {
					keys = append(keys, share.Key{Group: rg.GroupID, Topic: a.id, Partition: p})
				}
			}
		}
		sums, err := s.share.persister.summaries(ctx, rg.GroupID, keys)
		if err != nil {
			g.ErrorCode = errorCode(err)
			resp.Groups = append(resp.Groups, g)
			continue
		}
		s.share.parts.Each(rg.GroupID, func(k share.Key, h *share.Held) {
			if old, ok := sums[k]; ok {
				h.Lock()
				sums[k] = summaryOf(h.P.Snapshot(), old.LeaderEpoch)
				h.Unlock()
			}
		})
		hwms := s.shareHighWatermarks(sums)
		for _, a := range asks {
			denied := !s.az.allowed(rc, acl.OpDescribe, acl.ResourceTopic, a.topic)
			if denied && a.all {
				continue
			}
			rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
			rt.Topic = a.topic
			if a.known && !denied {
				rt.TopicID = a.id
			}
			for _, p := range a.parts {
				rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
				rp.Partition, rp.StartOffset, rp.Lag = p, -1, -1
				if denied {
					rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				} else if sum, ok := sums[share.Key{Group: rg.GroupID, Topic: a.id, Partition: p}]; ok && a.known {
					// A partition without share state (or of no topic) has
					// none, as Kafka answers.
					rp.StartOffset, rp.LeaderEpoch = sum.StartOffset, sum.LeaderEpoch
					if hwm, ok := hwms[metastore.TopicPartition{Topic: a.topic, Partition: p}]; ok {
						rp.Lag = max(0, hwm-sum.StartOffset-sum.Complete)
					}
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			g.Topics = append(g.Topics, rt)
		}
		resp.Groups = append(resp.Groups, g)
	}
	return kresp(resp), nil
}

// shareDeliveryComplete is KIP-1226's DeliveryCompleteCount of a share
// partition: its offsets from the start offset on that are acknowledged
// or archived.
func shareDeliveryComplete(snap share.Snapshot) int64 {
	done := int64(0)
	for _, b := range snap.Batches {
		if b.DeliveryState != share.Acknowledged && b.DeliveryState != share.Archived {
			continue
		}
		if first := max(b.First, snap.StartOffset); b.Last >= first {
			done += b.Last - first + 1
		}
	}
	return done
}

// shareHighWatermarks returns the high watermark of the user partition of
// each of keys: a local replica's, else its leader's (ListOffsets through
// the metrics' cache of remote end offsets, metrics_lag.go). A partition
// whose leader does not answer is left out.
func (s *Server) shareHighWatermarks(keys map[share.Key]shareSummary) map[metastore.TopicPartition]int64 {
	out := map[metastore.TopicPartition]int64{}
	var remote []metastore.TopicPartition
	for k := range keys {
		name := s.lookup.topicNameByID(k.Topic)
		if name == "" {
			continue
		}
		tp := metastore.TopicPartition{Topic: name, Partition: k.Partition}
		if p := s.rm.Partition(name, k.Partition); p != nil && p.IsLeader() {
			out[tp] = p.HighWatermark()
			continue
		}
		remote = append(remote, tp)
	}
	if len(remote) > 0 {
		for tp, hw := range s.share.persister.ends.lookup(s, remote) {
			out[tp] = hw
		}
	}
	return out
}
