package server

// DescribeCluster (key 60), served v0-v1.
//
//	v0: cluster id, controller id, brokers, authorized operations
//	v1: endpoint type: 1 brokers, 2 controllers. Both are answered with the
//	    live brokers (a ZooKeeper-mode controller is one of them; a
//	    single-node broker is its own controller).
//
// The brokers and the controller come from the control plane's view.
//
// As in Kafka (AuthHelper.computeDescribeClusterResponse), anyone may
// describe the cluster: Describe on the cluster only decides the authorized
// operations asked for, which are none (0) without it, and otherwise a bit
// per operation the principal may perform on the cluster
// (AuthHelper.authorizedOperations). Not asked for, they are INT32_MIN.

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
	if r.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = s.az.clusterAuthorizedOperations(rc)
	}
	resp.ClusterID = s.clusterID
	resp.ControllerID = s.md.controllerID()
	if resp.ControllerID < 0 {
		resp.ControllerID = s.nodeID // not known yet: ask us again
	}
	for _, lb := range s.md.brokers() {
		b := kmsg.NewDescribeClusterResponseBroker()
		b.NodeID = lb.ID
		b.Host, b.Port = rc.addrOf(s.nodeID, lb)
		if lb.Rack != "" {
			rack := lb.Rack
			b.Rack = &rack
		}
		resp.Brokers = append(resp.Brokers, b)
	}
	return kresp(resp), nil
}
