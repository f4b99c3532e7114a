package cluster

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/sluice/sluice/auth/sasl"
	"github.com/sluice/sluice/quota"
)

func TestJavaDouble(t *testing.T) {
	for x, want := range map[float64]string{200: "200.0", 0.5: "0.5", 1e7: "1.0E7", 1.5e-4: "1.5E-4", 12.25: "12.25"} {
		if got := javaDouble(x); got != want {
			t.Errorf("javaDouble(%v) = %q, want %q", x, got, want)
		}
	}
}

func TestQuotaEntityPaths(t *testing.T) {
	for _, tc := range []struct {
		e    quota.Entity
		path string
	}{
		{quota.Entity{User: quota.Named("alice smith")}, "users/alice%20smith"},
		{quota.Entity{User: quota.Default}, "users/<default>"},
		{quota.Entity{ClientID: quota.Named("<default>")}, "clients/%3Cdefault%3E"},
		{quota.Entity{User: quota.Named("u"), ClientID: quota.Default}, "users/u/clients/<default>"},
	} {
		if got := quotaEntityPath(tc.e); got != tc.path {
			t.Errorf("%v: path %q, want %q", tc.e, got, tc.path)
		}
		back, ok, err := parseQuotaEntityPath(tc.path)
		if !ok || err != nil || back != tc.e {
			t.Errorf("parse %q = %v %v %v", tc.path, back, ok, err)
		}
	}
	for _, p := range []string{"topics/t", "brokers/<default>", "users/", "users/u/clients", "users/u/x/c"} {
		if _, ok, _ := parseQuotaEntityPath(p); ok {
			t.Errorf("%q parsed as a quota entity", p)
		}
	}
}

// TestQuotaStoreZooKeeper: quotas written through one broker land in
// Kafka's znodes without clobbering the user's SCRAM credential (nor it
// them), are announced, and reach another broker's watch; a pair creates
// its parent user config as valid JSON that SCRAM listing can read.
func TestQuotaStoreZooKeeper(t *testing.T) {
	tc := newTestCluster(t, 2, nil)
	a, b := tc.nodes[1], tc.nodes[2]
	qa := a.QuotaStore()
	sa := NewScramStore(a)

	var mu sync.Mutex
	seen := map[quota.Entity]quota.Values{}
	resynced := false
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		qb := b.QuotaStore()
		b.WatchQuotaChanges(ctx, func(e quota.Entity) {
			v, err := qb.Get(e)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			seen[e] = v
			mu.Unlock()
		}, func() { mu.Lock(); resynced = true; mu.Unlock() })
	}()
	defer func() { cancel(); <-done }()
	waitFor(t, "the watch to start", func() bool { mu.Lock(); defer mu.Unlock(); return resynced })

	cred := newScramCred(t, sasl.ScramSHA256, "pw")
	if err := sa.Put("alice", cred); err != nil {
		t.Fatal(err)
	}
	alice := quota.Entity{User: quota.Named("alice")}
	set := func(e quota.Entity, v quota.Values) {
		t.Helper()
		if err := qa.Alter(e, func(quota.Values) (quota.Values, error) { return v, nil }); err != nil {
			t.Fatal(err)
		}
	}
	var v quota.Values
	v[quota.Produce], v[quota.Request] = 5<<20, 200
	set(alice, v)
	data, _, err := a.zk.get(configUsersPath + "/alice")
	if err != nil {
		t.Fatal(err)
	}
	var z struct {
		Version int               `json:"version"`
		Config  map[string]string `json:"config"`
	}
	if err := json.Unmarshal(data, &z); err != nil || z.Version != 1 || z.Config["producer_byte_rate"] != "5242880" ||
		z.Config["request_percentage"] != "200.0" || z.Config[sasl.ScramSHA256] != sasl.EncodeCredential(cred) {
		t.Fatalf("znode %s: %v", data, err)
	}
	if !hasNotification(t, a, `{"version":2,"entity_path":"users/alice"}`) {
		t.Fatal("no notification for users/alice")
	}
	// A SCRAM change keeps the quota.
	if err := sa.Put("alice", newScramCred(t, sasl.ScramSHA512, "pw2")); err != nil {
		t.Fatal(err)
	}
	if got, err := qa.Get(alice); err != nil || got != v {
		t.Fatalf("quota after a SCRAM change: %v %v", got, err)
	}

	pair := quota.Entity{User: quota.Named("bob"), ClientID: quota.Default}
	var pv quota.Values
	pv[quota.Fetch] = 1000
	set(pair, pv)
	clientDefault := quota.Entity{ClientID: quota.Default}
	var cv quota.Values
	cv[quota.ControllerMutation] = 0.5
	set(clientDefault, cv)
	// Kafka's AdminZkClient creates the parents of a pair's znode empty.
	kafkaPair := quota.Entity{User: quota.Named("kafka-made"), ClientID: quota.Named("c")}
	if _, err := a.zk.createParents(configUsersPath+"/kafka-made/clients/c", []byte(`{"version":1,"config":{"consumer_byte_rate":"2048"}}`), 0); err != nil {
		t.Fatal(err)
	}
	if data, _, err := a.zk.get(configUsersPath + "/kafka-made"); err != nil || len(data) != 0 {
		t.Fatalf("parent data %q, %v; want empty", data, err)
	}
	if list, err := sa.List(); err != nil || len(list) != 1 {
		t.Fatalf("SCRAM list beside quota znodes: %v %v", list, err)
	}
	all, err := qa.List()
	if err != nil {
		t.Fatal(err)
	}
	var kv quota.Values
	kv[quota.Fetch] = 2048
	want := map[quota.Entity]quota.Values{alice: v, pair: pv, clientDefault: cv, kafkaPair: kv}
	if len(all) != len(want) {
		t.Fatalf("List = %v, want %v", all, want)
	}
	for e, wv := range want {
		if all[e] != wv {
			t.Errorf("List[%v] = %v, want %v", e, all[e], wv)
		}
	}
	waitFor(t, "broker 2 to see every change", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return seen[alice] == v && seen[pair] == pv && seen[clientDefault] == cv
	})
	// Removing alice's quotas keeps her credentials.
	set(alice, quota.Values{})
	if c, ok, err := sa.Get("alice", sasl.ScramSHA256); err != nil || !ok || c.Iterations != cred.Iterations {
		t.Fatalf("credential after quota removal: %v %v", ok, err)
	}
	waitFor(t, "broker 2 to see the removal", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return seen[alice].Empty()
	})
}

// TestIPQuotaStoreZooKeeper: ip entities in Kafka's layout, /config/ips/<ip>
// (sanitized: an IPv6 address's colons are %3A) and <default>, with
// notifications naming ips/<ip> that another broker's watch follows; a
// Kafka-written znode reads back; removal drops the key.
func TestIPQuotaStoreZooKeeper(t *testing.T) {
	tc := newTestCluster(t, 2, nil)
	a, b := tc.nodes[1], tc.nodes[2]
	qa, qb := a.QuotaStore(), b.QuotaStore()
	var mu sync.Mutex
	seen := map[string]float64{}
	resynced := false
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.WatchIPQuotaChanges(ctx, func(name string) {
			v, err := qb.GetIP(name)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			seen[name] = v
			mu.Unlock()
		}, func() { mu.Lock(); resynced = true; mu.Unlock() })
	}()
	defer func() { cancel(); <-done }()
	waitFor(t, "the watch to start", func() bool { mu.Lock(); defer mu.Unlock(); return resynced })

	set := func(name string, v float64) {
		t.Helper()
		if err := qa.AlterIP(name, func(float64) (float64, error) { return v, nil }); err != nil {
			t.Fatal(err)
		}
	}
	set("2001:db8::1", 5)
	set(quota.DefaultName, 100)
	data, _, err := a.zk.get(configIPsPath + "/2001%3Adb8%3A%3A1")
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != `{"version":1,"config":{"connection_creation_rate":"5"}}` {
		t.Fatalf("znode %s", data)
	}
	if !hasNotification(t, a, `{"version":2,"entity_path":"ips/2001%3Adb8%3A%3A1"}`) {
		t.Fatal("no notification for the ip")
	}
	// As Kafka's kafka-configs.sh would have written it.
	if _, err := a.zk.create(configIPsPath+"/10.0.0.9", []byte(`{"version":1,"config":{"connection_creation_rate":"3"}}`), 0); err != nil {
		t.Fatal(err)
	}
	all, err := qb.ListIPs()
	if err != nil || len(all) != 3 || all["2001:db8::1"] != 5 || all[quota.DefaultName] != 100 || all["10.0.0.9"] != 3 {
		t.Fatalf("list %v %v", all, err)
	}
	waitFor(t, "broker 2 to see both changes", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return seen["2001:db8::1"] == 5 && seen[quota.DefaultName] == 100
	})
	set("2001:db8::1", 0)
	if v, err := qb.GetIP("2001:db8::1"); err != nil || v != 0 {
		t.Fatalf("after removal: %v %v", v, err)
	}
	waitFor(t, "broker 2 to see the removal", func() bool { mu.Lock(); defer mu.Unlock(); return seen["2001:db8::1"] == 0 })
}
