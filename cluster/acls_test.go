package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/acl/acltest"
	"github.com/sluice/sluice/internal/zktest"
)

// startACLNode starts broker id under chroot of the ZooKeeper at addr,
// on the fake network net, and closes it at the end of the test.
func startACLNode(t *testing.T, net *fakeNet, addr, chroot string, id int32) *Node {
	t.Helper()
	net.mu.Lock()
	net.caches[id] = NewMetadataCache()
	net.mu.Unlock()
	n, err := Start(Options{BrokerID: id, Host: "127.0.0.1", Port: 9000 + id, ZkConnect: addr + chroot,
		SessionTimeout: 6 * time.Second, Logger: testLogger().With("node", id), Send: net.send,
		RequestTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	net.mu.Lock()
	net.nodes[id] = n
	net.mu.Unlock()
	t.Cleanup(func() { n.Close() })
	return n
}

func openACLs(t *testing.T, n *Node) *ACLStore {
	t.Helper()
	s, err := n.OpenACLStore()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestACLStore runs the acl.Store conformance tests, each against a fresh
// chroot of one ZooKeeper.
func TestACLStore(t *testing.T) {
	srv, net := zktest.Start(t), newFakeNet()
	var seq atomic.Int32
	acltest.Run(t, func(t *testing.T) acl.Store {
		n := startACLNode(t, net, srv.Addr(), fmt.Sprintf("/acltest%d", seq.Add(1)), 1)
		return openACLs(t, n)
	})
}

// TestACLStoreTwoBrokers: an ACL added through one broker reaches the
// other broker's watch (and its authorizer) through the change
// notifications, for literal and prefixed patterns; the znodes are
// Kafka's.
func TestACLStoreTwoBrokers(t *testing.T) {
	srv, net := zktest.Start(t), newFakeNet()
	ctx := context.Background()
	n1 := startACLNode(t, net, srv.Addr(), "/sluice", 1)
	n2 := startACLNode(t, net, srv.Addr(), "/sluice", 2)
	s1, s2 := openACLs(t, n1), openACLs(t, n2)
	a2 := acl.New(acl.Config{})
	cancel, err := a2.Follow(ctx, s2)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	host := netip.MustParseAddr("10.0.0.7")
	readOrders := func() bool { return a2.Authorize("User:alice", host, acl.OpRead, acl.ResourceTopic, "orders") }

	lit := acl.ResourcePattern{Type: acl.ResourceTopic, Name: "orders", PatternType: acl.PatternLiteral}
	pre := acl.ResourcePattern{Type: acl.ResourceTopic, Name: "ord", PatternType: acl.PatternPrefixed}
	allowRead := acl.Entry{Principal: "User:alice", Host: "*", Operation: acl.OpRead, Permission: acl.PermissionAllow}
	denyRead := acl.Entry{Principal: "User:alice", Host: "10.0.0.7", Operation: acl.OpRead, Permission: acl.PermissionDeny}

	if err := s1.Add(ctx, []acl.Binding{{Pattern: lit, Entry: allowRead}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "broker 2 allows after a literal allow on broker 1", readOrders)
	if err := s1.Add(ctx, []acl.Binding{{Pattern: pre, Entry: denyRead}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "broker 2 denies after a prefixed deny on broker 1", func() bool { return !readOrders() })

	// Kafka's layout and JSON.
	c := zkConn(t, srv.Addr())
	data, _, err := c.Get("/sluice/kafka-acl/Topic/orders")
	if err != nil || string(data) != `{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read","host":"*"}]}` {
		t.Fatalf("literal znode: %s, %v", data, err)
	}
	if _, _, err := c.Get("/sluice/kafka-acl-extended/prefixed/Topic/ord"); err != nil {
		t.Fatalf("prefixed znode: %v", err)
	}
	for dir, want := range map[string]string{
		"/sluice/kafka-acl-changes":          "TOPIC:orders",
		"/sluice/kafka-acl-extended-changes": `{"version":1,"resourceType":"TOPIC","name":"ord","patternType":"PREFIXED"}`,
	} {
		kids, _, err := c.Children(dir)
		if err != nil || len(kids) == 0 || !strings.HasPrefix(kids[0], "acl_changes_") {
			t.Fatalf("%s: %v, %v", dir, kids, err)
		}
		data, _, _ := c.Get(dir + "/" + kids[0])
		if string(data) != want {
			t.Fatalf("%s/%s = %s, want %s", dir, kids[0], data, want)
		}
	}

	// Removing through broker 2 reaches broker 1's cache.
	if _, err := s2.Remove(ctx, acl.Filter{Pattern: pre.Filter(), Entry: acl.AnyEntry}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "broker 2 allows again", readOrders)
	waitFor(t, "broker 1 sees the removal", func() bool {
		all, _ := s1.All(ctx)
		return slices.Equal(all, []acl.Binding{{Pattern: lit, Entry: allowRead}})
	})
	if _, _, err := c.Get("/sluice/kafka-acl-extended/prefixed/Topic/ord"); !errors.Is(err, zk.ErrNoNode) {
		t.Fatalf("emptied pattern's znode: %v", err)
	}

	// An ACL written by another tool (say kafka-acls.sh on a Kafka broker)
	// with its notification is picked up; a third broker loads it at open.
	if _, err := c.Create("/sluice/kafka-acl/Group/g1", []byte(`{"version":1,"acls":[{"principal":"User:bob","permissionType":"Allow","operation":"Read","host":"*"}]}`), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create("/sluice/kafka-acl-changes/acl_changes_", []byte("GROUP:g1"), zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "broker 2 sees an external ACL", func() bool {
		return a2.Authorize("User:bob", host, acl.OpRead, acl.ResourceGroup, "g1")
	})
	s3 := openACLs(t, startACLNode(t, net, srv.Addr(), "/sluice", 3))
	if all, _ := s3.All(ctx); len(all) != 2 {
		t.Fatalf("broker 3 loaded %v", all)
	}
}

// TestACLStoreConflict: two brokers adding to one pattern at once both
// land (the version-guarded write retries).
func TestACLStoreConflict(t *testing.T) {
	srv, net := zktest.Start(t), newFakeNet()
	ctx := context.Background()
	s1 := openACLs(t, startACLNode(t, net, srv.Addr(), "/c", 1))
	s2 := openACLs(t, startACLNode(t, net, srv.Addr(), "/c", 2))
	p := acl.ResourcePattern{Type: acl.ResourceTopic, Name: "hot", PatternType: acl.PatternLiteral}
	errs := make(chan error, 20)
	for i := range 20 {
		s := s1
		if i%2 == 1 {
			s = s2
		}
		e := acl.Entry{Principal: fmt.Sprintf("User:u%d", i), Host: "*", Operation: acl.OpWrite, Permission: acl.PermissionAllow}
		go func() { errs <- s.Add(ctx, []acl.Binding{{Pattern: p, Entry: e}}) }()
	}
	for range 20 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []*ACLStore{s1, s2} {
		waitFor(t, "20 entries on both brokers", func() bool {
			all, _ := s.All(ctx)
			return len(all) == 20
		})
	}
}

func TestACLStoreRefusesSlash(t *testing.T) {
	srv, net := zktest.Start(t), newFakeNet()
	s := openACLs(t, startACLNode(t, net, srv.Addr(), "", 1))
	for _, name := range []string{"a/b", ".", ".."} {
		err := s.Add(context.Background(), []acl.Binding{{
			Pattern: acl.ResourcePattern{Type: acl.ResourceGroup, Name: name, PatternType: acl.PatternLiteral},
			Entry:   acl.Entry{Principal: "User:a", Host: "*", Operation: acl.OpRead, Permission: acl.PermissionAllow}}})
		if !errors.Is(err, acl.ErrInvalid) {
			t.Errorf("Add(%q) = %v, want ErrInvalid", name, err)
		}
	}
}

func zkConn(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	c, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// TestACLStoreUnreadableNotification: a notification the broker cannot
// read (refused by its ACL) announced a change it cannot know: the store
// reloads every ACL at once, rather than at the next notification.
func TestACLStoreUnreadableNotification(t *testing.T) {
	srv, net := zktest.Start(t), newFakeNet()
	s := openACLs(t, startACLNode(t, net, srv.Addr(), "/sluice", 1))
	c := zkConn(t, srv.Addr())
	if _, err := c.Create("/sluice/kafka-acl/Group/g1", []byte(`{"version":1,"acls":[{"principal":"User:bob","permissionType":"Allow","operation":"Read","host":"*"}]}`), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create("/sluice/kafka-acl-changes/acl_changes_", []byte("GROUP:g1"), zk.FlagSequence, zk.DigestACL(zk.PermAll, "other", "secret")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the ACL announced by an unreadable notification", func() bool {
		all, _ := s.All(context.Background())
		return len(all) == 1 && all[0].Pattern.Name == "g1"
	})
}
