package cluster

import (
	"context"
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
		waitFor(t, "ISR expansion written", func() bool {
			st, v, err := ctl.ReadPartitionState("r", p)
			if err != nil {
				t.Fatal(err)
			}
			if slices.Contains(st.ISR, victim) {
				return true
			}
			st.ISR = append(st.ISR, victim)
			_, err = tc.nodes[st.Leader].WritePartitionState(context.Background(), "r", p, st, v)
			return err == nil
		})
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
