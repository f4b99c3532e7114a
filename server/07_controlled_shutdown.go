package server

// ControlledShutdown (key 7), served v1-v3, cluster mode only.
//
//	v1: partitions remaining as (topic, partition)
//	v2: broker epoch
//	v3: flexible
//
// Served by the controller (cluster.Node.HandleControlledShutdown): it moves
// the leadership of the broker's partitions to other in-sync replicas and
// answers those it could not move. A broker that is not the controller
// answers NOT_CONTROLLER. The request must name the broker's current
// registration epoch (v2+; KIP-380): anything else, v1 included, is
// STALE_BROKER_EPOCH, so that nobody but the broker itself can move its
// leaderships away. A single-node broker does not serve it (the
// connection closes).

import (
	"github.com/sluice/sluice/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleControlledShutdown(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.ControlledShutdownRequest)
	resp := r.ResponseKind().(*kmsg.ControlledShutdownResponse)
	epoch := r.BrokerEpoch
	if r.Version < 2 {
		epoch = -1 // none: refused, see above
	}
	err := s.az.checkControlListener(rc)
	var remaining []metadata.TopicPartition
	if err == nil {
		remaining, err = s.ib.controlledShutdown(r.BrokerID, epoch)
	}
	if err != nil {
		resp.ErrorCode = errorCode(err)
		s.log.Warn("server: controlled shutdown request", "broker", r.BrokerID, "err", err)
		return kresp(resp), nil
	}
	for _, tp := range remaining {
		pr := kmsg.NewControlledShutdownResponsePartitionsRemaining()
		pr.Topic, pr.Partition = tp.Topic, tp.Partition
		resp.PartitionsRemaining = append(resp.PartitionsRemaining, pr)
	}
	return kresp(resp), nil
}
