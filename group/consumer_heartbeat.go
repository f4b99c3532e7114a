package group

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/group/consumer"
	"github.com/sluice/sluice/group/consumer/assignor"
	"github.com/sluice/sluice/internal/errcode"
)

// ConsumerGroupHeartbeat (key 68), versions 0-1 (KIP-848).
//
//	v0  the coordinator generates the member id at epoch 0
//	v1  the client generates it (MemberId required); SubscribedTopicRegex
//
// Epoch 0 joins (or rejoins after a fence), -1 leaves, -2 is a static
// member leaving for now (it keeps its assignment until its session
// expires); any other epoch is the member's current one. The answer
// carries the member's epoch, the heartbeat interval and, when it changed
// (or the member joined, or sent a full request), its assignment.

// consumerGroupHeartbeat answers one ConsumerGroupHeartbeat.
func (c *Coordinator) consumerGroupHeartbeat(ctx context.Context, req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	resp, err := c.heartbeat848(ctx, req)
	if err != nil {
		resp = req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		resp.ErrorCode = errcode.Code(err)
		msg := err.Error()
		resp.ErrorMessage = &msg
	}
	return resp
}

// validateHeartbeat is Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid.
func (c *Coordinator) validateHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest) error {
	if strings.TrimSpace(req.Group) == "" {
		return badRequest("GroupId can't be empty.")
	}
	if req.InstanceID != nil && strings.TrimSpace(*req.InstanceID) == "" {
		return badRequest("InstanceId can't be empty.")
	}
	if req.RackID != nil && strings.TrimSpace(*req.RackID) == "" {
		return badRequest("RackId can't be empty.")
	}
	if req.Version >= 1 && strings.TrimSpace(req.MemberID) == "" {
		return badRequest("MemberId can't be empty.")
	}
	switch e := req.MemberEpoch; {
	case e == consumer.JoinEpoch:
		if req.RebalanceTimeoutMillis == -1 {
			return badRequest("RebalanceTimeoutMs must be provided in first request.")
		}
		if req.Topics == nil || len(req.Topics) > 0 {
			return badRequest("TopicPartitions must be empty when (re-)joining.")
		}
		if req.SubscribedTopicNames == nil && req.SubscribedTopicRegex == nil {
			return badRequest("SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
		}
	case e > 0, e == consumer.LeaveEpoch:
		if strings.TrimSpace(req.MemberID) == "" {
			return badRequest("MemberId can't be empty.")
		}
	case e == consumer.StaticLeaveEpoch:
		if strings.TrimSpace(req.MemberID) == "" {
			return badRequest("MemberId can't be empty.")
		}
		if req.InstanceID == nil {
			return badRequest("InstanceId can't be null.")
		}
	default:
		return badRequest(fmt.Sprintf("MemberEpoch is invalid: %d.", e))
	}
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != "" {
		if _, err := compileRegex(*req.SubscribedTopicRegex); err != nil {
			return fmt.Errorf("%w: SubscribedTopicRegex `%s` is not a valid regular expression: %v",
				errcode.ErrInvalidRegularExpression, *req.SubscribedTopicRegex, err)
		}
	}
	if req.ServerAssignor != nil && !slices.Contains(c.consumerAssignors(), *req.ServerAssignor) {
		return fmt.Errorf("%w: ServerAssignor %s is not supported. Supported assignors: %s.",
			errcode.ErrUnsupportedAssignor, *req.ServerAssignor, strings.Join(c.consumerAssignors(), ", "))
	}
	return nil
}

// ownedOf turns the heartbeat's owned partitions into an assignment, nil
// when the field was null (not reported). Topics and partitions are
// deduplicated and sorted.
func ownedOf(ts []kmsg.ConsumerGroupHeartbeatRequestTopic) assignor.Assignment {
	if ts == nil {
		return nil
	}
	a := assignor.Assignment{}
	for _, t := range ts {
		ps := append(slices.Clone(a[t.TopicID]), t.Partitions...)
		slices.Sort(ps)
		a[t.TopicID] = slices.Compact(ps)
	}
	return a
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// heartbeat848 runs one heartbeat, as Kafka's consumerGroupHeartbeat.
func (c *Coordinator) heartbeat848(ctx context.Context, req *kmsg.ConsumerGroupHeartbeatRequest) (*kmsg.ConsumerGroupHeartbeatResponse, error) {
	if err := c.validateHeartbeat(req); err != nil {
		return nil, err
	}
	if err := c.validateGroup(req.Group); err != nil {
		return nil, err
	}
	if req.MemberEpoch == consumer.LeaveEpoch || req.MemberEpoch == consumer.StaticLeaveEpoch {
		return c.leave848(ctx, req)
	}
	if c.isShareGroup(req.Group) {
		return nil, errNotConsumerGroup(req.Group)
	}
	if c.hasClassicMembers(req.Group) && c.consumerGroupWithMembers(req.Group) == nil {
		// A classic group: a joining member may upgrade it
		// (consumer_migration.go); anyone else is told it is not a
		// consumer group, as Kafka's getOrMaybeCreateConsumerGroup.
		if req.MemberEpoch != consumer.JoinEpoch {
			return nil, errNotConsumerGroup(req.Group)
		}
		if err := c.upgrade(ctx, req.Group); err != nil {
			return nil, err
		}
	}
	memberID := req.MemberID
	if memberID == "" { // v0 join: the coordinator names the member
		memberID = newMemberID("consumer")
		memberID = memberID[len("consumer-"):]
	}
	for {
		cg := c.consumerGroup(req.Group, req.MemberEpoch == consumer.JoinEpoch)
		if cg == nil {
			if req.MemberEpoch == consumer.JoinEpoch {
				return nil, errCoordinatorNotAvailable
			}
			return nil, fmt.Errorf("%w: group %s has no member %s", errUnknownMemberID, req.Group, memberID)
		}
		cg.mu.Lock()
		if cg.dead {
			cg.mu.Unlock()
			continue // unloaded or replaced while we waited: look it up again
		}
		resp, err := c.heartbeatLocked(ctx, cg, req, memberID)
		cg.mu.Unlock()
		return resp, err
	}
}

// heartbeatLocked is heartbeat848 for a member that joins or stays.
// REQUIRES: cg.mu held, cg not dead.
func (c *Coordinator) heartbeatLocked(ctx context.Context, cg *cgroup, req *kmsg.ConsumerGroupHeartbeatRequest, memberID string) (*kmsg.ConsumerGroupHeartbeatResponse, error) {
	// Every heartbeat of a member the group does not know meets a full
	// group first, whatever its epoch (Kafka's throwIfConsumerGroupIsFull
	// before any other check).
	if err := cg.g.CheckSize(memberID, c.consumerMaxSize()); err != nil {
		return nil, err
	}
	owned := ownedOf(req.Topics)
	if resp, done, err := c.steadyHeartbeatLocked(ctx, cg, req, memberID, owned); done {
		return resp, err
	}
	g := cg.g.Clone()
	m, isNew, replaces, err := g.Lookup(consumer.Heartbeat{
		MemberID: memberID, InstanceID: deref(req.InstanceID), MemberEpoch: req.MemberEpoch, Owned: owned,
	})
	if err != nil {
		return nil, err
	}
	var recs []consumer.Record
	if replaces != "" {
		// A static member back under a new member id takes the old one's
		// place and its target, without a new group epoch.
		target := g.Target[replaces]
		g.RemoveMember(replaces)
		recs = append(recs, consumer.MemberTombstones(g.ID, replaces)...)
		g.Target[m.ID] = target
		recs = append(recs, consumer.TargetMemberRecord(g.ID, m.ID, target))
	}

	upd, subChanged, mdChanged := applyRequest(ctx, m, req)
	subChanged = subChanged || isNew && replaces == ""
	mdChanged = mdChanged || isNew
	next, recs, hash, asgChanged, err := c.reconcileLocked(ctx, cg, g, m, upd, isNew, subChanged, owned, recs)
	if err != nil {
		return nil, err
	}
	recs = appendMemberRecords(recs, g.ID, next, mdChanged, asgChanged)

	if err := c.persistConsumer(ctx, g.ID, recs); err != nil {
		c.log.Warn("group: persist consumer group heartbeat", "group", g.ID, "member", next.ID, "err", err)
		return nil, appendErr(err)
	}
	c.noteConsumerInstall(cg.g, g)
	cg.g, cg.metaHash = g, hash
	if len(recs) > 0 || cg.subNames == nil {
		cg.subNames = subscribedNames(g)
	}
	if replaces != "" {
		cg.dropTimersLocked(replaces)
	}
	return c.answerLocked(cg, req, m, next), nil
}

// appendMemberRecords appends to recs member m's records of group that
// changed: its metadata when mdChanged, its current assignment when
// asgChanged.
func appendMemberRecords(recs []consumer.Record, group string, m consumer.Member, mdChanged, asgChanged bool) []consumer.Record {
	mrecs := consumer.MemberRecords(group, m)
	if mdChanged {
		recs = append(recs, mrecs[0])
	}
	if asgChanged {
		recs = append(recs, mrecs[1])
	}
	return recs
}

// reconcileLocked installs upd, the new state of member m (isNew: one g did
// not hold; subChanged: its subscription changed), in g and moves the
// group and the member on as Kafka's consumer group heartbeat does, for
// members of either protocol: regular expressions refreshed, a new group
// epoch when a subscription or the subscribed topics' metadata changed, a
// new target assignment when the group epoch is past the assignment's, and
// the member reconciled toward its target given the partitions it says it
// owns. It returns the member as reconciled (installed in g), recs with the
// records of those changes appended, the group's metadata hash, and
// whether the member's assignment changed. Errors wrap
// errCoordinatorNotAvailable when g refuses a member, else are
// computeTarget's or consumer.Reconcile's.
// REQUIRES: cg.mu held; g a clone of cg.g.
func (c *Coordinator) reconcileLocked(ctx context.Context, cg *cgroup, g *consumer.Group, m, upd consumer.Member,
	isNew, subChanged bool, owned assignor.Assignment, recs []consumer.Record) (next consumer.Member, _ []consumer.Record, hash int64, asgChanged bool, err error) {
	if err := g.UpdateMember(upd); err != nil {
		return next, nil, 0, false, fmt.Errorf("%w: %w", errCoordinatorNotAvailable, err)
	}
	regexRecs, regexChanged := c.refreshRegexes(g, topicAuthFrom(ctx), c.clock.Now())
	recs = append(recs, regexRecs...)
	sub := c.resolve(g)
	hash = cg.metaHash
	if subChanged || regexChanged || sub.hash != hash {
		g.BumpEpoch()
		hash = sub.hash
		recs = append(recs, cg.epochRecord(g, hash))
	}
	if g.Epoch > g.AssignmentEpoch {
		trecs, err := c.computeTarget(g, sub)
		if err != nil {
			return next, nil, 0, false, fmt.Errorf("%w: %w", errCoordinatorNotAvailable, err)
		}
		recs = append(recs, trecs...)
	}
	next, err = consumer.Reconcile(upd, consumer.Reconciliation{
		TargetEpoch:                    g.AssignmentEpoch,
		Target:                         g.Target[upd.ID],
		Subscribed:                     sub.member[upd.ID],
		EnforceSubscriptionConsistency: subChanged,
		PartitionEpoch:                 g.PartitionEpoch,
		Owned:                          owned,
	})
	if err != nil {
		return next, nil, 0, false, err
	}
	asgChanged = isNew || next.MemberEpoch != m.MemberEpoch || next.PreviousMemberEpoch != m.PreviousMemberEpoch ||
		next.State != m.State || !equalAssignment(next.Assigned, m.Assigned) ||
		!equalAssignment(next.PendingRevocation, m.PendingRevocation)
	if err := g.UpdateMember(next); err != nil {
		return next, nil, 0, false, fmt.Errorf("%w: %w", errCoordinatorNotAvailable, err)
	}
	return next, recs, hash, asgChanged, nil
}

// answerLocked restarts member next's timers and builds the answer: the
// assignment is sent when the member joins, sends a full request, or its
// assignment changed from m's.
// REQUIRES: cg.mu held.
func (c *Coordinator) answerLocked(cg *cgroup, req *kmsg.ConsumerGroupHeartbeatRequest, m, next consumer.Member) *kmsg.ConsumerGroupHeartbeatResponse {
	c.scheduleSessionLocked(cg, next.ID)
	if next.State == consumer.UnrevokedPartitions {
		c.scheduleRebalanceLocked(cg, next)
	} else {
		cg.cancelRebalanceLocked(next.ID)
	}
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	id := next.ID
	resp.MemberID = &id
	resp.MemberEpoch = next.MemberEpoch
	resp.HeartbeatIntervalMillis = int32(c.consumerHeartbeatInterval(cg.g.ID).Milliseconds())
	full := req.RebalanceTimeoutMillis != -1 && (req.SubscribedTopicNames != nil || req.SubscribedTopicRegex != nil) && req.Topics != nil
	if req.MemberEpoch == consumer.JoinEpoch || full || !equalAssignment(next.Assigned, m.Assigned) {
		resp.Assignment = assignmentOf(next.Assigned)
	}
	return resp
}

// applyRequest returns m with the metadata the heartbeat carries (null
// fields: unchanged), whether its subscription (names, regex, assignor)
// changed and whether any of its metadata did.
func applyRequest(ctx context.Context, m consumer.Member, req *kmsg.ConsumerGroupHeartbeatRequest) (upd consumer.Member, subChanged, mdChanged bool) {
	upd = m
	upd.ClientID, upd.ClientHost = clientFrom(ctx)
	if req.RackID != nil {
		upd.RackID = *req.RackID
	}
	if req.RebalanceTimeoutMillis != -1 {
		upd.RebalanceTimeoutMs = req.RebalanceTimeoutMillis
	}
	if req.SubscribedTopicNames != nil {
		names := slices.Clone(req.SubscribedTopicNames)
		slices.Sort(names)
		upd.SubscribedTopicNames = slices.Compact(names)
	}
	if req.SubscribedTopicRegex != nil {
		upd.SubscribedTopicRegex = *req.SubscribedTopicRegex
	}
	if req.ServerAssignor != nil {
		upd.ServerAssignor = *req.ServerAssignor
	}
	// A member heartbeating with the consumer protocol no longer speaks
	// the classic one (Kafka's setClassicMemberMetadata(null)).
	upd.Classic = nil
	subChanged = !slices.Equal(upd.SubscribedTopicNames, m.SubscribedTopicNames) ||
		upd.SubscribedTopicRegex != m.SubscribedTopicRegex ||
		upd.ServerAssignor != m.ServerAssignor
	mdChanged = subChanged || upd.ClientID != m.ClientID || upd.ClientHost != m.ClientHost ||
		upd.RackID != m.RackID || upd.RebalanceTimeoutMs != m.RebalanceTimeoutMs || m.Classic != nil
	return upd, subChanged, mdChanged
}

// steadyHeartbeatLocked answers, without copying the group, a heartbeat
// that changes nothing: a known member whose metadata is the same, in a
// group whose target is current (assignment epoch = group epoch), whose
// subscribed topics did not change, whose regexes are not due, and whose
// reconciliation leaves the member as it is. done is false otherwise (the
// caller takes the full path, which writes records).
// REQUIRES: cg.mu held.
func (c *Coordinator) steadyHeartbeatLocked(ctx context.Context, cg *cgroup, req *kmsg.ConsumerGroupHeartbeatRequest, memberID string, owned assignor.Assignment) (resp *kmsg.ConsumerGroupHeartbeatResponse, done bool, err error) {
	g := cg.g
	if req.MemberEpoch == consumer.JoinEpoch || cg.subNames == nil || g.Epoch != g.AssignmentEpoch || regexDue(g, c.clock.Now()) {
		return nil, false, nil
	}
	m, isNew, replaces, err := g.Lookup(consumer.Heartbeat{
		MemberID: memberID, InstanceID: deref(req.InstanceID), MemberEpoch: req.MemberEpoch, Owned: owned,
	})
	if err != nil {
		return nil, true, err
	}
	if isNew || replaces != "" {
		return nil, false, nil
	}
	upd, _, mdChanged := applyRequest(ctx, m, req)
	if mdChanged || c.hashNames(cg.subNames) != cg.metaHash {
		return nil, false, nil
	}
	next, err := consumer.Reconcile(upd, consumer.Reconciliation{
		TargetEpoch:    g.AssignmentEpoch,
		Target:         g.Target[upd.ID],
		Subscribed:     c.memberTopics(g, upd),
		PartitionEpoch: g.PartitionEpoch,
		Owned:          owned,
	})
	if err != nil {
		return nil, true, err
	}
	if next.MemberEpoch != m.MemberEpoch || next.PreviousMemberEpoch != m.PreviousMemberEpoch || next.State != m.State ||
		!equalAssignment(next.Assigned, m.Assigned) || !equalAssignment(next.PendingRevocation, m.PendingRevocation) {
		return nil, false, nil
	}
	return c.answerLocked(cg, req, m, m), true, nil
}

// assignmentOf is a heartbeat response's assignment.
func assignmentOf(a assignor.Assignment) *kmsg.ConsumerGroupHeartbeatResponseAssignment {
	out := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
	out.Topics = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
	for _, t := range slices.SortedFunc(maps.Keys(a), assignor.TopicID.Compare) {
		rt := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
		rt.TopicID, rt.Partitions = t, slices.Clone(a[t])
		out.Topics = append(out.Topics, rt)
	}
	return &out
}

// leave848 handles epochs -1 and -2, as Kafka's consumerGroupLeave.
func (c *Coordinator) leave848(ctx context.Context, req *kmsg.ConsumerGroupHeartbeatRequest) (*kmsg.ConsumerGroupHeartbeatResponse, error) {
	var cl *group
	if req.MemberEpoch == consumer.LeaveEpoch {
		// The last member of the consumer protocol leaving may downgrade
		// the group: take the classic group's lock first.
		if cl = c.lockClassicForDowngrade(req.Group, req.MemberID); cl != nil {
			defer cl.mu.Unlock()
		}
	}
	for {
		cg := c.consumerGroup(req.Group, false)
		if cg == nil {
			return nil, fmt.Errorf("%w: group %s has no member %s", errUnknownMemberID, req.Group, req.MemberID)
		}
		cg.mu.Lock()
		if cg.dead {
			cg.mu.Unlock()
			continue
		}
		resp, err := c.leaveLocked(ctx, cl, cg, req)
		cg.mu.Unlock()
		return resp, err
	}
}

// leaveLocked is leave848 under the group's lock; cl, when set, is the
// classic group of the same name, locked, for a downgrade.
// REQUIRES: cg.mu held, cg not dead.
func (c *Coordinator) leaveLocked(ctx context.Context, cl *group, cg *cgroup, req *kmsg.ConsumerGroupHeartbeatRequest) (*kmsg.ConsumerGroupHeartbeatResponse, error) {
	if m, ok := cg.g.Member(req.MemberID); ok && req.MemberEpoch == consumer.LeaveEpoch && deref(req.InstanceID) == m.InstanceID {
		if done, err := c.downgradeLocked(cl, cg, req.MemberID, nil); done {
			if err != nil {
				return nil, err
			}
			resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
			id := req.MemberID
			resp.MemberID = &id
			resp.MemberEpoch = req.MemberEpoch
			return resp, nil
		}
	}
	g := cg.g.Clone()
	removed, err := g.Leave(req.MemberID, deref(req.InstanceID), req.MemberEpoch)
	if err != nil {
		return nil, err
	}
	var recs []consumer.Record
	if removed {
		g.BumpEpoch()
		recs = append(consumer.MemberTombstones(g.ID, req.MemberID), cg.epochRecord(g, cg.metaHash))
	} else {
		m, _ := g.Member(req.MemberID)
		recs = consumer.MemberRecords(g.ID, m)[1:]
	}
	if err := c.persistConsumer(ctx, g.ID, recs); err != nil {
		c.log.Warn("group: persist consumer group leave", "group", g.ID, "member", req.MemberID, "err", err)
		return nil, appendErr(err)
	}
	c.noteConsumerInstall(cg.g, g)
	cg.g, cg.subNames = g, subscribedNames(g)
	if removed {
		cg.dropTimersLocked(req.MemberID)
	} else if t := cg.timers[req.MemberID]; t != nil {
		stopTimer(t.rebalance)
		t.rebalance = nil
	}
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	id := req.MemberID
	resp.MemberID = &id
	resp.MemberEpoch = req.MemberEpoch
	return resp, nil
}

// persistConsumer appends recs through the PersistConsumer hook. The append
// outlives the client's connection (ctx's values are kept, its cancellation
// is not): a write the client gave up on may still commit, and the group
// in memory must not stay behind the log because of it.
func (c *Coordinator) persistConsumer(ctx context.Context, group string, recs []consumer.Record) error {
	if len(recs) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), persistTimeout)
	defer cancel()
	return c.opts.PersistConsumer(ctx, group, recs)
}
