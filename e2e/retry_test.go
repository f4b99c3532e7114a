package e2e

// Retrying forms of the one-shot cluster queries. A single Metadata request
// can fail or time out on a loaded machine; a test that ignored the failure
// would go on with a zero value (broker 0, no followers, "0 brokers") and
// fail far from the cause, or panic. These retry until an answer comes and
// fail the test with a clear message after 30 s.

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// retryWithin bounds every retrying query here.
const retryWithin = 30 * time.Second

// retry calls try every 100 ms until it returns true, failing the test
// after retryWithin with what and the cluster's state.
func (c *testCluster) retry(what string, try func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(retryWithin)
	for !try() {
		if time.Now().After(deadline) {
			c.t.Fatalf("no answer after %v: %s\n%s\n%s", retryWithin, what, c.metadataViews(), c.logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// mustPartition returns topic's partition p as a running broker sees it,
// once it has a leader that is one of the cluster's brokers.
func (c *testCluster) mustPartition(topic string, p int32) kadm.PartitionDetail {
	c.t.Helper()
	var pd kadm.PartitionDetail
	c.retry(fmt.Sprintf("metadata of %s-%d with a leader", topic, p), func() bool {
		var ok bool
		pd, ok = c.partition(topic, p)
		return ok && c.brokers[pd.Leader] != nil
	})
	return pd
}

// okViews returns every running broker's metadata view, once all of them
// answered without error.
func (c *testCluster) okViews() []view {
	c.t.Helper()
	var vs []view
	c.retry("metadata from every running broker", func() bool {
		vs = c.views()
		for _, v := range vs {
			if v.err != nil {
				return false
			}
		}
		return len(vs) > 0
	})
	return vs
}

// controllerID returns the controller's id, once every running broker
// answers Metadata and they all name the same controller, one of the
// cluster's brokers.
func (c *testCluster) controllerID() int32 {
	c.t.Helper()
	var ctrl int32 = -1
	c.retry("a controller every running broker agrees on", func() bool {
		vs := c.views()
		if len(vs) == 0 {
			return false
		}
		ctrl = vs[0].controller
		for _, v := range vs {
			if v.err != nil || v.controller != ctrl {
				return false
			}
		}
		return c.brokers[ctrl] != nil
	})
	return ctrl
}
