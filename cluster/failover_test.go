package cluster

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ledBy returns the partitions of a topic whose state names leader id.
func (tc *testCluster) ledBy(topic string, n int, id int32) []int32 {
	var out []int32
	for p := int32(0); p < int32(n); p++ {
		if st, _ := tc.state(topic, p); st.Leader == id {
			out = append(out, p)
		}
	}
	return out
}

func TestBrokerFailureElectsFromISR(t *testing.T) {
	tc := newTestCluster(t, 3, nil)
	ctl := tc.controller()
	victim := tc.anyNonController(ctl).BrokerID()
	as := tc.createTopic(ctl, "t", 3, 3)
	led := tc.ledBy("t", 3, victim)
	if len(led) != 1 {
		t.Fatalf("victim %d leads %v of %v", victim, led, as)
	}
	tc.stop(victim)

	waitFor(t, "victim out of every ISR", func() bool {
		for p := int32(0); p < 3; p++ {
			if st, _ := tc.state("t", p); slices.Contains(st.ISR, victim) {
				return false
			}
		}
		return true
	})
	for p := int32(0); p < 3; p++ {
		st, _ := tc.state("t", p)
		if st.Leader == victim || st.Leader < 0 || !slices.Contains(st.ISR, st.Leader) || len(st.ISR) != 2 {
			t.Errorf("partition %d after failure: %+v", p, st)
		}
		if st.LeaderEpoch != 1 {
			t.Errorf("partition %d leader epoch %d, want 1", p, st.LeaderEpoch)
		}
		if p == led[0] {
			// The next replica in assignment order takes over.
			if want := as[p][1]; st.Leader != want {
				t.Errorf("partition %d new leader %d, want %d (replicas %v)", p, st.Leader, want, as[p])
			}
		}
	}
	for id := range tc.nodes {
		waitFor(t, "caches see the new leader", func() bool {
			pi, _ := tc.cache(id).Partition("t", led[0])
			return pi.Leader != victim && slices.Equal(pi.OfflineReplicas, []int32{victim}) && len(tc.cache(id).Brokers()) == 2
		})
	}

	// The broker returns: it gets everything and follows its partitions;
	// leadership and ISR stay until a leader adds it back.
	before := len(requestsTo[*kmsg.LeaderAndISRRequest](tc.net, victim))
	tc.start(victim)
	waitFor(t, "returning broker's cache", func() bool {
		return len(tc.cache(victim).Partitions("t")) == 3 && len(tc.cache(victim).Brokers()) == 3
	})
	waitFor(t, "LeaderAndIsr to returning broker", func() bool {
		return len(requestsTo[*kmsg.LeaderAndISRRequest](tc.net, victim)) > before
	})
}

func TestControllerFailureElectsItsPartitions(t *testing.T) {
	tc := newTestCluster(t, 3, nil)
	ctl := tc.controller()
	tc.createTopic(ctl, "t", 3, 3)
	led := tc.ledBy("t", 3, ctl.BrokerID())
	tc.stop(ctl.BrokerID())
	tc.controller()
	waitFor(t, "new leader of the old controller's partition", func() bool {
		st, _ := tc.state("t", led[0])
		return st.Leader >= 0 && st.Leader != ctl.BrokerID()
	})
}

// shrinkISR has the leader of p write an ISR of only itself, as a leader
// whose followers fell behind does.
func (tc *testCluster) shrinkISR(topic string, p int32) int32 {
	tc.t.Helper()
	var leader int32
	waitFor(tc.t, "ISR shrink", func() bool {
		n := tc.nodes[1]
		st, v, err := n.ReadPartitionState(topic, p)
		if err != nil {
			tc.t.Fatal(err)
		}
		leader = st.Leader
		st.ISR = []int32{st.Leader}
		_, err = tc.nodes[leader].WritePartitionState(context.Background(), topic, p, st, v)
		return err == nil
	})
	// The controller broadcasts the change and deletes the notification.
	for id := range tc.nodes {
		waitFor(tc.t, "ISR change in caches", func() bool {
			pi, _ := tc.cache(id).Partition(topic, p)
			return slices.Equal(pi.ISR, []int32{leader})
		})
	}
	waitFor(tc.t, "notifications consumed", func() bool {
		kids, _, _ := tc.client.Children("/sluice" + isrChangePath)
		return len(kids) == 0
	})
	return leader
}

// expandISR has the partition's leader take id back into the ISR, as
// replication does when a follower catches up (the fake network runs no
// replication), with the leader's version-guarded write.
func (tc *testCluster) expandISR(topic string, p, id int32) {
	tc.t.Helper()
	waitFor(tc.t, fmt.Sprintf("broker %d back in the ISR of %s-%d", id, topic, p), func() bool {
		st, v, err := tc.nodes[1].ReadPartitionState(topic, p)
		if err != nil {
			tc.t.Fatal(err)
		}
		if slices.Contains(st.ISR, id) {
			return true
		}
		st.ISR = append(st.ISR, id)
		_, err = tc.nodes[st.Leader].WritePartitionState(context.Background(), topic, p, st, v)
		return err == nil
	})
}

func TestUncleanElection(t *testing.T) {
	for _, unclean := range []bool{false, true} {
		t.Run(map[bool]string{false: "disabled", true: "enabled"}[unclean], func(t *testing.T) {
			tc := newTestCluster(t, 3, func(o *Options) { o.UncleanLeaderElection = unclean })
			tc.controller()
			as := tc.createTopic(tc.nodes[1], "t", 1, 2)
			leader := tc.shrinkISR("t", 0)
			follower := as[0][0] + as[0][1] - leader
			tc.stop(leader)
			// The remaining nodes include the out-of-sync follower.
			waitFor(t, "failure handled", func() bool {
				pi, _ := tc.cache(follower).Partition("t", 0)
				return slices.Contains(pi.OfflineReplicas, leader)
			})
			st, _ := tc.state("t", 0)
			if !unclean {
				if st.Leader != -1 || !slices.Equal(st.ISR, []int32{leader}) {
					t.Fatalf("clean only: state %+v, want offline with ISR [%d]", st, leader)
				}
				// The in-sync replica returns and leads again.
				tc.start(leader)
				waitFor(t, "clean leader back", func() bool {
					st, _ := tc.state("t", 0)
					return st.Leader == leader
				})
				return
			}
			if st.Leader != follower || !slices.Equal(st.ISR, []int32{follower}) {
				t.Fatalf("unclean: state %+v, want leader %d alone in ISR", st, follower)
			}
		})
	}
}

func TestControlledShutdownMovesLeadershipFirst(t *testing.T) {
	tc := newTestCluster(t, 3, nil)
	ctl := tc.controller()
	tc.createTopic(ctl, "t", 3, 3)
	x := tc.anyNonController(ctl)
	id := x.BrokerID()
	if len(tc.ledBy("t", 3, id)) != 1 {
		t.Fatal("broker should lead one partition")
	}
	rem, err := x.ControlledShutdown(context.Background())
	if err != nil || len(rem) != 0 {
		t.Fatalf("controlled shutdown: %v %v", rem, err)
	}
	// Done when the call returns: states already moved.
	for p := int32(0); p < 3; p++ {
		st, _ := tc.state("t", p)
		if st.Leader == id || slices.Contains(st.ISR, id) || st.Leader < 0 {
			t.Errorf("partition %d after controlled shutdown: %+v", p, st)
		}
	}
	// Another call from the same broker is idempotent; a stale epoch is refused.
	if rem, err := ctl.HandleControlledShutdown(id, x.BrokerEpoch()); err != nil || len(rem) != 0 {
		t.Errorf("again: %v %v", rem, err)
	}
	if _, err := ctl.HandleControlledShutdown(id, x.BrokerEpoch()-1); err == nil {
		t.Error("stale broker epoch accepted")
	}
	if _, err := x.HandleControlledShutdown(id, -1); err == nil {
		t.Error("non-controller handled a controlled shutdown")
	}
	tc.stop(id)
}

func TestStaleControllerIsFenced(t *testing.T) {
	tc := newTestCluster(t, 3, nil)
	ctl := tc.controller()
	e := tc.epoch()
	tc.createTopic(ctl, "t", 3, 3)
	victim := tc.anyNonController(ctl).BrokerID()
	p := tc.ledBy("t", 3, victim)[0]

	// Another controller got a newer epoch behind this one's back.
	if _, err := tc.client.Set("/sluice"+controllerEpochPath, []byte("1000"), -1); err != nil {
		t.Fatal(err)
	}
	tc.stop(victim)
	// The old controller's election write for p fails its epoch check; it
	// resigns and a fresh election (epoch 1001) takes over and elects.
	waitFor(t, "partition elected by a newer controller", func() bool {
		st, _ := tc.state("t", p)
		return st.Leader >= 0 && st.Leader != victim
	})
	st, _ := tc.state("t", p)
	if st.ControllerEpoch <= 1000 {
		t.Fatalf("state written with controller epoch %d (old %d): the stale controller was not fenced", st.ControllerEpoch, e)
	}
	tc.controller()
}

// sessionCreds returns a node's ZooKeeper session id and password.
func sessionCreds(n *Node) (int64, []byte) {
	return n.zk.conn.SessionID(), reflect.ValueOf(n.zk.conn).Elem().FieldByName("passwd").Bytes()
}

func TestSessionExpiryReRegisters(t *testing.T) {
	// Counted per broker (ids 1..3): on a loaded machine a node's session
	// can also expire on its own, which must not be mistaken for, or hide,
	// the expiries this test causes.
	var expired, renewed [4]atomic.Int32
	tc := newTestCluster(t, 3, func(o *Options) {
		id := o.BrokerID
		o.OnSessionExpired = func() { expired[id].Add(1) }
		o.OnSessionReestablished = func(int64) { renewed[id].Add(1) }
	})
	ctl := tc.controller()
	tc.createTopic(ctl, "t", 3, 3)

	victims := []*Node{tc.anyNonController(ctl), ctl}
	for _, n := range victims {
		oldEpoch := n.BrokerEpoch()
		e := tc.epoch()
		before := renewed[n.BrokerID()].Load()
		sid, pw := sessionCreds(n)
		if err := tc.zk.ExpireSession(sid, pw); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "re-registration", func() bool {
			if renewed[n.BrokerID()].Load() == before {
				return false
			}
			_, stat, err := tc.client.Get("/sluice" + brokerPath(n.BrokerID()))
			return err == nil && stat.Czxid == n.BrokerEpoch() && stat.EphemeralOwner == n.zk.conn.SessionID()
		})
		if n.BrokerEpoch() == oldEpoch {
			t.Fatal("broker epoch unchanged")
		}
		// The controller saw the broker bounce and told it everything again.
		tc.controller()
		waitFor(t, "controller knows the new broker epoch", func() bool {
			reqs := requestsTo[*kmsg.UpdateMetadataRequest](tc.net, n.BrokerID())
			return len(reqs) > 0 && reqs[len(reqs)-1].BrokerEpoch == n.BrokerEpoch()
		})
		if n == ctl && tc.epoch() <= e {
			t.Fatalf("controller epoch %d after the controller's session expired, was %d", tc.epoch(), e)
		}
	}
	// Each expired session was reported once: every node's expiries match
	// its re-registrations (each follows one expiry), and each victim's
	// session expired. A node whose session expired on its own is logged.
	waitFor(t, "OnSessionExpired once per re-registration on every node", func() bool {
		for id := 1; id <= 3; id++ {
			if expired[id].Load() != renewed[id].Load() {
				return false
			}
		}
		return true
	})
	for _, n := range victims {
		if got := expired[n.BrokerID()].Load(); got < 1 {
			t.Errorf("OnSessionExpired called %d times for broker %d, whose session was expired", got, n.BrokerID())
		}
	}
	for id := 1; id <= 3; id++ {
		t.Logf("broker %d: OnSessionExpired %d, OnSessionReestablished %d", id, expired[id].Load(), renewed[id].Load())
	}
	// The cluster still works.
	tc.createTopic(tc.nodes[2], "after", 2, 3)
}
