package cluster

// Partition reassignment (KIP-455), Kafka's ZooKeeper-mode controller
// algorithm (KafkaController.onPartitionReassignment). For a partition
// with original replicas ORS moved to target replicas TRS:
//
//	RS = TRS + (ORS - TRS)   every replica while the move runs
//	AR = RS - ORS            adding replicas
//	RR = ORS - TRS           removing replicas
//
// Phase A (not every TRS member in the ISR): RS, AR and RR go into the
// topic znode (/brokers/topics/<t>, "adding_replicas" and
// "removing_replicas"), the leader epoch is bumped and every replica of RS
// gets LeaderAndIsr, so the new replicas start following and the leader
// adds them to the ISR once caught up (an ISR change the controller hears
// of through /isr_change_notification).
//
// Phase B (TRS within the ISR): the assignment becomes TRS; the leader
// stays if it is in TRS and live, else the first live in-sync TRS member
// leads; the ISR keeps only TRS members (one state write, leader epoch
// bumped); TRS replicas get LeaderAndIsr; RR get StopReplica with delete;
// the topic znode is written with RS = TRS and no adding/removing; the
// partition leaves /admin/reassign_partitions; every broker gets
// UpdateMetadata. A StopReplica(delete) is honoured by a broker that the
// topic znode lists as removing (ReplicaDeletable), so the order is
// Kafka's and a controller that dies in the middle leaves a state the next
// one finishes.
//
// Cancelling (null target) reassigns to ORS: the adding replicas are
// removed at once (leaving the ISR, StopReplica with delete).
//
// The state of a move lives only in the topic znodes: a new controller
// reads adding/removing at failover and resumes every move (Phase A again,
// or Phase B when already complete). Requests come through the API
// (AlterPartitionReassignments, which takes precedence over a znode entry
// for the same partition) or /admin/reassign_partitions (entries that fail
// are dropped from the znode; the znode goes when the last one completes;
// a znode that is not Kafka's JSON is logged and deleted).

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrNoReassignmentInProgress: a cancellation named a partition that is
// not being reassigned (NO_REASSIGNMENT_IN_PROGRESS).
var ErrNoReassignmentInProgress = errors.New("cluster: no partition reassignment in progress")

// ErrReassignmentInProgress: partitions cannot be added to a topic while
// one of its partitions is being reassigned (REASSIGNMENT_IN_PROGRESS).
var ErrReassignmentInProgress = errors.New("cluster: a partition reassignment is in progress")

// PartitionReassignment is one partition's move as
// ListPartitionReassignments reports it: Replicas is RS (target first,
// then the original replicas leaving), Adding and Removing AR and RR.
type PartitionReassignment struct {
	TopicPartition
	Replicas, Adding, Removing []int32
}

// assignment is a partition's replicas with its move in progress, if any
// (Kafka's ReplicaAssignment).
type assignment struct {
	replicas, adding, removing []int32
}

func (a assignment) beingReassigned() bool { return len(a.adding) > 0 || len(a.removing) > 0 }

// origin is ORS: the replicas before the move.
func (a assignment) origin() []int32 { return without(a.replicas, a.adding) }

// target is TRS: the replicas after the move.
func (a assignment) target() []int32 { return without(a.replicas, a.removing) }

// reassignTo is Kafka's ReplicaAssignment.reassignTo: RS = target then the
// origin replicas not in it.
func (a assignment) reassignTo(target []int32) assignment {
	orig := a.origin()
	full := slices.Clone(target)
	for _, r := range orig {
		if !slices.Contains(full, r) {
			full = append(full, r)
		}
	}
	return assignment{replicas: full, adding: without(full, orig), removing: without(orig, target)}
}

func (a assignment) equal(b assignment) bool {
	return slices.Equal(a.replicas, b.replicas) && slices.Equal(a.adding, b.adding) && slices.Equal(a.removing, b.removing)
}

// without returns xs minus the members of ys, in xs's order (never nil).
func without(xs, ys []int32) []int32 {
	return filter(xs, func(x int32) bool { return !slices.Contains(ys, x) })
}

// assignmentOf returns tp's assignment in the controller's context.
func (c *controller) assignmentOf(tp TopicPartition) assignment {
	t := c.topics[tp.Topic]
	if t == nil || tp.Partition < 0 || int(tp.Partition) >= len(t.replicas) {
		return assignment{}
	}
	return assignment{replicas: t.replicas[tp.Partition], adding: t.adding[tp.Partition], removing: t.removing[tp.Partition]}
}

// setAssignment changes tp's assignment in the context only.
// REQUIRES: tp's topic is known and tp in range.
func (c *controller) setAssignment(tp TopicPartition, a assignment) {
	t := c.topics[tp.Topic]
	t.replicas[tp.Partition] = slices.Clone(a.replicas)
	if t.adding == nil {
		t.adding, t.removing = map[int32][]int32{}, map[int32][]int32{}
	}
	if len(a.adding) > 0 {
		t.adding[tp.Partition] = slices.Clone(a.adding)
	} else {
		delete(t.adding, tp.Partition)
	}
	if len(a.removing) > 0 {
		t.removing[tp.Partition] = slices.Clone(a.removing)
	} else {
		delete(t.removing, tp.Partition)
	}
}

// reassigning returns every partition being reassigned, sorted.
func (c *controller) reassigning() []TopicPartition {
	var out []TopicPartition
	for name, t := range c.topics {
		for p := range t.replicas {
			tp := TopicPartition{Topic: name, Partition: int32(p)}
			if c.assignmentOf(tp).beingReassigned() {
				out = append(out, tp)
			}
		}
	}
	sortTPs(out)
	return out
}

// topicReassigning reports whether any partition of topic t is moving.
func (c *controller) topicReassigning(t string) bool {
	ti := c.topics[t]
	return ti != nil && (len(ti.adding) > 0 || len(ti.removing) > 0)
}

// writeAssignment writes the context's assignment of topic t's partitions
// to its znode, fenced by this controller's epoch. Partitions in the znode
// beyond the context's (added meanwhile) keep theirs.
func (c *controller) writeAssignment(t string) error {
	ti := c.topics[t]
	for attempt := 0; ; attempt++ {
		data, stat, err := c.n.zk.get(topicPath(t))
		if err != nil {
			return fmt.Errorf("cluster: read %s: %w", topicPath(t), err)
		}
		fa, err := decodeFullAssignment(t, data)
		if err != nil {
			return err
		}
		if len(fa.parts) < len(ti.replicas) {
			fa.parts = append(fa.parts, make([][]int32, len(ti.replicas)-len(fa.parts))...)
		}
		for p, rs := range ti.replicas {
			fa.parts[p] = rs
			delete(fa.adding, int32(p))
			delete(fa.removing, int32(p))
		}
		for p, rs := range ti.adding {
			fa.adding[p] = rs
		}
		for p, rs := range ti.removing {
			fa.removing[p] = rs
		}
		_, err = c.n.zk.multi(
			&zk.CheckVersionRequest{Path: controllerEpochPath, Version: c.epochZkVersion},
			&zk.SetDataRequest{Path: topicPath(t), Data: encodeFullAssignment(fa), Version: stat.Version},
		)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, zk.ErrBadVersion):
			// Either /controller_epoch (fenced) or the topic znode
			// (partitions added) moved: tell them apart by reading.
			if _, st, err := c.n.zk.get(controllerEpochPath); err == nil && st.Version != c.epochZkVersion {
				return fmt.Errorf("%w: /controller_epoch changed", ErrControllerMoved)
			}
			if attempt < 10 {
				continue
			}
			return fmt.Errorf("cluster: write %s: %w", topicPath(t), err)
		default:
			return fmt.Errorf("cluster: write %s: %w", topicPath(t), err)
		}
	}
}

// validateReassignment is Kafka's validateReplicas: a non-empty target
// without duplicates or negative ids whose added replicas are live
// brokers. Errors wrap ErrInvalidReplicaAssignment.
func (c *controller) validateReassignment(tp TopicPartition, target []int32) error {
	if len(target) == 0 {
		return fmt.Errorf("%w: empty replica list specified in partition reassignment of %s", ErrInvalidReplicaAssignment, tp)
	}
	seen := make(map[int32]bool, len(target))
	for _, r := range target {
		if r < 0 {
			return fmt.Errorf("%w: invalid broker id %d in the replica list of %s", ErrInvalidReplicaAssignment, r, tp)
		}
		if seen[r] {
			return fmt.Errorf("%w: duplicate replica id %d in the replica list of %s", ErrInvalidReplicaAssignment, r, tp)
		}
		seen[r] = true
	}
	// Every added replica must be live; with at most len(live) replicas
	// that can be checked without building the (possibly huge) RS.
	orig := c.assignmentOf(tp).origin()
	for _, r := range target {
		if _, ok := c.live[r]; !ok && !slices.Contains(orig, r) {
			return fmt.Errorf("%w: %s: the replica list (%d brokers) has broker %d, which is not alive (live brokers %v)", ErrInvalidReplicaAssignment, tp, len(target), r, c.liveIDs())
		}
	}
	return nil
}

// alterReassignments is AlterPartitionReassignments on the event loop
// (Kafka's onApiPartitionReassignment): targets[tp] nil cancels. The
// result has an entry per partition asked for: nil (started, cancelled or
// completed), ErrInvalidReplicaAssignment, ErrNoReassignmentInProgress,
// ErrTopicNotFound, or the ZooKeeper error that stopped it. The returned
// error is ErrControllerMoved when fenced.
func (c *controller) alterReassignments(targets map[TopicPartition][]int32) (map[TopicPartition]error, error) {
	results := make(map[TopicPartition]error, len(targets))
	todo := map[TopicPartition]assignment{}
	for tp, target := range targets {
		if target != nil {
			if err := c.validateReassignment(tp, target); err != nil {
				results[tp] = err
				continue
			}
		}
		cur := c.assignmentOf(tp)
		switch {
		case target == nil && !cur.beingReassigned(): // unknown partitions too, as Kafka
			results[tp] = fmt.Errorf("%w: %s", ErrNoReassignmentInProgress, tp)
		case len(cur.replicas) == 0:
			results[tp] = fmt.Errorf("%w: %s", ErrTopicNotFound, tp)
		case target == nil:
			todo[tp] = cur.reassignTo(cur.origin())
		default:
			todo[tp] = cur.reassignTo(target)
		}
	}
	// The latest request wins: the API's partitions leave the znode.
	if err := c.removeFromZkReassignment(func(tp TopicPartition) bool { _, ok := todo[tp]; return ok }); err != nil {
		c.log.Warn("cluster: could not update "+reassignPath, "err", err)
	}
	tps := make([]TopicPartition, 0, len(todo))
	for tp := range todo {
		tps = append(tps, tp)
	}
	sortTPs(tps)
	for _, tp := range tps {
		err := c.triggerReassignment(tp, todo[tp])
		results[tp] = err
		if errors.Is(err, ErrControllerMoved) {
			return results, err
		}
		if err != nil && retryable(err) {
			// The znodes hold what was done; a resume finishes it.
			c.n.retryLater(event{kind: evReassignPartitions, term: c.term}, "partition reassignment", err)
		}
	}
	return results, nil
}

// triggerReassignment is Kafka's maybeTriggerPartitionReassignment for one
// partition: refused for a topic being deleted or unknown.
func (c *controller) triggerReassignment(tp TopicPartition, next assignment) error {
	if ok, _, err := c.n.zk.exists(deleteTopicPath(tp.Topic)); err != nil {
		return err
	} else if ok {
		c.log.Info("cluster: skipping reassignment of a topic being deleted", "partition", tp.String())
		return fmt.Errorf("%w: %s is being deleted", ErrTopicNotFound, tp)
	}
	if len(c.assignmentOf(tp).replicas) == 0 || c.states[tp] == nil {
		return fmt.Errorf("%w: %s", ErrTopicNotFound, tp)
	}
	return c.onPartitionReassignment(tp, next)
}

// onPartitionReassignment moves tp towards next (see the file comment).
func (c *controller) onPartitionReassignment(tp TopicPartition, next assignment) error {
	cur := c.assignmentOf(tp)
	if !cur.equal(next) {
		c.setAssignment(tp, next)
		if err := c.writeAssignment(tp.Topic); err != nil {
			c.setAssignment(tp, cur)
			return err
		}
		c.log.Info("cluster: partition reassignment", "partition", tp.String(), "replicas", next.replicas,
			"adding", next.adding, "removing", next.removing, "was", cur.replicas)
		// Replicas of an earlier move that the new one drops (a
		// cancellation's adding replicas) go at once.
		if unneeded := without(cur.replicas, next.replicas); len(unneeded) > 0 {
			if _, err := c.settle(tp, unneeded, false); err != nil {
				return err
			}
		}
	}
	if err := c.readState(tp); err != nil {
		return err
	}
	if !c.reassignmentComplete(tp) {
		// A: bump the leader epoch and tell every replica of RS.
		_, err := c.bumpLeaderEpoch(tp)
		c.announce([]TopicPartition{tp})
		return err
	}
	return c.completeReassignment(tp)
}

// bumpLeaderEpoch writes tp's state again with the next leader epoch
// (Kafka's updateLeaderEpochAndSendRequest), so its replicas act on the
// new replica set.
func (c *controller) bumpLeaderEpoch(tp TopicPartition) ([]TopicPartition, error) {
	return c.changeStates([]TopicPartition{tp}, func(_ TopicPartition, st PartitionState) (PartitionState, bool) {
		return st, st.Leader >= 0
	})
}

// reassignmentComplete reports whether every target replica of tp is in
// its ISR (Kafka's isReassignmentComplete).
func (c *controller) reassignmentComplete(tp TopicPartition) bool {
	st := c.states[tp]
	if st == nil {
		return false
	}
	for _, r := range c.assignmentOf(tp).target() {
		if !slices.Contains(st.ISR, r) {
			return false
		}
	}
	return true
}

// completeReassignment is phase B for tp, whose target replicas are all
// in sync.
func (c *controller) completeReassignment(tp TopicPartition) error {
	was := c.assignmentOf(tp)
	final := assignment{replicas: was.target()}
	c.setAssignment(tp, final)
	ok, err := c.settle(tp, was.removing, true)
	if err != nil || !ok {
		c.setAssignment(tp, was)
		if err == nil {
			c.log.Info("cluster: reassignment waits for a live in-sync target replica to lead", "partition", tp.String(), "target", final.replicas)
		}
		return err
	}
	if err := c.writeAssignment(tp.Topic); err != nil {
		c.setAssignment(tp, was)
		return err
	}
	c.log.Info("cluster: partition reassignment completed", "partition", tp.String(), "replicas", final.replicas, "removed", was.removing)
	if err := c.removeFromZkReassignment(func(x TopicPartition) bool { return x == tp }); err != nil {
		c.log.Warn("cluster: could not update "+reassignPath, "err", err)
	}
	c.sendUpdateMetadata(c.liveIDs(), []TopicPartition{tp})
	if c.topicReassigning(tp.Topic) {
		return nil
	}
	// A deletion that waited for the move can go now.
	if ok, _, err := c.n.zk.exists(deleteTopicPath(tp.Topic)); err != nil || !ok {
		return err
	}
	return c.onTopicDeletion()
}

// settle makes tp's state fit its (already changed) assignment in the
// context and drops the replicas in removed: the leader stays when it is
// a live replica of the assignment, else the first live in-sync one leads
// (Kafka's ReassignPartitionLeaderElectionStrategy); the ISR keeps only
// the assignment's replicas; the leader epoch is bumped. The assignment's
// replicas get LeaderAndIsr and the removed ones StopReplica with delete.
// With needLeader and no replica able to lead, nothing is written and it
// returns false; without, the partition goes leaderless (a cancellation
// whose original replicas are all out of sync or dead).
func (c *controller) settle(tp TopicPartition, removed []int32, needLeader bool) (bool, error) {
	reps := c.assignmentOf(tp).replicas
	ok := true
	changed, err := c.changeStates([]TopicPartition{tp}, func(_ TopicPartition, st PartitionState) (PartitionState, bool) {
		if !slices.Contains(reps, st.Leader) || !c.isLive(st.Leader) {
			st.Leader = -1
			for _, r := range reps {
				if c.isLive(r) && slices.Contains(st.ISR, r) {
					st.Leader = r
					break
				}
			}
			if st.Leader < 0 && needLeader {
				ok = false
				return st, false
			}
		}
		st.ISR = filter(st.ISR, func(r int32) bool { return slices.Contains(reps, r) })
		return st, true
	})
	if err != nil || !ok {
		return ok, err
	}
	c.sendLeaderAndIsr(nil, changed, false)
	c.sendStopReplica(tp, removed)
	c.sendUpdateMetadata(c.liveIDs(), []TopicPartition{tp})
	return true, nil
}

// sendStopReplica tells each live broker of ids to stop and delete its
// replica of tp.
func (c *controller) sendStopReplica(tp TopicPartition, ids []int32) {
	for _, to := range ids {
		if _, ok := c.live[to]; !ok {
			continue // its log stays until it is back and asked again
		}
		req := kmsgStopReplicaDelete(c, to, tp)
		c.enqueue(to, req)
	}
}

// kmsgStopReplicaDelete is a StopReplica with delete for broker to's
// replica of tp, with Kafka's EpochDuringDelete (-2) as leader epoch.
func kmsgStopReplicaDelete(c *controller, to int32, tp TopicPartition) *kmsg.StopReplicaRequest {
	ps := kmsg.NewStopReplicaRequestTopicPartitionState()
	ps.Partition, ps.Delete, ps.LeaderEpoch = tp.Partition, true, -2
	req := kmsg.NewPtrStopReplicaRequest()
	req.Version = StopReplicaVersion
	req.ControllerID, req.ControllerEpoch = c.n.opts.BrokerID, c.epoch
	req.BrokerEpoch = c.live[to].Epoch
	st := kmsg.NewStopReplicaRequestTopic()
	st.Topic, st.PartitionStates = tp.Topic, []kmsg.StopReplicaRequestTopicPartitionState{ps}
	req.Topics = []kmsg.StopReplicaRequestTopic{st}
	return req
}

// checkReassignments completes the moves among tps whose target replicas
// are now all in sync (Kafka's PartitionReassignmentIsrChangeHandler).
func (c *controller) checkReassignments(tps []TopicPartition) error {
	for _, tp := range tps {
		if !c.assignmentOf(tp).beingReassigned() || !c.reassignmentComplete(tp) {
			continue
		}
		if err := c.completeReassignment(tp); err != nil {
			return err
		}
	}
	return nil
}

// onReassignEvent handles /admin/reassign_partitions changing, and a
// retry after a move failed half-way: a new request starts, and the moves
// whose target replicas are in sync complete.
func (c *controller) onReassignEvent() error {
	if _, err := c.onZkReassignment(); err != nil {
		return err
	}
	return c.checkReassignments(c.reassigning())
}

// resumeReassignments runs every move in the context again (at failover,
// Kafka's initializePartitionReassignments): /admin/reassign_partitions
// first, then the moves found in the topic znodes.
func (c *controller) resumeReassignments() error {
	fromZk, err := c.onZkReassignment()
	if err != nil {
		return err
	}
	for _, tp := range c.reassigning() {
		if fromZk[tp] || c.states[tp] == nil {
			continue
		}
		if err := c.onPartitionReassignment(tp, c.assignmentOf(tp)); err != nil {
			return err
		}
	}
	return nil
}

// onZkReassignment reads /admin/reassign_partitions (arming a watch on its
// existence) and starts the moves it asks for. Entries that fail leave the
// znode with a log line. It returns the partitions it started.
func (c *controller) onZkReassignment() (map[TopicPartition]bool, error) {
	ok, stat, ch, err := c.n.zk.existsW(reassignPath)
	if err != nil {
		return nil, err
	}
	c.watchFor(ch, evReassignPartitions, "")
	// As Kafka's PartitionReassignmentHandler, only a new znode is a new
	// request: the controller's own edits of it change nothing.
	if !ok || stat.Czxid == c.zkReassignCzxid {
		return nil, nil
	}
	data, _, err := c.n.zk.get(reassignPath)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	c.zkReassignCzxid = stat.Czxid // a failure below clears it for the retry
	order, targets, err := parseReassignZNode(data)
	if err != nil {
		c.log.Error("cluster: ignoring and deleting an unreadable reassignment request", "path", reassignPath, "err", err)
		if err := c.n.zk.delete(reassignPath, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return nil, err
		}
		return nil, nil
	}
	started := map[TopicPartition]bool{}
	failed := map[TopicPartition]bool{}
	for _, tp := range order {
		err := c.validateReassignment(tp, targets[tp])
		if err == nil {
			err = c.triggerReassignment(tp, c.assignmentOf(tp).reassignTo(targets[tp]))
		}
		if errors.Is(err, ErrControllerMoved) || retryable(err) && !errors.Is(err, ErrInvalidReplicaAssignment) && !errors.Is(err, ErrTopicNotFound) {
			c.zkReassignCzxid = 0
			return started, err
		}
		if err != nil {
			c.log.Warn("cluster: reassignment through zookeeper failed", "partition", tp.String(), "err", err)
			failed[tp] = true
			continue
		}
		started[tp] = true
	}
	// Entries done or failed leave the znode (completed ones already did,
	// unless they completed before they were written back).
	err = c.removeFromZkReassignment(func(tp TopicPartition) bool {
		return failed[tp] || started[tp] && !c.assignmentOf(tp).beingReassigned()
	})
	return started, err
}

// removeFromZkReassignment drops the entries of /admin/reassign_partitions
// for which drop is true, deleting the znode when none is left (Kafka's
// maybeRemoveFromZkReassignment).
func (c *controller) removeFromZkReassignment(drop func(TopicPartition) bool) error {
	for attempt := 0; attempt < 10; attempt++ {
		data, stat, err := c.n.zk.get(reassignPath)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		order, targets, err := parseReassignZNode(data)
		if err != nil {
			return nil // onZkReassignment deletes it
		}
		keep := filterTPs(order, func(tp TopicPartition) bool { return !drop(tp) })
		switch {
		case len(keep) == len(order) && len(keep) > 0:
			return nil
		case len(keep) == 0:
			err = c.n.zk.delete(reassignPath, stat.Version)
		default:
			_, err = c.n.zk.set(reassignPath, encodeReassignZNode(keep, targets), stat.Version)
		}
		if errors.Is(err, zk.ErrBadVersion) {
			continue
		}
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		return err
	}
	return fmt.Errorf("cluster: %s keeps changing", reassignPath)
}

func filterTPs(tps []TopicPartition, keep func(TopicPartition) bool) []TopicPartition {
	out := make([]TopicPartition, 0, len(tps))
	for _, tp := range tps {
		if keep(tp) {
			out = append(out, tp)
		}
	}
	return out
}

// listReassignments is ListPartitionReassignments on the event loop: the
// moves among tps (nil: all), partitions not moving left out.
func (c *controller) listReassignments(tps []TopicPartition) []PartitionReassignment {
	if tps == nil {
		tps = c.reassigning()
	}
	var out []PartitionReassignment
	for _, tp := range tps {
		a := c.assignmentOf(tp)
		if !a.beingReassigned() {
			continue
		}
		out = append(out, PartitionReassignment{TopicPartition: tp, Replicas: slices.Clone(a.replicas),
			Adding: slices.Clone(a.adding), Removing: slices.Clone(a.removing)})
	}
	return out
}

// ctlCall is a request of another goroutine to run on the active
// controller's event loop.
type ctlCall struct {
	fn   func(c *controller) error
	done chan error
}

// callController runs fn on the event loop while this node is the
// controller. Errors: ErrNotController, ErrClosed, ctx's, or fn's.
func (n *Node) callController(ctx context.Context, fn func(c *controller) error) error {
	call := &ctlCall{fn: fn, done: make(chan error, 1)}
	n.post(event{kind: evControllerCall, call: call})
	select {
	case err := <-call.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-n.ctx.Done():
		return ErrClosed
	}
}

// AlterPartitionReassignments starts, changes or cancels partition moves
// on the controller (Kafka's AlterPartitionReassignments): targets[tp] is
// the new replica list, nil to cancel. Each partition's result is nil or
// an error wrapping ErrInvalidReplicaAssignment, ErrNoReassignmentInProgress,
// ErrTopicNotFound or a ZooKeeper failure (the move is resumed). The call
// fails with ErrNotController on any other broker, or ErrClosed.
func (n *Node) AlterPartitionReassignments(ctx context.Context, targets map[TopicPartition][]int32) (map[TopicPartition]error, error) {
	var res map[TopicPartition]error
	err := n.callController(ctx, func(c *controller) error {
		var err error
		res, err = c.alterReassignments(targets)
		return err
	})
	return res, err
}

// ListPartitionReassignments returns the moves in progress among tps (nil:
// all), from the controller's context. ErrNotController on other brokers.
func (n *Node) ListPartitionReassignments(ctx context.Context, tps []TopicPartition) ([]PartitionReassignment, error) {
	var res []PartitionReassignment
	err := n.callController(ctx, func(c *controller) error {
		res = c.listReassignments(tps)
		return nil
	})
	return res, err
}
