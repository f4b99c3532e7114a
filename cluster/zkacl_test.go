package cluster

import (
	"errors"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-zookeeper/zk"
)

// TestDefaultACL: the ACL of each kind of znode is Kafka's
// ZkData.defaultAcls: open without zookeeper.set.acl; with it, creator-all
// plus world read, creator-only under the sensitive roots (matched by
// string prefix as Kafka does), and /consumers open.
func TestDefaultACL(t *testing.T) {
	for _, tc := range []struct {
		path   string
		secure bool
		want   []zk.ACL
	}{
		{"/brokers/ids/1", false, openACL},
		{"/config/users/alice", false, openACL},
		{"/brokers/ids/1", true, secureACL},
		{"/controller", true, secureACL},
		{"/kafka-acl/Topic/t", true, secureACL},
		{"/config/topics/t", true, secureACL},
		{"/config/changes/config_change_0000000001", true, secureACL},
		{"/config/users", true, sensitiveACL},
		{"/config/users/alice", true, sensitiveACL},
		{"/config/users/alice/clients/c", true, sensitiveACL},
		{"/config/brokers/<default>", true, sensitiveACL},
		{"/delegation_token/tokens/x", true, sensitiveACL},
		{"/delegation_token", true, secureACL},
		{"/consumers", true, openACL},
		{"/consumers/g", true, secureACL}, // Kafka opens /consumers itself only
	} {
		if got := defaultACL(tc.secure, tc.path); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("defaultACL(%v, %s) = %+v, want %+v", tc.secure, tc.path, got, tc.want)
		}
	}
}

// TestSecureACLAcrossSessionExpiry: after its session expires, a broker
// with zookeeper.set.acl authenticates the new session again (go-zookeeper
// resends the digest), so it registers again with its identity's ACL and
// keeps creating znodes; without the identity, ZooKeeper would refuse the
// "auth" ACL (InvalidACL).
func TestSecureACLAcrossSessionExpiry(t *testing.T) {
	const digest = "sluice:broker-secret"
	var renewed atomic.Int32
	tc := newTestCluster(t, 1, func(o *Options) {
		o.ZkSecurity = ZkSecurity{SetACL: true, Digest: digest}
		o.OnSessionReestablished = func(int64) { renewed.Add(1) }
	})
	n := tc.nodes[1]
	sid, pw := sessionCreds(n)
	if err := tc.zk.ExpireSession(sid, pw); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "re-registration", func() bool { return renewed.Load() > 0 && n.Registered() })
	// (ZooKeeper hides the digest's hash from a client without ADMIN.)
	acls, _, err := tc.client.GetACL("/sluice/brokers/ids/1")
	if err != nil || len(acls) != 2 || acls[0].Scheme != "digest" || !strings.HasPrefix(acls[0].ID, "sluice:") {
		t.Fatalf("ACL of the new registration: %+v %v, want the brokers' digest identity and world read", acls, err)
	}
	tc.createTopic(n, "after-expiry", 1, 1)
	if _, err := tc.client.Set("/sluice/brokers/topics/after-expiry", []byte("{}"), -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("unauthenticated set of a topic created after the expiry: %v, want ErrNoAuth", err)
	}
}
