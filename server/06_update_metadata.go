package server

// UpdateMetadata (key 6), served v5-v7, cluster mode only (the controller
// sends v7).
//
//	v5: offline replicas
//	v6: flexible
//	v7: topic ids
//
// The request goes to the control plane's view (in cluster mode the node's
// cluster.MetadataCache), which answers Metadata; a single-node broker
// closes the connection. One from an older controller epoch than the
// cache's is STALE_CONTROLLER_EPOCH.

import (
	"errors"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleUpdateMetadata(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.UpdateMetadataRequest)
	resp := r.ResponseKind().(*kmsg.UpdateMetadataResponse)
	before := liveIDs(s.cp.brokers())
	if err := s.cp.applyUpdateMetadata(r); err != nil {
		if errors.Is(err, errClusterOnly) {
			return nil, err
		}
		s.log.Warn("server: ignoring UpdateMetadata", "controller", r.ControllerID, "controller_epoch", r.ControllerEpoch, "err", err)
		resp.ErrorCode = errorCode(err)
		return kresp(resp), nil
	}
	if after := liveIDs(s.cp.brokers()); !slices.Equal(before, after) {
		s.log.Info("server: live brokers changed", "brokers", after, "controller", r.ControllerID, "controller_epoch", r.ControllerEpoch)
	}
	return kresp(resp), nil
}
