package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Preferred-leader election, Kafka's auto.leader.rebalance.enable: a
// partition's preferred leader is the first replica of its assignment, and
// the assignment spreads those across brokers. Failures move leadership to
// other replicas and nothing moves it back, so after a rolling restart one
// broker can lead everything. Every LeaderImbalanceCheck the controller
// counts, for each live broker, the partitions it prefers but does not
// lead; when that is more than LeaderImbalancePercentage of the partitions
// it prefers, it elects the broker leader of those where it is in the ISR
// (so no committed record is lost: an in-sync replica has them all).

// scheduleLeaderRebalance arms the next periodic check of this term, when
// the check is enabled.
func (c *controller) scheduleLeaderRebalance() {
	if !c.n.opts.AutoLeaderRebalance {
		return
	}
	n, term := c.n, c.term
	time.AfterFunc(n.opts.LeaderImbalanceCheck, func() {
		if n.ctx.Err() == nil {
			n.post(event{kind: evAutoLeaderRebalance, term: term})
		}
	})
}

// onAutoLeaderRebalance is the periodic check (Kafka's
// checkAndTriggerAutoLeaderRebalance).
func (c *controller) onAutoLeaderRebalance() error {
	preferred := map[int32][]TopicPartition{} // broker -> partitions it prefers
	for tp := range c.states {
		if c.assignmentOf(tp).beingReassigned() {
			continue // as Kafka: not while it moves
		}
		if reps := c.replicas(tp); len(reps) > 1 {
			preferred[reps[0]] = append(preferred[reps[0]], tp)
		}
	}
	var elect []TopicPartition
	for id, tps := range preferred {
		if !c.isLive(id) || c.shuttingDown[id] {
			continue
		}
		var notLed []TopicPartition
		for _, tp := range tps {
			if c.states[tp].Leader != id {
				notLed = append(notLed, tp)
			}
		}
		if len(notLed)*100 > c.n.opts.LeaderImbalancePercentage*len(tps) {
			c.log.Info("cluster: leader imbalance", "broker", id, "not_led", len(notLed), "preferred", len(tps))
			elect = append(elect, notLed...)
		}
	}
	sortTPs(elect)
	_, err := c.electPreferred(elect)
	return err
}

// electPreferred makes each partition of tps led by its preferred replica
// where that replica is live, not shutting down and in the ISR, and
// announces the changes. It returns the partitions whose leader changed.
func (c *controller) electPreferred(tps []TopicPartition) ([]TopicPartition, error) {
	changed, err := c.changeStates(tps, func(tp TopicPartition, st PartitionState) (PartitionState, bool) {
		reps := c.replicas(tp)
		if len(reps) == 0 {
			return st, false
		}
		p := reps[0]
		if st.Leader == p || !c.isLive(p) || c.shuttingDown[p] || !slices.Contains(st.ISR, p) {
			return st, false
		}
		st.Leader = p
		return st, true
	})
	c.announce(changed)
	if len(changed) > 0 {
		c.log.Info("cluster: preferred leaders elected", "partitions", len(changed))
	}
	return changed, err
}

type electReq struct {
	tps     []TopicPartition // nil: every partition
	unclean bool
	reply   chan electReply
}

type electReply struct {
	results map[TopicPartition]error
	err     error
}

// ElectLeaders runs a leader election on the controller (Kafka's
// ElectLeaders API, kafka-leader-election.sh) for tps, or every partition
// when tps is nil. A preferred election makes the preferred replica leader
// where it is live and in sync; an unclean one elects a leader for
// partitions that have none, from the ISR if possible, else from any live
// replica (records may be lost). Each partition's result is nil (elected),
// ErrElectionNotNeeded, ErrPreferredLeaderNotAvailable,
// ErrEligibleLeadersNotAvailable or ErrTopicNotFound. The call fails with
// ErrNotController on any other broker, or ErrClosed.
func (n *Node) ElectLeaders(ctx context.Context, tps []TopicPartition, unclean bool) (map[TopicPartition]error, error) {
	req := &electReq{tps: tps, unclean: unclean, reply: make(chan electReply, 1)}
	n.post(event{kind: evElectLeaders, elect: req})
	select {
	case r := <-req.reply:
		return r.results, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-n.ctx.Done():
		return nil, ErrClosed
	}
}

// electLeaders is ElectLeaders on the event loop.
func (c *controller) electLeaders(tps []TopicPartition, unclean bool) (map[TopicPartition]error, error) {
	if tps == nil {
		tps = c.allPartitions()
	}
	results := make(map[TopicPartition]error, len(tps))
	var todo []TopicPartition
	for _, tp := range tps {
		st := c.states[tp]
		reps := c.replicas(tp)
		switch {
		case st == nil || len(reps) == 0:
			results[tp] = fmt.Errorf("%w: %s", ErrTopicNotFound, tp)
		case unclean && st.Leader >= 0 && c.isLive(st.Leader):
			results[tp] = fmt.Errorf("%w: %s is led by live broker %d", ErrElectionNotNeeded, tp, st.Leader)
		case !unclean && st.Leader == reps[0]:
			results[tp] = fmt.Errorf("%w: %s is led by its preferred replica %d", ErrElectionNotNeeded, tp, reps[0])
		case !unclean && (!c.isLive(reps[0]) || c.shuttingDown[reps[0]] || !slices.Contains(st.ISR, reps[0])):
			results[tp] = fmt.Errorf("%w: %s prefers broker %d, which is not live and in sync (ISR %v)", ErrPreferredLeaderNotAvailable, tp, reps[0], st.ISR)
		default:
			todo = append(todo, tp)
		}
	}
	sortTPs(todo)
	var changed []TopicPartition
	var err error
	if unclean {
		changed, err = c.electLeaderless(todo, true)
	} else {
		changed, err = c.electPreferred(todo)
	}
	done := map[TopicPartition]bool{} // a leader was elected
	for _, tp := range changed {
		done[tp] = c.states[tp] != nil && c.states[tp].Leader >= 0
	}
	for _, tp := range todo {
		switch {
		case done[tp]:
			results[tp] = nil
		case err != nil:
			results[tp] = err
		case unclean:
			results[tp] = fmt.Errorf("%w: %s has no live replica", ErrEligibleLeadersNotAvailable, tp)
		default: // its state changed meanwhile (a version conflict re-read it)
			results[tp] = fmt.Errorf("%w: %s", ErrPreferredLeaderNotAvailable, tp)
		}
	}
	if errors.Is(err, ErrControllerMoved) {
		return results, err
	}
	return results, nil
}
