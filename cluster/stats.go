package cluster

import "sync/atomic"

// ControllerStats is what the controller knows of the cluster, for the
// broker's kafka_controller_kafkacontroller_* gauges. Only the active
// controller reports counts; elsewhere they are 0, as in Kafka.
type ControllerStats struct {
	Active bool
	// Topics and Partitions count what the controller manages;
	// OfflinePartitions those without a live leader.
	Topics, Partitions, OfflinePartitions int
}

// controllerStats is published by the event loop after every event and
// read by scrapes; a copy of the loop's state, so readers take no lock the
// loop holds.
type controllerStats struct {
	v atomic.Pointer[ControllerStats]
}

// ControllerStats returns the controller's counts as of its last event.
// Safe for concurrent use.
func (n *Node) ControllerStats() ControllerStats {
	if st := n.ctlStats.v.Load(); st != nil && n.isController.Load() {
		return *st
	}
	return ControllerStats{}
}

// publishControllerStats copies the controller's counts for scrapes.
// Runs on the event loop; O(partitions), like the events themselves.
func (n *Node) publishControllerStats() {
	c := n.ctl
	if c == nil {
		n.ctlStats.v.Store(&ControllerStats{})
		return
	}
	st := &ControllerStats{Active: true, Topics: len(c.topics)}
	for _, t := range c.topics {
		st.Partitions += len(t.replicas)
	}
	for _, ps := range c.states {
		if ps.Leader < 0 || !c.isLive(ps.Leader) {
			st.OfflinePartitions++
		}
	}
	n.ctlStats.v.Store(st)
}
