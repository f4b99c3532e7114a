package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/sluice/sluice/auth/sasl"
)

func TestSanitizeUser(t *testing.T) {
	for user, want := range map[string]string{
		"alice":    "alice",
		"a.b-c_d":  "a.b-c_d",
		"a b":      "a%20b",
		"a*b":      "a%2Ab",
		"a+b":      "a%2Bb",
		"CN=x,O=y": "CN%3Dx%2CO%3Dy",
		"a/b":      "a%2Fb",
		"~é":       "%7E%C3%A9",
		"%41":      "%2541",
	} {
		if got := sanitizeUser(user); got != want {
			t.Errorf("sanitize(%q) = %q, want %q", user, got, want)
		}
		if back, err := desanitizeUser(sanitizeUser(user)); err != nil || back != user {
			t.Errorf("desanitize(sanitize(%q)) = %q, %v", user, back, err)
		}
	}
	if u, err := desanitizeUser("a+b"); err != nil || u != "a b" {
		t.Errorf("Java's '+' for a space: %q %v", u, err)
	}
	if _, err := desanitizeUser("%zz"); err == nil {
		t.Error("bad escape accepted")
	}
}

func newScramCred(t *testing.T, mech, password string) sasl.Credential {
	t.Helper()
	c, err := sasl.NewCredential(mech, password, 0)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestScramStoreZooKeeper: a credential written through one broker is in
// Kafka's layout, announced under /config/changes, and used by another
// broker's cached store within a notification's delay; quotas beside it
// survive; deletes propagate too.
func TestScramStoreZooKeeper(t *testing.T) {
	tc := newTestCluster(t, 2, nil)
	a, b := tc.nodes[1], tc.nodes[2]
	sa, sb := NewScramStore(a), NewScramStore(b)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); sb.Watch(ctx) }()
	defer func() { cancel(); <-done }()
	waitFor(t, "the watch to resync", func() bool { sb.mu.Lock(); defer sb.mu.Unlock(); return sb.caching })

	const user = "alice smith" // sanitized with %20
	// A quota written by Kafka's tools before any credential.
	if _, err := a.zk.createParents(configUsersPath+"/alice%20smith", []byte(`{"version":1,"config":{"producer_byte_rate":"1024"}}`), 0); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := sb.Get(user, sasl.ScramSHA256); ok || err != nil {
		t.Fatalf("before Put: ok %v err %v", ok, err)
	}
	c1 := newScramCred(t, sasl.ScramSHA256, "one")
	if err := sa.Put(user, c1); err != nil {
		t.Fatal(err)
	}
	// Kafka's layout: the znode and the notification.
	data, _, err := a.zk.get(configUsersPath + "/alice%20smith")
	if err != nil {
		t.Fatal(err)
	}
	var z struct {
		Version int               `json:"version"`
		Config  map[string]string `json:"config"`
	}
	if err := json.Unmarshal(data, &z); err != nil || z.Version != 1 || z.Config["producer_byte_rate"] != "1024" ||
		z.Config[sasl.ScramSHA256] != sasl.EncodeCredential(c1) || len(z.Config) != 2 {
		t.Fatalf("znode %s: %v", data, err)
	}
	if !hasNotification(t, a, `{"version":2,"entity_path":"users/alice%20smith"}`) {
		t.Fatal("no change notification for users/alice%20smith")
	}
	waitFor(t, "broker 2 to see the credential", func() bool {
		got, ok, err := sb.Get(user, sasl.ScramSHA256)
		return err == nil && ok && reflect.DeepEqual(got, c1)
	})
	// A read that raced with the notification is not cached; the next is.
	waitFor(t, "broker 2 to cache the credential", func() bool {
		if _, _, err := sb.Get(user, sasl.ScramSHA256); err != nil {
			t.Fatal(err)
		}
		sb.mu.Lock()
		defer sb.mu.Unlock()
		_, cached := sb.cache[user]
		return cached
	})

	// A replacement reaches the cached broker through the notification.
	c2 := newScramCred(t, sasl.ScramSHA256, "two")
	if err := sa.Put(user, c2); err != nil {
		t.Fatal(err)
	}
	if err := sa.Put(user, newScramCred(t, sasl.ScramSHA512, "x")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "broker 2 to see the new credential", func() bool {
		got, ok, err := sb.Get(user, sasl.ScramSHA256)
		return err == nil && ok && reflect.DeepEqual(got, c2)
	})
	list, err := sb.List()
	if err != nil || !reflect.DeepEqual(list, map[string][]string{user: {sasl.ScramSHA256, sasl.ScramSHA512}}) {
		t.Fatalf("List = %q, %v", list, err)
	}

	// Deletes: one mechanism at a time; the quota and the znode stay.
	if err := sa.Delete(user, sasl.ScramSHA256); err != nil {
		t.Fatal(err)
	}
	if err := sa.Delete(user, sasl.ScramSHA256); !errors.Is(err, sasl.ErrCredentialNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	if err := sa.Delete("nobody", sasl.ScramSHA256); !errors.Is(err, sasl.ErrCredentialNotFound) {
		t.Fatalf("delete of an unknown user: %v", err)
	}
	waitFor(t, "broker 2 to see the delete", func() bool {
		_, ok, err := sb.Get(user, sasl.ScramSHA256)
		return err == nil && !ok
	})
	if _, ok, _ := sb.Get(user, sasl.ScramSHA512); !ok {
		t.Fatal("delete of one mechanism took the other")
	}
	if err := sa.Delete(user, sasl.ScramSHA512); err != nil {
		t.Fatal(err)
	}
	data, _, err = a.zk.get(configUsersPath + "/alice%20smith")
	if err != nil || !strings.Contains(string(data), `"producer_byte_rate":"1024"`) || strings.Contains(string(data), "SCRAM") {
		t.Fatalf("after deletes: %s %v", data, err)
	}
	if list, err := sa.List(); err != nil || len(list) != 0 {
		t.Fatalf("List after deletes = %q, %v", list, err)
	}
}

// TestScramStoreConcurrentPut: two brokers writing different mechanisms
// of one user at once both land (the znode version guards the
// read-modify-write).
func TestScramStoreConcurrentPut(t *testing.T) {
	tc := newTestCluster(t, 2, nil)
	stores := []*ScramStore{NewScramStore(tc.nodes[1]), NewScramStore(tc.nodes[2])}
	creds := []sasl.Credential{newScramCred(t, sasl.ScramSHA256, "a"), newScramCred(t, sasl.ScramSHA512, "b")}
	errs := make(chan error, 2)
	for i := range stores {
		go func() { errs <- stores[i].Put("bob", creds[i]) }()
	}
	for range stores {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range creds {
		if got, ok, err := stores[0].Get("bob", c.Mechanism); err != nil || !ok || !reflect.DeepEqual(got, c) {
			t.Fatalf("%s: ok %v err %v", c.Mechanism, ok, err)
		}
	}
}

// TestScramStoreCorruptZnode: a znode that is not a user config is an
// error, not "no credential".
func TestScramStoreCorruptZnode(t *testing.T) {
	tc := newTestCluster(t, 1, nil)
	n := tc.nodes[1]
	if _, err := n.zk.createParents(configUsersPath+"/eve", []byte(`{"version":1,"config":{"SCRAM-SHA-256":"salt=x"}}`), 0); err != nil {
		t.Fatal(err)
	}
	s := NewScramStore(n)
	if _, ok, err := s.Get("eve", sasl.ScramSHA256); ok || !errors.Is(err, ErrCorruptZnode) {
		t.Fatalf("ok %v err %v", ok, err)
	}
	if err := s.Put("eve", newScramCred(t, sasl.ScramSHA256, "pw")); err != nil {
		t.Fatalf("Put over a damaged credential: %v", err) // replacing it is how to repair it
	}
	if _, ok, err := s.Get("eve", sasl.ScramSHA256); !ok || err != nil {
		t.Fatalf("after repair: ok %v err %v", ok, err)
	}
}

// watchedScramStore returns n's store with its Watch running (until the
// test ends) and resynced once.
func watchedScramStore(t *testing.T, n *Node) *ScramStore {
	t.Helper()
	s := NewScramStore(n)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Watch(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	waitFor(t, "the watch to resync", func() bool { s.mu.Lock(); defer s.mu.Unlock(); return s.caching })
	return s
}

// TestScramStoreUnreadableNotification: a notification the broker cannot
// read (here refused by its ACL) announced a change it cannot know, such
// as a deleted user: the store drops its whole cache rather than keep
// using the credential.
func TestScramStoreUnreadableNotification(t *testing.T) {
	tc := newTestCluster(t, 1, nil)
	n := tc.nodes[1]
	// Written without a notification, so none invalidates the cache
	// behind the test's back.
	cfg := sasl.EncodeUserConfig(sasl.WithCredential(nil, newScramCred(t, sasl.ScramSHA256, "pw")))
	if _, err := n.zk.createParents(userConfigPath("alice"), cfg, 0); err != nil {
		t.Fatal(err)
	}
	s := watchedScramStore(t, n)
	if _, ok, err := s.Get("alice", sasl.ScramSHA256); !ok || err != nil {
		t.Fatalf("Get alice: ok %v err %v", ok, err)
	}
	s.mu.Lock()
	_, cached := s.cache["alice"]
	s.mu.Unlock()
	if !cached {
		t.Fatal("alice not cached")
	}
	// Another writer deletes alice's credential; its notification cannot
	// be read by the broker.
	if _, err := n.zk.set(userConfigPath("alice"), []byte(`{"version":1,"config":{}}`), -1); err != nil {
		t.Fatal(err)
	}
	note := []byte(`{"version":2,"entity_path":"users/alice"}`)
	p, err := tc.client.Create("/sluice"+configChangesPath+"/"+configChangePrefix, note, zk.FlagSequence, zk.DigestACL(zk.PermAll, "other", "secret"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := tc.client.Get(p); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("reading the notification: %v, want ErrNoAuth", err)
	}
	waitFor(t, "alice's deleted credential to be dropped", func() bool {
		_, ok, err := s.Get("alice", sasl.ScramSHA256)
		return err == nil && !ok
	})
}

// TestScramStoreUnknownUserCached: a user without credentials is cached
// like one with: asking again reads no ZooKeeper (a credential written
// behind the store's back, without a notification, stays unseen), and the
// notification of a change drops the entry like any other.
func TestScramStoreUnknownUserCached(t *testing.T) {
	tc := newTestCluster(t, 1, nil)
	n := tc.nodes[1]
	s := watchedScramStore(t, n)
	if _, ok, err := s.Get("mallory", sasl.ScramSHA256); ok || err != nil {
		t.Fatalf("unknown user: ok %v err %v", ok, err)
	}
	cfg := sasl.EncodeUserConfig(sasl.WithCredential(nil, newScramCred(t, sasl.ScramSHA256, "pw")))
	if _, err := n.zk.createParents(userConfigPath("mallory"), cfg, 0); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.Get("mallory", sasl.ScramSHA256); ok || err != nil {
		t.Fatalf("unknown user asked again: ok %v err %v; want the cached answer, no credential", ok, err)
	}
	// A Put through another store of the cluster notifies the watch.
	c := newScramCred(t, sasl.ScramSHA256, "pw2")
	if err := NewScramStore(n).Put("mallory", c); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the notification to drop the unknown entry", func() bool {
		got, ok, err := s.Get("mallory", sasl.ScramSHA256)
		return err == nil && ok && reflect.DeepEqual(got, c)
	})
}

// TestScramStoreUnknownBounded: client-chosen names of unknown users fill
// at most maxUnknownBytes; the newest is always cached; a user who turns
// out to have credentials leaves the unknown set.
func TestScramStoreUnknownBounded(t *testing.T) {
	s := &ScramStore{caching: true, cache: map[string]map[string]sasl.Credential{}, unknown: map[string]struct{}{}}
	for i := range 3 * maxUnknownBytes / unknownCost("user-000000") {
		user := fmt.Sprintf("user-%06d", i)
		s.cacheLocked(user, map[string]sasl.Credential{})
		if _, ok := s.unknown[user]; !ok {
			t.Fatalf("%s not cached", user)
		}
		if s.unknownBytes > maxUnknownBytes {
			t.Fatalf("after %s: %d bytes of unknown users, over %d", user, s.unknownBytes, maxUnknownBytes)
		}
	}
	sum := 0
	for u := range s.unknown {
		sum += unknownCost(u)
	}
	if sum != s.unknownBytes {
		t.Fatalf("unknownBytes %d, entries cost %d", s.unknownBytes, sum)
	}
	s.cacheLocked(string(make([]byte, maxUnknownBytes)), nil) // too big to cache at all
	if s.unknownBytes > maxUnknownBytes {
		t.Fatalf("%d bytes of unknown users after a huge name", s.unknownBytes)
	}
	var some string
	for u := range s.unknown {
		some = u
		break
	}
	s.cacheLocked(some, map[string]sasl.Credential{sasl.ScramSHA256: {}})
	if _, ok := s.unknown[some]; ok || s.unknownBytes != sum-unknownCost(some) {
		t.Fatalf("%s still unknown (%d bytes) after its credential was read", some, s.unknownBytes)
	}
}

func hasNotification(t *testing.T, n *Node, want string) bool {
	t.Helper()
	names, err := n.zk.children(configChangesPath)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		t.Fatal(err)
	}
	for _, c := range names {
		data, _, err := n.zk.get(configChangesPath + "/" + c)
		if err == nil && string(data) == want {
			return true
		}
	}
	return false
}

func TestParseEntityChange(t *testing.T) {
	for _, tc := range []struct {
		note, typ, want string
		ok              bool
	}{
		{`{"version":2,"entity_path":"users/alice%20smith"}`, "users", "alice%20smith", true},
		{`{"version":2,"entity_path":"users/alice/clients/c1"}`, "users", "", false}, // a user-client quota
		{`{"version":2,"entity_path":"topics/t"}`, "users", "", false},
		{`{"version":2,"entity_path":"users/alice"}`, "topics", "", false},
		{`{"version":2,"entity_path":"users/"}`, "users", "", false},
	} {
		got, ok, err := parseEntityChange([]byte(tc.note), tc.typ)
		if err != nil || ok != tc.ok || got != tc.want {
			t.Errorf("%s as %s: %q %v %v", tc.note, tc.typ, got, ok, err)
		}
	}
}
