package group

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/internal/errcode"
)

// LeaveGroup (key 13), versions 0-5.
//
//	v1  throttle time
//	v3  batched members, each with member id and group.instance.id; an
//	    empty member id with an instance id removes that static member
//	    (administrative removal, KIP-345)
//	v4  flexible
//	v5  reason
//
// Before v3 the one member's error is the top-level error.

func (c *Coordinator) leaveGroup(req *kmsg.LeaveGroupRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	leaving := req.Members
	if req.Version < 3 {
		leaving = []kmsg.LeaveGroupRequestMember{{MemberID: req.MemberID}}
	}
	errs, top := c.leave(req.Group, leaving)
	if req.Version < 3 {
		resp.ErrorCode = errcode.Code(top)
		if top == nil {
			resp.ErrorCode = errcode.Code(errs[0])
		}
		return resp
	}
	resp.ErrorCode = errcode.Code(top)
	if top != nil {
		return resp
	}
	for i, lm := range leaving {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID, rm.ErrorCode = lm.MemberID, lm.InstanceID, errcode.Code(errs[i])
		resp.Members = append(resp.Members, rm)
	}
	return resp
}

// leave removes members (Kafka's handleLeaveGroup) and returns one error
// per leaving member and the top-level error.
func (c *Coordinator) leave(name string, leaving []kmsg.LeaveGroupRequestMember) ([]error, error) {
	errs := make([]error, len(leaving))
	if err := c.validateGroup(name); err != nil {
		return errs, err
	}
	if cg := c.consumerGroupWithMembers(name); cg != nil {
		// Classic members of a consumer group (consumer_migration.go).
		return c.leaveConsumerGroup(cg, leaving)
	}
	g := c.getGroup(name, false)
	if g == nil {
		for i := range errs {
			errs[i] = errUnknownMemberID
		}
		return errs, nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.state == stateDead {
		return errs, errCoordinatorNotAvailable
	}
	for i, lm := range leaving {
		switch {
		case lm.MemberID == "":
			id, ok := "", false
			if lm.InstanceID != nil {
				id, ok = g.static[*lm.InstanceID]
			}
			if !ok {
				errs[i] = errUnknownMemberID
				continue
			}
			c.removeMemberLocked(g, g.members[id])
		case g.pending[lm.MemberID] != nil:
			c.removePendingLocked(g, lm.MemberID)
		default:
			if err := g.validateMember(lm.MemberID, lm.InstanceID); err != nil {
				errs[i] = err
				continue
			}
			c.removeMemberLocked(g, g.members[lm.MemberID])
		}
	}
	return errs, nil
}
