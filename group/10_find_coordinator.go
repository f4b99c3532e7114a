package group

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/internal/errcode"
)

// FindCoordinator (key 10), versions 0-4.
//
//	v1  key type (0 group, 1 transaction), throttle time, error message
//	v3  flexible
//	v4  batched keys (KIP-699), one answer per key
//
// On a single node this broker is the coordinator of every group (it leads
// every __consumer_offsets partition), and the server lets this answer
// FindCoordinator for group keys; in cluster mode the server answers
// itself, with the leader of the group's partition. Transactional keys
// (key type 1) are the transaction coordinator's: the server answers them
// (server/10_find_coordinator.go) and never sends them here; one that
// arrives anyway gets COORDINATOR_NOT_AVAILABLE. Unknown key types get
// INVALID_REQUEST, as in Kafka.

func (c *Coordinator) findCoordinator(req *kmsg.FindCoordinatorRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	keyType := req.CoordinatorType
	if req.Version == 0 {
		keyType = 0
	}
	msg, err := c.coordinatorFor(keyType)
	if req.Version >= 4 {
		for _, key := range req.CoordinatorKeys {
			rc := kmsg.NewFindCoordinatorResponseCoordinator()
			rc.Key = key
			c.fillCoordinator(err, msg, &rc.ErrorCode, &rc.ErrorMessage, &rc.NodeID, &rc.Host, &rc.Port)
			resp.Coordinators = append(resp.Coordinators, rc)
		}
		return resp
	}
	c.fillCoordinator(err, msg, &resp.ErrorCode, &resp.ErrorMessage, &resp.NodeID, &resp.Host, &resp.Port)
	return resp
}

// coordinatorFor returns the error for a key type (nil: this broker
// coordinates it) and its message. A loading partition is no reason to
// send clients elsewhere: the group requests themselves answer
// COORDINATOR_LOAD_IN_PROGRESS.
func (c *Coordinator) coordinatorFor(keyType int8) (string, error) {
	switch keyType {
	case 0:
		if err := c.status(); err != nil {
			return "the group coordinator is not available", err
		}
		return "", nil
	case 1:
		return "transactional ids are not coordinated here", errCoordinatorNotAvailable
	}
	return "unknown coordinator key type", errInvalidRequest
}

// fillCoordinator fills one answer: this broker, or err's code and msg.
func (c *Coordinator) fillCoordinator(err error, msg string, errCode *int16, errMsg **string, node *int32, host *string, port *int32) {
	*errCode = errcode.Code(err)
	if err != nil {
		*errMsg = &msg
		*node, *host, *port = -1, "", -1
		return
	}
	*node, *host, *port = c.opts.NodeID, c.opts.Host, c.opts.Port
}
