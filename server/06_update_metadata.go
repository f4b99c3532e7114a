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
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/cluster"
)

func handleUpdateMetadata(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	if s.cm == nil {
		return nil, errClusterOnly
	}
	r := req.(*kmsg.UpdateMetadataRequest)
	resp := r.ResponseKind().(*kmsg.UpdateMetadataResponse)
	mc := s.cm.node.Metadata()
	before := brokerIDs(mc.Brokers())
	if !mc.Apply(r) {
		resp.ErrorCode = kerr.StaleControllerEpoch.Code
		return kresp(resp), nil
	}
	if after := brokerIDs(mc.Brokers()); !slices.Equal(before, after) {
		s.log.Info("server: live brokers changed", "brokers", after, "controller", r.ControllerID, "controller_epoch", r.ControllerEpoch)
	}
	return kresp(resp), nil
}

func brokerIDs(bs []cluster.Broker) []int32 {
	ids := make([]int32, len(bs))
	for i, b := range bs {
		ids[i] = b.ID
	}
	return ids
}
