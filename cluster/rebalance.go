package cluster

import (
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
