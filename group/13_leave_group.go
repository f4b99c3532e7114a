package group

import "github.com/twmb/franz-go/pkg/kmsg"

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
	top, codes := c.leave(req.Group, leaving)
	if req.Version < 3 {
		resp.ErrorCode = top
		if top == 0 {
			resp.ErrorCode = codes[0]
		}
		return resp
	}
	resp.ErrorCode = top
	if top != 0 {
		return resp
	}
	for i, lm := range leaving {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID, rm.ErrorCode = lm.MemberID, lm.InstanceID, codes[i]
		resp.Members = append(resp.Members, rm)
	}
	return resp
}

// leave removes members (Kafka's handleLeaveGroup) and returns the top-level
// error and one error per leaving member.
func (c *Coordinator) leave(name string, leaving []kmsg.LeaveGroupRequestMember) (int16, []int16) {
	codes := make([]int16, len(leaving))
	if code := c.validateGroup(name); code != 0 {
		return code, codes
	}
	g := c.getGroup(name, false)
	if g == nil {
		for i := range codes {
			codes[i] = errUnknownMemberID
		}
		return 0, codes
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.state == stateDead {
		return errCoordinatorNotAvailable, codes
	}
	for i, lm := range leaving {
		switch {
		case lm.MemberID == "":
			id, ok := "", false
			if lm.InstanceID != nil {
				id, ok = g.static[*lm.InstanceID]
			}
			if !ok {
				codes[i] = errUnknownMemberID
				continue
			}
			c.removeMemberLocked(g, g.members[id])
		case g.pending[lm.MemberID] != nil:
			c.removePendingLocked(g, lm.MemberID)
		default:
			if code := g.validateMember(lm.MemberID, lm.InstanceID); code != 0 {
				codes[i] = code
				continue
			}
			c.removeMemberLocked(g, g.members[lm.MemberID])
		}
	}
	return 0, codes
}
