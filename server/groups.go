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
// FindCoordinator goes to the control plane: on a single node the group
// coordinator names this broker; in cluster mode the leader of the group's
// __consumer_offsets partition is named (offsets_topic_find.go). Either way
// the group's state lives in __consumer_offsets, which a single node
// creates for its first group request.
func handleGroup(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	ctx, host := context.Background(), ""
	if rc.conn != nil {
		ctx = rc.conn.ctx
		if h, _, err := net.SplitHostPort(rc.conn.nc.RemoteAddr().String()); err == nil {
			host = h
		}
	}
	ctx = group.WithClient(ctx, rc.clientID, "/"+host)
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
