package group

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/group/sharegroup"
	"github.com/sluice/sluice/internal/errcode"
	"github.com/sluice/sluice/offsets"
)

// ShareGroupHeartbeat (key 76), version 1 (KIP-932; Kafka 4.1 removed the
// early-access v0, and so does Sluice).
//
// The client names its member (a UUID). Epoch 0 joins (SubscribedTopicNames
// required), -1 leaves, any other epoch is the member's current or
// previous one (else FENCED_MEMBER_EPOCH). A change of subscriptions or of
// the subscribed topics' partitions bumps the group epoch, and the simple
// assignor computes a new target, which a share member takes at once (it
// has nothing to revoke). The answer carries the member epoch, the
// heartbeat interval (the group's share.heartbeat.interval.ms) and the
// assignment when the member joins, sends its subscription (a full
// request) or its assignment changed.

// shareVersionRanges are the versions of the share group APIs, served by
// Handle but not in APIs(): the server adds them to its dispatch table
// only where share groups are enabled.
var shareVersionRanges = map[int16][2]int16{
	76: {1, 1}, // ShareGroupHeartbeat
	77: {1, 1}, // ShareGroupDescribe
}

// ShareAPIs returns the share group API keys Handle answers and their
// version ranges.
func ShareAPIs() map[int16][2]int16 { return maps.Clone(shareVersionRanges) }

// maxShareString is the longest string a record key or value holds
// (Kafka's generated code refuses longer ones when decoding).
const maxShareString = 1<<15 - 1

// validateShareHeartbeat is Kafka's throwIfShareGroupHeartbeatRequestIsInvalid.
func validateShareHeartbeat(req *kmsg.ShareGroupHeartbeatRequest) error {
	switch {
	case strings.TrimSpace(req.MemberID) == "":
		return shareBadRequest("MemberId can't be empty.")
	case strings.TrimSpace(req.GroupID) == "":
		return shareBadRequest("GroupId can't be empty.")
	case req.RackID != nil && strings.TrimSpace(*req.RackID) == "":
		return shareBadRequest("RackId can't be empty.")
	case len(req.MemberID) > maxShareString || len(req.GroupID) > maxShareString ||
		req.RackID != nil && len(*req.RackID) > maxShareString:
		return shareBadRequest("a string field is longer than 32767 bytes.")
	}
	if req.MemberEpoch == sharegroup.JoinEpoch {
		if len(req.SubscribedTopicNames) == 0 {
			return shareBadRequest("SubscribedTopicNames must be set in first request.")
		}
	} else if req.MemberEpoch < sharegroup.LeaveEpoch {
		return shareBadRequest("MemberEpoch is invalid.")
	}
	for _, t := range req.SubscribedTopicNames {
		if len(t) > maxShareString {
			return shareBadRequest("a subscribed topic name is longer than 32767 bytes.")
		}
	}
	return nil
}

func shareBadRequest(msg string) error { return fmt.Errorf("%w: %s", errInvalidRequest, msg) }

// shareGroupHeartbeat answers one ShareGroupHeartbeat.
func (c *Coordinator) shareGroupHeartbeat(ctx context.Context, req *kmsg.ShareGroupHeartbeatRequest) *kmsg.ShareGroupHeartbeatResponse {
	resp, err := c.heartbeatShare(ctx, req)
	if err != nil {
		resp = req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
		resp.ErrorCode = errcode.Code(err)
		msg := err.Error()
		resp.ErrorMessage = &msg
	}
	return resp
}

// shareErr maps sharegroup's errors to the coordinator's.
func shareErr(err error) error {
	switch {
	case errors.Is(err, sharegroup.ErrFencedEpoch):
		return fmt.Errorf("%w: %w", errcode.ErrFencedMemberEpoch, err)
	case errors.Is(err, sharegroup.ErrUnknownMember):
		return fmt.Errorf("%w: %w", errUnknownMemberID, err)
	}
	return err
}

// heartbeatShare runs one heartbeat, as Kafka's shareGroupHeartbeat.
func (c *Coordinator) heartbeatShare(ctx context.Context, req *kmsg.ShareGroupHeartbeatRequest) (*kmsg.ShareGroupHeartbeatResponse, error) {
	if err := validateShareHeartbeat(req); err != nil {
		return nil, err
	}
	if err := c.validateGroup(req.GroupID); err != nil {
		return nil, err
	}
	join := req.MemberEpoch == sharegroup.JoinEpoch
	if join && !c.isShareGroup(req.GroupID) && (c.isConsumerGroup(req.GroupID) || c.getGroup(req.GroupID, false) != nil) {
		return nil, errNotShareGroup(req.GroupID)
	}
	for {
		sg := c.shareGroup(req.GroupID, join)
		if sg == nil {
			if join {
				return nil, errCoordinatorNotAvailable
			}
			if c.isConsumerGroup(req.GroupID) || c.getGroup(req.GroupID, false) != nil {
				return nil, errNotShareGroup(req.GroupID)
			}
			return nil, fmt.Errorf("%w: Share group %s not found.", errGroupIDNotFound, req.GroupID)
		}
		sg.mu.Lock()
		if sg.dead {
			sg.mu.Unlock()
			continue // unloaded or replaced while we waited
		}
		var resp *kmsg.ShareGroupHeartbeatResponse
		var err error
		if req.MemberEpoch == sharegroup.LeaveEpoch {
			resp, err = c.leaveShareLocked(ctx, sg, req)
		} else {
			resp, err = c.heartbeatShareLocked(ctx, sg, req)
		}
		empty := sg.g.Len() == 0 && sg.g.Epoch == 0
		sg.mu.Unlock()
		if empty {
			// A join that failed before anything was written leaves no
			// group behind.
			c.forgetShareGroupIfEmpty(sg)
		}
		return resp, err
	}
}

// forgetShareGroupIfEmpty removes sg from the map when it never got a
// record (epoch 0, no members).
func (c *Coordinator) forgetShareGroupIfEmpty(sg *sgroup) {
	c.sgs.mu.Lock()
	defer c.sgs.mu.Unlock()
	sg.mu.Lock()
	defer sg.mu.Unlock()
	if !sg.dead && sg.g.Len() == 0 && sg.g.Epoch == 0 && c.sgs.groups[sg.g.ID] == sg {
		sg.killLocked()
		delete(c.sgs.groups, sg.g.ID)
	}
}

// heartbeatShareLocked is heartbeatShare for a member that joins or stays.
// REQUIRES: sg.mu held, sg not dead.
func (c *Coordinator) heartbeatShareLocked(ctx context.Context, sg *sgroup, req *kmsg.ShareGroupHeartbeatRequest) (*kmsg.ShareGroupHeartbeatResponse, error) {
	cur := sg.g
	if _, known := cur.Member(req.MemberID); !known && cur.Len() >= c.shareMaxSize() {
		return nil, fmt.Errorf("%w: The share group has reached its maximum capacity of %d members.", errGroupMaxSizeReached, c.shareMaxSize())
	}
	m, isNew, err := cur.Lookup(req.MemberID, req.MemberEpoch)
	if err != nil {
		return nil, shareErr(err)
	}
	upd := m
	upd.ClientID, upd.ClientHost = clientFrom(ctx)
	if req.RackID != nil {
		upd.RackID = *req.RackID
	}
	if req.SubscribedTopicNames != nil {
		names := slices.Clone(req.SubscribedTopicNames)
		slices.Sort(names)
		upd.Subscribed = slices.Compact(names)
	}
	subChanged := isNew || !slices.Equal(upd.Subscribed, m.Subscribed)
	mdChanged := subChanged || upd.ClientID != m.ClientID || upd.ClientHost != m.ClientHost || upd.RackID != m.RackID

	g := cur
	var recs []offsets.ShareRecord
	hash := c.shareHash(withMember(cur, upd))
	if mdChanged || hash != cur.MetadataHash || cur.Epoch > cur.AssignmentEpoch {
		g = cur.Clone()
		g.SetMember(upd)
		if mdChanged {
			recs = append(recs, sharegroup.MemberMetadataRecord(g.ID, upd))
		}
		if subChanged || hash != g.MetadataHash {
			g.Epoch++
			g.MetadataHash = hash
			recs = append(recs, sharegroup.EpochRecord(g))
		}
		if g.Epoch > g.AssignmentEpoch {
			recs = append(recs, c.computeShareTarget(g)...)
		}
	}
	next := sharegroup.Reconcile(upd, g.AssignmentEpoch, g.Target[upd.ID])
	asgChanged := isNew || next.MemberEpoch != m.MemberEpoch || next.PreviousMemberEpoch != m.PreviousMemberEpoch ||
		!next.Assigned.Equal(m.Assigned)
	if asgChanged {
		if g == cur {
			g = cur.Clone()
		}
		g.SetMember(next)
		recs = append(recs, sharegroup.CurrentAssignmentRecord(g.ID, next))
	}
	if len(recs) > 0 {
		if err := c.persistShare(ctx, g.ID, recs); err != nil {
			c.log.Warn("group: persist share group heartbeat", "group", g.ID, "member", next.ID, "err", err)
			return nil, err
		}
		c.installShareLocked(sg, g)
	}
	c.scheduleShareSessionLocked(sg, next.ID)

	resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	id := next.ID
	resp.MemberID = &id
	resp.MemberEpoch = next.MemberEpoch
	resp.HeartbeatIntervalMillis = int32(c.ShareGroupConfig(g.ID).HeartbeatInterval.Milliseconds())
	if req.MemberEpoch == sharegroup.JoinEpoch || req.SubscribedTopicNames != nil || !next.Assigned.Equal(m.Assigned) {
		a := kmsg.NewShareGroupHeartbeatResponseAssignment()
		a.TopicPartitions = []kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition{}
		for _, t := range slices.SortedFunc(maps.Keys(next.Assigned), func(a, b sharegroup.TopicID) int {
			return strings.Compare(string(a[:]), string(b[:]))
		}) {
			tp := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
			tp.TopicID, tp.Partitions = t, slices.Clone(next.Assigned[t])
			a.TopicPartitions = append(a.TopicPartitions, tp)
		}
		resp.Assignment = &a
	}
	return resp, nil
}

// withMember returns g with m in it, cloning only when needed for the hash
// (the subscriptions are all that matters there).
func withMember(g *sharegroup.Group, m sharegroup.Member) *sharegroup.Group {
	if old, ok := g.Member(m.ID); ok && slices.Equal(old.Subscribed, m.Subscribed) {
		return g
	}
	c := g.Clone()
	c.SetMember(m)
	return c
}

// leaveShareLocked handles epoch -1, as Kafka's shareGroupLeave: the member
// is fenced (its records tombstoned, the group epoch bumped).
// REQUIRES: sg.mu held, sg not dead.
func (c *Coordinator) leaveShareLocked(ctx context.Context, sg *sgroup, req *kmsg.ShareGroupHeartbeatRequest) (*kmsg.ShareGroupHeartbeatResponse, error) {
	if _, ok := sg.g.Member(req.MemberID); !ok {
		return nil, fmt.Errorf("%w: Member %s is not a member of group %s.", errUnknownMemberID, req.MemberID, req.GroupID)
	}
	if err := c.removeShareMemberLocked(ctx, sg, req.MemberID); err != nil {
		return nil, err
	}
	resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	id := req.MemberID
	resp.MemberID = &id
	resp.MemberEpoch = req.MemberEpoch
	return resp, nil
}

// ShareGroupDescribe (key 77), version 1 (KIP-932). Each group on its own:
// the coordinator's status, GROUP_ID_NOT_FOUND for a name that is not a
// share group here, else its state, epochs, the assignor and each member
// with its assignment. Authorization (Describe on the group, Describe on
// the assigned topics) and authorized operations are the server's.

func (c *Coordinator) shareGroupDescribe(req *kmsg.ShareGroupDescribeRequest) *kmsg.ShareGroupDescribeResponse {
	resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	var names map[[16]byte]string
	topicName := func(id [16]byte) string {
		if names == nil {
			names = map[[16]byte]string{}
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
	for _, name := range req.GroupIDs {
		rg := kmsg.NewShareGroupDescribeResponseGroup()
		rg.GroupID = name
		rg.AuthorizedOperations = authorizedOperationsUnset
		if err := c.describeShareGroup(name, &rg, topicName); err != nil {
			rg = kmsg.NewShareGroupDescribeResponseGroup()
			rg.GroupID = name
			rg.AuthorizedOperations = authorizedOperationsUnset
			rg.ErrorCode = errcode.Code(err)
			msg := err.Error()
			rg.ErrorMessage = &msg
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

// describeShareGroup fills rg with share group name.
func (c *Coordinator) describeShareGroup(name string, rg *kmsg.ShareGroupDescribeResponseGroup, topicName func([16]byte) string) error {
	if err := c.validateGroup(name); err != nil {
		return err
	}
	sg := c.shareGroup(name, false)
	if sg == nil {
		if c.isConsumerGroup(name) || c.getGroup(name, false) != nil {
			return errNotShareGroup(name)
		}
		return fmt.Errorf("%w: Group %s not found.", errGroupIDNotFound, name)
	}
	sg.mu.Lock()
	defer sg.mu.Unlock()
	if sg.dead {
		return fmt.Errorf("%w: Group %s not found.", errGroupIDNotFound, name)
	}
	g := sg.g
	rg.GroupState = g.State()
	rg.GroupEpoch, rg.AssignmentEpoch = g.Epoch, g.AssignmentEpoch
	rg.Assignor = sharegroup.SimpleAssignorName
	for _, m := range g.Members() {
		rm := kmsg.NewShareGroupDescribeResponseGroupMember()
		rm.MemberID, rm.MemberEpoch = m.ID, m.MemberEpoch
		if m.RackID != "" {
			r := m.RackID
			rm.RackID = &r
		}
		rm.ClientID, rm.ClientHost = m.ClientID, m.ClientHost
		rm.SubscribedTopicNames = slices.Clone(m.Subscribed)
		if rm.SubscribedTopicNames == nil {
			rm.SubscribedTopicNames = []string{}
		}
		a := kmsg.NewShareGroupDescribeResponseGroupMemberAssignment()
		a.TopicPartitions = []kmsg.ShareGroupDescribeResponseGroupMemberAssignmentTopicPartition{}
		for _, t := range slices.SortedFunc(maps.Keys(m.Assigned), func(a, b sharegroup.TopicID) int {
			return strings.Compare(string(a[:]), string(b[:]))
		}) {
			tp := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
			tp.TopicID, tp.Topic, tp.Partitions = t, topicName(t), slices.Clone(m.Assigned[t])
			a.TopicPartitions = append(a.TopicPartitions, tp)
		}
		rm.Assignment = a
		rg.Members = append(rg.Members, rm)
	}
	return nil
}
