package cluster

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestPreferredLeaderRebalance: a broker that died and came back leads
// none of its preferred partitions; the periodic check gives them back
// once it is in the ISR again, never before.
func TestPreferredLeaderRebalance(t *testing.T) {
	const check = 200 * time.Millisecond
	tc := newTestCluster(t, 3, func(o *Options) {
		o.AutoLeaderRebalance, o.LeaderImbalanceCheck, o.LeaderImbalancePercentage = true, check, 10
	})
	ctl := tc.controller()
	victim := tc.anyNonController(ctl).BrokerID()
	as := tc.createTopic(ctl, "r", 3, 3)
	var preferred []int32 // partitions whose first replica is the victim
	for p, reps := range as {
		if reps[0] == victim {
			preferred = append(preferred, int32(p))
		}
	}
	if len(preferred) == 0 || !slices.Equal(tc.ledBy("r", 3, victim), preferred) {
		t.Fatalf("victim %d prefers %v, leads %v (assignment %v)", victim, preferred, tc.ledBy("r", 3, victim), as)
	}
	tc.stop(victim)
	waitFor(t, "leadership moved off the victim", func() bool { return len(tc.ledBy("r", 3, victim)) == 0 })
	tc.start(victim)

	// Back, but not in the ISR (no replication here): several checks
	// pass and it must not be elected.
	time.Sleep(5 * check)
	if led := tc.ledBy("r", 3, victim); len(led) != 0 {
		t.Fatalf("victim %d elected for %v while out of the ISR", victim, led)
	}

	// Its leaders take it back into the ISR, as replication would.
	for _, p := range preferred {
		tc.expandISR("r", p, victim)
	}
	before := len(requestsTo[*kmsg.LeaderAndISRRequest](tc.net, victim))
	waitFor(t, "preferred leaders back", func() bool { return slices.Equal(tc.ledBy("r", 3, victim), preferred) })
	for _, p := range preferred {
		st, _ := tc.state("r", p)
		if !slices.Contains(st.ISR, victim) || len(st.ISR) != 3 {
			t.Fatalf("partition %d after the election: %+v", p, st)
		}
	}
	waitFor(t, "LeaderAndIsr to the new leader", func() bool {
		return len(requestsTo[*kmsg.LeaderAndISRRequest](tc.net, victim)) > before
	})
	for id := range tc.nodes {
		waitFor(t, "caches see the preferred leader", func() bool {
			pi, _ := tc.cache(id).Partition("r", preferred[0])
			return pi.Leader == victim
		})
	}
}

// TestElectLeaders: the ElectLeaders API on the controller. Preferred: not
// needed while the preferred replica leads, not available while it is out
// of the ISR, elected once it is back in; unclean: elects an out-of-sync
// live replica only for a partition without a leader. Other brokers answer
// ErrNotController.
func TestElectLeaders(t *testing.T) {
	tc := newTestCluster(t, 3, nil) // no automatic rebalance
	ctl := tc.controller()
	victim := tc.anyNonController(ctl).BrokerID()
	as := tc.createTopic(ctl, "e", 3, 3)
	var p int32 = -1 // a partition the victim prefers
	for i, reps := range as {
		if reps[0] == victim {
			p = int32(i)
		}
	}
	if p < 0 {
		t.Fatalf("victim %d prefers no partition of %v", victim, as)
	}
	tp := TopicPartition{Topic: "e", Partition: p}
	ctx := context.Background()
	if _, err := tc.anyNonController(ctl).ElectLeaders(ctx, nil, false); !errors.Is(err, ErrNotController) {
		t.Fatalf("ElectLeaders on a non-controller: %v", err)
	}
	res, err := ctl.ElectLeaders(ctx, []TopicPartition{tp, {Topic: "e", Partition: 9}, {Topic: "none", Partition: 0}}, false)
	if err != nil || !errors.Is(res[tp], ErrElectionNotNeeded) || !errors.Is(res[TopicPartition{Topic: "e", Partition: 9}], ErrTopicNotFound) ||
		!errors.Is(res[TopicPartition{Topic: "none", Partition: 0}], ErrTopicNotFound) {
		t.Fatalf("before any failure: %v %v", res, err)
	}
	tc.stop(victim)
	waitFor(t, "leadership moved off the victim", func() bool { return len(tc.ledBy("e", 3, victim)) == 0 })
	tc.start(victim)
	res, err = ctl.ElectLeaders(ctx, []TopicPartition{tp}, false)
	if err != nil || !errors.Is(res[tp], ErrPreferredLeaderNotAvailable) {
		t.Fatalf("victim out of the ISR: %v %v", res, err)
	}
	tc.expandISR("e", p, victim)
	waitFor(t, "the controller sees the ISR change", func() bool {
		res, err = ctl.ElectLeaders(ctx, []TopicPartition{tp}, false)
		return err == nil && res[tp] == nil
	})
	if st, _ := tc.state("e", p); st.Leader != victim {
		t.Fatalf("after the election: %+v, want leader %d", st, victim)
	}
	// Unclean: every partition has a live leader, so none is needed.
	res, err = ctl.ElectLeaders(ctx, nil, true)
	if err != nil || len(res) != 3 {
		t.Fatalf("unclean over all partitions: %v %v", res, err)
	}
	for tp, e := range res {
		if !errors.Is(e, ErrElectionNotNeeded) {
			t.Errorf("unclean %s: %v, want ErrElectionNotNeeded", tp, e)
		}
	}
	// A partition whose only in-sync replica dies has no leader (unclean
	// election is off); an unclean ElectLeaders elects a live replica.
	// Pick one led by neither the victim nor the controller (stopping the
	// controller would end its term).
	q := int32(-1)
	for i := int32(0); i < 3; i++ {
		if st, _ := tc.state("e", i); st.Leader != victim && st.Leader != ctl.BrokerID() {
			q = i
		}
	}
	if q < 0 {
		t.Fatalf("no partition led by the third broker")
	}
	leader := tc.shrinkISR("e", q)
	tc.stop(leader)
	waitFor(t, "a leaderless partition", func() bool { st, _ := tc.state("e", q); return st.Leader == -1 })
	uq := TopicPartition{Topic: "e", Partition: q}
	res, err = ctl.ElectLeaders(ctx, []TopicPartition{uq}, true)
	if err != nil || res[uq] != nil {
		t.Fatalf("unclean election of %s: %v %v", uq, res, err)
	}
	if st, _ := tc.state("e", q); st.Leader < 0 || st.Leader == leader || !slices.Equal(st.ISR, []int32{st.Leader}) {
		t.Fatalf("after the unclean election: %+v", st)
	}
}
