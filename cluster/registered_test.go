package cluster

import (
	"sync/atomic"
	"testing"
)

// Registered is false from a session expiry until the new session has
// registered again; BrokerEpoch alone (never reset) cannot tell.
func TestRegisteredAcrossSessionExpiry(t *testing.T) {
	var node atomic.Pointer[Node]
	var atExpiry atomic.Int32 // 0 not seen, 1 registered, 2 not registered
	var renewed atomic.Int32
	tc := newTestCluster(t, 1, func(o *Options) {
		o.OnSessionExpired = func() {
			if n := node.Load(); n != nil && atExpiry.Load() == 0 {
				if n.Registered() {
					atExpiry.Store(1)
				} else {
					atExpiry.Store(2)
				}
			}
		}
		o.OnSessionReestablished = func(int64) { renewed.Add(1) }
	})
	n := tc.nodes[1]
	node.Store(n)
	if !n.Registered() {
		t.Fatal("not registered after start")
	}
	sid, pw := sessionCreds(n)
	if err := tc.zk.ExpireSession(sid, pw); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "re-registration", func() bool { return renewed.Load() > 0 })
	if got := atExpiry.Load(); got != 2 {
		t.Errorf("Registered at the session expiry: state %d, want 2 (false)", got)
	}
	if !n.Registered() || n.BrokerEpoch() <= 0 {
		t.Errorf("after re-registration: Registered %v, epoch %d", n.Registered(), n.BrokerEpoch())
	}
}
