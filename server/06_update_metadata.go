package server

// UpdateMetadata (key 6), served v5-v7, cluster mode only (the controller
// sends v7; a single node closes the connection).
//
//	v5: offline replicas
//	v6: flexible
//	v7: topic ids
//
// The request goes to the control plane's view (in cluster mode the node's
// cluster.MetadataCache), which answers Metadata. Only the controller is
// obeyed (as LeaderAndIsr, 04_leader_and_isr.go), so no client can point
// other clients or followers at another address. One from an older controller epoch than the
// cache's is STALE_CONTROLLER_EPOCH.

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleUpdateMetadata(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.UpdateMetadataRequest)
	resp := r.ResponseKind().(*kmsg.UpdateMetadataResponse)
	err := s.az.checkControlListener(rc)
	if err == nil {
		err = s.ib.acceptControllerRequest(r.ControllerID, r.ControllerEpoch, r.BrokerEpoch)
	}
	before := liveIDs(s.md.brokers())
	if err == nil {
		err = s.ib.applyUpdateMetadata(r)
	}
	if err != nil {
		rc.logRefused(s.log, r, r.ControllerID, r.ControllerEpoch, err)
		resp.ErrorCode = errorCode(err)
		return kresp(resp), nil
	}
	if after := liveIDs(s.md.brokers()); !slices.Equal(before, after) {
		s.log.Info("server: live brokers changed", "brokers", after, "controller", r.ControllerID, "controller_epoch", r.ControllerEpoch)
	}
	return kresp(resp), nil
}
