package group

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/internal/errcode"
)

// DescribeGroups (key 15), versions 0-6.
//
//	v1  throttle time
//	v3  authorized operations (all group operations here; the server
//	    replaces them with the principal's, server/authorize.go)
//	v4  group.instance.id of members
//	v5  flexible
//	v6  GROUP_ID_NOT_FOUND and a message for a group that is not a
//	    classic group (KIP-1043)
//
// As in Kafka, a Stable group shows its protocol and each member's metadata
// and assignment; other states show members without them; an unknown group
// is "Dead" with no error below v6. So is a consumer group (KIP-848), as
// Kafka 4.x's GroupMetadataManager.describeGroups answers a group that is
// not classic; from v6 both are GROUP_ID_NOT_FOUND with a message saying
// which. A consumer group's members are seen with ConsumerGroupDescribe,
// and the memberless classic group that holds its offsets is not shown.

// groupOperations is the authorized-operations bitfield of a group with
// every operation allowed: READ (3), DELETE (6), DESCRIBE (8).
const groupOperations = 1<<3 | 1<<6 | 1<<8

func (c *Coordinator) describeGroups(req *kmsg.DescribeGroupsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, name := range req.Groups {
		dg := c.describe(name, req.Version)
		dg.AuthorizedOperations = authorizedOperationsUnset
		if req.IncludeAuthorizedOperations {
			dg.AuthorizedOperations = groupOperations
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return resp
}

// describe is one group of a DescribeGroups answer at version v.
func (c *Coordinator) describe(name string, v int16) kmsg.DescribeGroupsResponseGroup {
	dg := kmsg.NewDescribeGroupsResponseGroup()
	dg.Group = name
	if err := c.validateGroup(name); err != nil {
		dg.ErrorCode = errcode.Code(err)
		return dg
	}
	// notFound is Kafka's answer for a group that is not classic, or none.
	notFound := func(msg string) kmsg.DescribeGroupsResponseGroup {
		if v >= 6 {
			dg.ErrorCode = errcode.Code(errGroupIDNotFound)
			dg.ErrorMessage = &msg
			return dg
		}
		dg.State = stateDead.String()
		return dg
	}
	if c.isConsumerGroup(name) || c.isShareGroup(name) {
		return notFound(fmt.Sprintf("Group %s is not a classic group.", name))
	}
	g := c.getGroup(name, false)
	if g == nil {
		return notFound(fmt.Sprintf("Group %s not found.", name))
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.state == stateDead {
		return notFound(fmt.Sprintf("Group %s not found.", name))
	}
	dg.State = g.state.String()
	dg.ProtocolType = g.protocolType
	stable := g.state == stateStable
	if stable {
		dg.Protocol = g.protocol
	}
	for _, m := range g.sortedMembers() {
		dm := kmsg.NewDescribeGroupsResponseGroupMember()
		dm.MemberID, dm.ClientID, dm.ClientHost = m.id, m.clientID, m.clientHost
		if m.instanceID != "" {
			id := m.instanceID
			dm.InstanceID = &id
		}
		dm.ProtocolMetadata, dm.MemberAssignment = []byte{}, []byte{}
		if stable {
			dm.ProtocolMetadata = m.metadata(g.protocol)
			if m.assignment != nil {
				dm.MemberAssignment = m.assignment
			}
		}
		dg.Members = append(dg.Members, dm)
	}
	return dg
}
