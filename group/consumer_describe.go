package group

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/group/consumer"
	"github.com/sluice/sluice/group/consumer/assignor"
	"github.com/sluice/sluice/internal/errcode"
)

// ConsumerGroupDescribe (key 69), versions 0-1 (KIP-848).
//
//	v1  MemberType per member (KIP-1099): 1 for a member of the consumer
//	    protocol (0 classic, -1 unknown)
//
// Each group is answered on its own: the coordinator's status
// (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS), GROUP_ID_NOT_FOUND for a
// name that is not a consumer group here, else the group epoch, the
// assignment epoch, the assignor and each member with its current and
// target assignment. Authorized operations are the server's to fill.

// consumerGroupDescribe answers one ConsumerGroupDescribe.
func (c *Coordinator) consumerGroupDescribe(req *kmsg.ConsumerGroupDescribeRequest) *kmsg.ConsumerGroupDescribeResponse {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	var names map[assignor.TopicID]string // built on first use
	topicName := func(id assignor.TopicID) string {
		if names == nil {
			names = map[assignor.TopicID]string{}
			if c.opts.Topics != nil {
				for _, n := range c.opts.Topics.TopicNames() {
					if ti, ok := c.opts.Topics.Topic(n); ok {
						names[ti.ID] = n
					}
				}
			}
		}
		return names[id]
	}
	for _, name := range req.Groups {
		rg := kmsg.NewConsumerGroupDescribeResponseGroup()
		rg.Group = name
		rg.AuthorizedOperations = authorizedOperationsUnset
		if err := c.describeConsumerGroup(name, &rg, topicName); err != nil {
			rg.ErrorCode = errcode.Code(err)
			msg := err.Error()
			rg.ErrorMessage = &msg
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

// describeConsumerGroup fills rg with group name.
func (c *Coordinator) describeConsumerGroup(name string, rg *kmsg.ConsumerGroupDescribeResponseGroup, topicName func(assignor.TopicID) string) error {
	if err := c.validateGroup(name); err != nil {
		return err
	}
	cg := c.consumerGroup(name, false)
	if cg == nil {
		if c.getGroup(name, false) != nil {
			return fmt.Errorf("%w: group %s is not a consumer group", errGroupIDNotFound, name)
		}
		return fmt.Errorf("%w: group %s not found", errGroupIDNotFound, name)
	}
	cg.mu.Lock()
	defer cg.mu.Unlock()
	g := cg.g
	rg.State = groupState(g)
	rg.Epoch, rg.AssignmentEpoch = g.Epoch, g.AssignmentEpoch
	rg.AssignorName = c.preferredAssignor(g)
	members := g.Members()
	slices.SortFunc(members, func(a, b consumer.Member) int { return strings.Compare(a.ID, b.ID) })
	for _, m := range members {
		rm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
		rm.MemberID, rm.MemberEpoch = m.ID, m.MemberEpoch
		rm.MemberType = 1 // consumer protocol
		if m.UsesClassic() {
			rm.MemberType = 0 // a classic member (consumer_migration.go)
		}
		rm.InstanceID, rm.RackID = nullableString(m.InstanceID), nullableString(m.RackID)
		rm.ClientID, rm.ClientHost = m.ClientID, m.ClientHost
		rm.SubscribedTopics = slices.Clone(m.SubscribedTopicNames)
		if rm.SubscribedTopics == nil {
			rm.SubscribedTopics = []string{}
		}
		rm.SubscribedTopicRegex = nullableString(m.SubscribedTopicRegex)
		rm.Assignment = describeAssignment(m.Assigned, topicName)
		rm.TargetAssignment = describeAssignment(g.Target[m.ID], topicName)
		rg.Members = append(rg.Members, rm)
	}
	return nil
}

// describeAssignment is an assignment as ConsumerGroupDescribe shows it.
func describeAssignment(a assignor.Assignment, topicName func(assignor.TopicID) string) kmsg.Assignment {
	out := kmsg.NewAssignment()
	out.TopicPartitions = []kmsg.AssignmentTopicPartition{}
	for _, t := range slices.SortedFunc(maps.Keys(a), assignor.TopicID.Compare) {
		tp := kmsg.NewAssignmentTopicPartition()
		tp.TopicID, tp.Topic, tp.Partitions = t, topicName(t), slices.Clone(a[t])
		out.TopicPartitions = append(out.TopicPartitions, tp)
	}
	return out
}

func nullableString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
