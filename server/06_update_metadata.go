package server

// UpdateMetadata (key 6), served v5-v7, cluster mode only (the controller
// sends v7).
//
//	v5: offline replicas
//	v6: flexible
//	v7: topic ids
//
// The request goes to the node's MetadataCache (cluster.MetadataCache.Apply),
// which answers Metadata. One from an older controller epoch than the
// cache's is STALE_CONTROLLER_EPOCH.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleUpdateMetadata(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	if s.cm == nil {
		return nil, errClusterOnly
	}
	r := req.(*kmsg.UpdateMetadataRequest)
	resp := r.ResponseKind().(*kmsg.UpdateMetadataResponse)
	if !s.cm.node.Metadata().Apply(r) {
		resp.ErrorCode = kerr.StaleControllerEpoch.Code
	}
	return kresp(resp), nil
}
