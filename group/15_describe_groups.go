package group

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/internal/errcode"
)

// DescribeGroups (key 15), versions 0-5.
//
//	v1  throttle time
//	v3  authorized operations (all group operations here; the server
//	    replaces them with the principal's, server/authorize.go)
//	v4  group.instance.id of members
//	v5  flexible
//
// As in Kafka, a Stable group shows its protocol and each member's metadata
// and assignment; other states show members without them; an unknown group
// is "Dead" with no error. So is a consumer group (KIP-848), as Kafka 4.x's
// GroupMetadataManager.describeGroups answers a group that is not classic
// (GROUP_ID_NOT_FOUND only from v6, which is not served here): its members
// are seen with ConsumerGroupDescribe, and the memberless classic group
// that holds its offsets is not shown.

// groupOperations is the authorized-operations bitfield of a group with
// every operation allowed: READ (3), DELETE (6), DESCRIBE (8).
const groupOperations = 1<<3 | 1<<6 | 1<<8

func (c *Coordinator) describeGroups(req *kmsg.DescribeGroupsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, name := range req.Groups {
		dg := c.describe(name)
		dg.AuthorizedOperations = authorizedOperationsUnset
		if req.IncludeAuthorizedOperations {
			dg.AuthorizedOperations = groupOperations
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return resp
}

// describe is one group of a DescribeGroups answer.
func (c *Coordinator) describe(name string) kmsg.DescribeGroupsResponseGroup {
	dg := kmsg.NewDescribeGroupsResponseGroup()
	dg.Group = name
	if err := c.validateGroup(name); err != nil {
		dg.ErrorCode = errcode.Code(err)
		return dg
	}
	dg.State = stateDead.String()
	if c.isConsumerGroup(name) || c.isShareGroup(name) {
		return dg
	}
	g := c.getGroup(name, false)
	if g == nil {
		return dg
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	dg.State = g.state.String()
	if g.state == stateDead {
		return dg
	}
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
