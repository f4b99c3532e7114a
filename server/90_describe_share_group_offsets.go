package server

// DescribeShareGroupOffsets (key 90), versions 0-1 (KIP-932; v1 adds Lag,
// KIP-1226). Each partition's share-partition start offset (SPSO) and lag,
// read from this broker's share partitions (in memory, else their
// snapshot in __share_group_state), as kfake and Kafka 4.2:
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
//     acknowledged or archived.
//
// Served with 76-79 under group.share.enable. In cluster mode only the
// share partitions this broker holds are seen (the persister APIs between
// brokers are not served yet).

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/group/share"
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
		snaps, err := s.shareSnapshots(ctx, rg.GroupID)
		if err != nil {
			g.ErrorCode = errorCode(err)
			resp.Groups = append(resp.Groups, g)
			continue
		}
		type ask struct {
			topic string
			parts []int32
			all   bool
		}
		var asks []ask
		if rg.Topics == nil {
			byTopic := map[[16]byte][]int32{}
			for k := range snaps {
				byTopic[k.Topic] = append(byTopic[k.Topic], k.Partition)
			}
			for id, parts := range byTopic {
				t := s.rm.TopicByID(id)
				if t == nil {
					continue
				}
				slices.Sort(parts)
				asks = append(asks, ask{t.Name, parts, true})
			}
			slices.SortFunc(asks, func(a, b ask) int {
				if a.topic < b.topic {
					return -1
				}
				if a.topic > b.topic {
					return 1
				}
				return 0
			})
		} else {
			for _, rt := range rg.Topics {
				asks = append(asks, ask{topic: rt.Topic, parts: rt.Partitions})
			}
		}
		for _, a := range asks {
			denied := !s.az.allowed(rc, acl.OpDescribe, acl.ResourceTopic, a.topic)
			if denied && a.all {
				continue
			}
			rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
			rt.Topic = a.topic
			t := s.rm.Topic(a.topic)
			if t != nil && !denied {
				rt.TopicID = t.ID
			}
			for _, p := range a.parts {
				rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
				rp.Partition, rp.StartOffset, rp.Lag = p, -1, -1
				switch {
				case denied:
					rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				case t == nil || p < 0 || int(p) >= len(t.Parts):
					// No such partition: no share state, as Kafka answers.
				default:
					snap, ok := snaps[share.Key{Group: rg.GroupID, Topic: t.ID, Partition: p}]
					if !ok {
						break
					}
					rp.StartOffset = snap.StartOffset
					if lp := t.Parts[p]; lp != nil {
						rp.LeaderEpoch = lp.LeaderEpoch()
						rp.Lag = shareLag(snap, lp.HighWatermark())
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

// shareLag is KIP-1226's lag of a share partition: the records from its
// start offset to hwm not yet acknowledged or archived.
func shareLag(snap share.Snapshot, hwm int64) int64 {
	done := int64(0)
	for _, b := range snap.Batches {
		if b.DeliveryState != share.Acknowledged && b.DeliveryState != share.Archived {
			continue
		}
		first, last := max(b.First, snap.StartOffset), min(b.Last, hwm-1)
		if last >= first {
			done += last - first + 1
		}
	}
	return max(0, hwm-snap.StartOffset-done)
}

// shareSnapshots returns the state of each of group's share partitions
// this broker holds: the live partition's where it is in memory, else the
// one persisted in __share_group_state.
func (s *Server) shareSnapshots(ctx context.Context, group string) (map[share.Key]share.Snapshot, error) {
	out := map[share.Key]share.Snapshot{}
	if s.share.coord != nil {
		for _, k := range s.share.coord.Keys(group) {
			snap, ok, err := s.share.coord.Read(ctx, k)
			if err != nil {
				return nil, err
			}
			if ok {
				out[k] = snap
			}
		}
	}
	s.share.parts.Each(group, func(k share.Key, h *share.Held) {
		h.Lock()
		out[k] = h.P.Snapshot()
		h.Unlock()
	})
	return out, nil
}
