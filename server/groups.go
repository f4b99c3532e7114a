package server

import (
	"context"
	"fmt"
	"net"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/group"
)

// handleGroup answers the consumer-group APIs through the group coordinator
// (package group), which owns their versions, semantics and persistence.
// JoinGroup and SyncGroup block this connection's handler until the
// rebalance reaches them, as a Kafka broker mutes a connection while a
// request is outstanding; the wait ends if the client goes away.
// OffsetDelete answers UNKNOWN_TOPIC_OR_PARTITION for topics and
// partitions the cluster does not have, as Kafka does, without asking the
// coordinator. FindCoordinator goes to the control plane: on a single node the group
// coordinator names this broker; in cluster mode the leader of the group's
// __consumer_offsets partition is named (offsets_topic_find.go). Either way
// the group's state lives in __consumer_offsets, which a single node
// creates for its first group request.
func handleGroup(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	return handleGroupWith(s, rc, req, nil)
}

// handleGroupWith is handleGroup; mayDescribe, when set, tells the
// coordinator which topics the requester may Describe (regex
// subscriptions of ConsumerGroupHeartbeat).
func handleGroupWith(s *Server, rc *reqCtx, req kmsg.Request, mayDescribe func(topic string) bool) (*response, error) {
	ctx, host := context.Background(), ""
	if rc.conn != nil {
		ctx = rc.conn.ctx
		if h, _, err := net.SplitHostPort(rc.conn.nc.RemoteAddr().String()); err == nil {
			host = h
		}
	}
	ctx = group.WithClient(ctx, rc.clientID, "/"+host)
	if mayDescribe != nil {
		ctx = group.WithTopicAuthorizer(ctx, mayDescribe)
	}
	refused, after := s.az.authorizeGroupRequest(rc, req)
	if refused != nil {
		return kresp(refused), nil
	}
	var resp kmsg.Response
	var err error
	switch req := req.(type) {
	case *kmsg.FindCoordinatorRequest:
		resp, err = s.route.findCoordinator(ctx, req)
	case *kmsg.ListGroupsRequest:
		resp, err = s.groups.Handle(ctx, req)
	case *kmsg.OffsetDeleteRequest:
		unknown := s.stripUnknownPartitions(req)
		s.localOffsetsReady(ctx)
		resp, err = s.groups.Handle(ctx, req)
		if err == nil {
			mergeOffsetDeleteErrors(resp.(*kmsg.OffsetDeleteResponse), unknown)
		}
	default:
		// A client may skip FindCoordinator on a single node, where the
		// broker it talks to is the coordinator of every group.
		s.localOffsetsReady(ctx)
		resp, err = s.groups.Handle(ctx, req)
	}
	if err != nil {
		// A version outside the table cannot reach here (decodeRequest
		// checks it); a cancelled wait means the client is gone.
		return nil, fmt.Errorf("server: %s: %w", kmsg.NameForKey(req.Key()), err)
	}
	if after != nil {
		after(resp)
	}
	if dg, ok := resp.(*kmsg.DescribeGroupsResponse); ok {
		s.az.groupAuthorizedOps(rc, req.(*kmsg.DescribeGroupsRequest), dg)
	}
	if fc, ok := resp.(*kmsg.FindCoordinatorResponse); ok {
		s.coordinatorAddrs(rc, fc)
	}
	return kresp(resp), nil
}

// coordinatorAddrs rewrites the coordinators' addresses in fc to theirs on
// the listener the client used.
func (s *Server) coordinatorAddrs(rc *reqCtx, fc *kmsg.FindCoordinatorResponse) {
	addr := func(id int32, host string, port int32) (string, int32) {
		for _, b := range s.md.brokers() {
			if b.ID == id {
				return rc.addrOf(s.nodeID, b)
			}
		}
		return host, port
	}
	if fc.NodeID >= 0 {
		fc.Host, fc.Port = addr(fc.NodeID, fc.Host, fc.Port)
	}
	for i := range fc.Coordinators {
		if c := &fc.Coordinators[i]; c.NodeID >= 0 {
			c.Host, c.Port = addr(c.NodeID, c.Host, c.Port)
		}
	}
}

// stripUnknownPartitions removes from an OffsetDelete request the topics
// and partitions the cluster does not have and returns their
// UNKNOWN_TOPIC_OR_PARTITION answers, as Kafka's handleOffsetDeleteRequest
// does before the coordinator sees the request (after the topics the
// principal may not Read were taken out).
func (s *Server) stripUnknownPartitions(r *kmsg.OffsetDeleteRequest) []kmsg.OffsetDeleteResponseTopic {
	var unknown []kmsg.OffsetDeleteResponseTopic
	code := errorCode(errUnknownTopicOrPartition)
	kept := r.Topics[:0:0]
	for _, t := range r.Topics {
		parts := s.md.partitions(t.Topic)
		known := make(map[int32]bool, len(parts))
		for _, pi := range parts {
			known[pi.Partition] = true
		}
		var valid []kmsg.OffsetDeleteRequestTopicPartition
		var bad []kmsg.OffsetDeleteResponseTopicPartition
		for _, p := range t.Partitions {
			if known[p.Partition] {
				valid = append(valid, p)
			} else {
				bad = append(bad, kmsg.OffsetDeleteResponseTopicPartition{Partition: p.Partition, ErrorCode: code})
			}
		}
		if len(bad) > 0 {
			rt := kmsg.NewOffsetDeleteResponseTopic()
			rt.Topic, rt.Partitions = t.Topic, bad
			unknown = append(unknown, rt)
		}
		if len(valid) > 0 {
			t.Partitions = valid
			kept = append(kept, t)
		}
	}
	r.Topics = kept
	return unknown
}

// mergeOffsetDeleteErrors adds errs to the coordinator's answer resp, into
// the entry of the same topic when there is one, unless resp carries a
// group-level error (Kafka's OffsetDeleteResponse.Builder.merge).
func mergeOffsetDeleteErrors(resp *kmsg.OffsetDeleteResponse, errs []kmsg.OffsetDeleteResponseTopic) {
	if resp.ErrorCode != 0 {
		return
	}
	if len(errs) == 0 {
		return
	}
	at := make(map[string]int, len(resp.Topics))
	for i, t := range resp.Topics {
		at[t.Topic] = i
	}
	for _, e := range errs {
		if i, ok := at[e.Topic]; ok {
			resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, e.Partitions...)
			continue
		}
		resp.Topics = append(resp.Topics, e)
	}
}
