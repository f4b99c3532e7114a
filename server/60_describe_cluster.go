package server

// DescribeCluster (key 60), served v0-v1.
//
//	v0: cluster id, controller id, brokers, authorized operations
//	v1: endpoint type: 1 brokers, 2 controllers. A Sluice broker is its own
//	    controller in single-node mode, so both name this broker.
//
// Sluice has no ACLs: authorized operations stay unset (INT32_MIN).

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleDescribeCluster(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.DescribeClusterRequest)
	resp := r.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.EndpointType = r.EndpointType
	if resp.EndpointType == 0 {
		resp.EndpointType = 1
	}
	resp.ClusterID = s.clusterID
	resp.ControllerID = s.nodeID
	host, port := s.advertised()
	b := kmsg.NewDescribeClusterResponseBroker()
	b.NodeID, b.Host, b.Port = s.nodeID, host, port
	if s.cfg.RackID != "" {
		rack := s.cfg.RackID
		b.Rack = &rack
	}
	resp.Brokers = []kmsg.DescribeClusterResponseBroker{b}
	if s.cm != nil {
		s.cm.describeCluster(resp)
	}
	return kresp(resp), nil
}
