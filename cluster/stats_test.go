package cluster

import (
	"sync"
	"testing"
	"time"
)

// TestControllerStatsLazy: the controller's counts are recounted when a
// scrape asks after events, not after every event (a walk of every
// partition per event), and a scrape sees what the events did.
func TestControllerStatsLazy(t *testing.T) {
	// The race detector on a loaded machine can keep the event loop busy
	// past the production wait; this test is about what is counted.
	old := controllerStatsWait
	controllerStatsWait = time.Minute
	t.Cleanup(func() { controllerStatsWait = old })
	tc := newTestCluster(t, 3, nil)
	ctl := tc.controller()
	other := tc.anyNonController(ctl)
	if st := other.ControllerStats(); st != (ControllerStats{}) {
		t.Fatalf("a non-controller reports %+v", st)
	}
	if st := ctl.ControllerStats(); !st.Active || st.Topics != 0 {
		t.Fatalf("controller before any topic: %+v", st)
	}
	before := ctl.ctlStats.computed.Load()
	tc.createTopic(other, "orders", 6, 3)
	tc.createTopic(other, "events", 4, 3)
	waitFor(t, "the topics in the controller's metadata", func() bool {
		_, ok := tc.cache(ctl.BrokerID()).Partition("events", 3)
		return ok
	})
	if n := ctl.ctlStats.computed.Load() - before; n != 0 {
		t.Errorf("%d recounts during the events with no scrape, want 0", n)
	}
	// The broker caches can show a topic before the controller's own event
	// for it has run (ZooKeeper watches race): the counts catch up once it
	// has.
	waitFor(t, "the controller's counts of the topics", func() bool {
		st := ctl.ControllerStats()
		return st.Topics == 2 && st.Partitions == 10
	})
	after := ctl.ctlStats.computed.Load()
	if after-before < 1 {
		t.Errorf("%d recounts for the scrapes after the events, want >= 1", after-before)
	}
	// Concurrent scrapes (run with -race) all see the same counts.
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if st := ctl.ControllerStats(); st.Topics != 2 || st.Partitions != 10 || st.OfflinePartitions != 0 {
				t.Errorf("controller after 2 topics: %+v", st)
			}
		}()
	}
	wg.Wait()
	after = ctl.ctlStats.computed.Load()
	ctl.ControllerStats()
	if n := ctl.ctlStats.computed.Load() - after; n != 0 {
		t.Errorf("%d recounts for a scrape with no event since, want 0", n)
	}
}
