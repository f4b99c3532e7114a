package group

import "github.com/twmb/franz-go/pkg/kmsg"

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
	code, msg := c.coordinatorFor(keyType)
	if req.Version >= 4 {
		for _, key := range req.CoordinatorKeys {
			rc := kmsg.NewFindCoordinatorResponseCoordinator()
			rc.Key = key
			c.fillCoordinator(code, msg, &rc.ErrorCode, &rc.ErrorMessage, &rc.NodeID, &rc.Host, &rc.Port)
			resp.Coordinators = append(resp.Coordinators, rc)
		}
		return resp
	}
	c.fillCoordinator(code, msg, &resp.ErrorCode, &resp.ErrorMessage, &resp.NodeID, &resp.Host, &resp.Port)
	return resp
}

// coordinatorFor returns the error code and message for a key type.
func (c *Coordinator) coordinatorFor(keyType int8) (int16, string) {
	switch keyType {
	case 0:
		// Loading is no reason to send clients elsewhere: the group
		// requests themselves answer COORDINATOR_LOAD_IN_PROGRESS.
		if code := c.status(); code != 0 && code != errLoadInProgress {
			return code, "the group coordinator is not available"
		}
		return 0, ""
	case 1:
		return errCoordinatorNotAvailable, "transactional ids are not coordinated here"
	}
	return errInvalidRequest, "unknown coordinator key type"
}

func (c *Coordinator) fillCoordinator(code int16, msg string, errCode *int16, errMsg **string, node *int32, host *string, port *int32) {
	*errCode = code
	if code != 0 {
		*errMsg = &msg
		*node, *host, *port = -1, "", -1
		return
	}
	*node, *host, *port = c.opts.NodeID, c.opts.Host, c.opts.Port
}
