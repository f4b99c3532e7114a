package group

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/internal/errcode"
)

// Heartbeat (key 12), versions 0-4.
//
//	v1  throttle time
//	v3  group.instance.id (KIP-345)
//	v4  flexible
//
// A heartbeat resets the member's session timer and tells it whether a
// rebalance is under way (REBALANCE_IN_PROGRESS); it never blocks.

func (c *Coordinator) heartbeat(req *kmsg.HeartbeatRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	resp.ErrorCode = errcode.Code(c.heartbeatErr(req))
	return resp
}

// heartbeatErr is Kafka's handleHeartbeat: nil when the heartbeat is
// accepted.
func (c *Coordinator) heartbeatErr(req *kmsg.HeartbeatRequest) error {
	if err := c.validateGroup(req.Group); err != nil {
		return err
	}
	var instanceID *string
	if req.Version >= 3 {
		instanceID = req.InstanceID
	}
	if cg := c.consumerGroupWithMembers(req.Group); cg != nil {
		// A classic member of a consumer group (consumer_migration.go).
		return c.heartbeatConsumerGroup(cg, req.MemberID, instanceID, req.Generation)
	}
	g := c.getGroup(req.Group, false)
	if g == nil {
		return errUnknownMemberID
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.state == stateDead:
		return errCoordinatorNotAvailable
	case g.isStaticMemberFenced(instanceID, req.MemberID):
		return errFencedInstanceID
	case g.members[req.MemberID] == nil:
		return errUnknownMemberID
	case req.Generation != g.generation:
		return errIllegalGeneration
	}
	m := g.members[req.MemberID]
	switch g.state {
	case stateCompletingRebalance, stateStable:
		c.scheduleHeartbeatLocked(g, m, m.sessionTimeout)
		return nil
	case statePreparingRebalance:
		c.scheduleHeartbeatLocked(g, m, m.sessionTimeout)
		return errRebalanceInProgress
	}
	return errUnknownMemberID // Empty
}
