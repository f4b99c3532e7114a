package cluster

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
)

// TestBrokerConfigZnodes: dynamic broker configs are stored in Kafka's
// znodes and layout (/config/brokers/<id> and /config/brokers/<default>,
// {"version":1,"config":{...}}), each change announced by a
// /config/changes notification with entity path brokers/<entity>, which
// WatchBrokerConfigChanges hands to every broker; an absent entity reads
// as empty.
func TestBrokerConfigZnodes(t *testing.T) {
	tc := newTestCluster(t, 2, nil)
	a, b := tc.nodes[1], tc.nodes[2]
	ctx := context.Background()
	if cfg, err := b.BrokerConfig("<default>"); err != nil || len(cfg) != 0 {
		t.Fatalf("nothing stored: %v %v", cfg, err)
	}
	var mu sync.Mutex
	var got []string
	resynced := make(chan struct{})
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.WatchBrokerConfigChanges(wctx, func(entity string) {
			mu.Lock()
			got = append(got, entity)
			mu.Unlock()
		}, func() { close(resynced) })
	}()
	<-resynced
	if err := a.SetBrokerConfig(ctx, "<default>", map[string]string{"log.retention.ms": "1000"}); err != nil {
		t.Fatal(err)
	}
	if err := a.SetBrokerConfig(ctx, "1", map[string]string{"message.max.bytes": "2000"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "two notifications", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= 2
	})
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(got, []string{"<default>", "1"}) {
		t.Fatalf("notified %v, want [<default> 1]", got)
	}
	raw, _, err := tc.client.Get("/sluice/config/brokers/<default>")
	if err != nil || string(raw) != `{"version":1,"config":{"log.retention.ms":"1000"}}` {
		t.Fatalf("/config/brokers/<default> = %s %v", raw, err)
	}
	if cfg, err := b.BrokerConfig("1"); err != nil || cfg["message.max.bytes"] != "2000" || len(cfg) != 1 {
		t.Fatalf("broker 1's configs read by broker 2: %v %v", cfg, err)
	}
	kids, _, err := tc.client.Children("/sluice/config/changes")
	if err != nil {
		t.Fatal(err)
	}
	var notes []string
	for _, k := range kids {
		data, _, err := tc.client.Get("/sluice/config/changes/" + k)
		if err == nil {
			notes = append(notes, string(data))
		}
	}
	for _, want := range []string{`{"version":2,"entity_path":"brokers/<default>"}`, `{"version":2,"entity_path":"brokers/1"}`} {
		if !slices.Contains(notes, want) {
			t.Fatalf("no notification %s in %v", want, notes)
		}
	}
}

// TestUncleanElectionEnabledDynamically: a broker started with
// unclean.leader.election.enable=false whose dynamic config turns it on
// (SetUncleanLeaderElection) elects an out-of-sync replica when no in-sync
// one is live, as TestUncleanElection's enabled case.
func TestUncleanElectionEnabledDynamically(t *testing.T) {
	tc := newTestCluster(t, 3, func(o *Options) { o.UncleanLeaderElection = false })
	tc.controller()
	as := tc.createTopic(tc.nodes[1], "t", 1, 2)
	leader := tc.shrinkISR("t", 0)
	follower := as[0][0] + as[0][1] - leader
	for _, n := range tc.nodes {
		n.SetUncleanLeaderElection(true)
	}
	tc.stop(leader)
	waitFor(t, "unclean leader", func() bool {
		st, _ := tc.state("t", 0)
		return st.Leader == follower
	})
	if st, _ := tc.state("t", 0); !slices.Equal(st.ISR, []int32{follower}) {
		t.Fatalf("state %+v, want leader %d alone in ISR", st, follower)
	}
}

// TestEntityConfigCorruptZnode: a broker or group config znode that is
// not Kafka's JSON (a torn or hostile write by anyone who may write
// ZooKeeper) reads as ErrCorruptZnode, never as an empty or partial
// config and never a panic; a JSON null config reads as empty.
func TestEntityConfigCorruptZnode(t *testing.T) {
	tc := newTestCluster(t, 1, nil)
	n := tc.nodes[1]
	for _, data := range []string{"", "{", "[1,2]", `{"version":1,"config":{"a":1}}`, `{"version":1,"config":"x"}`, "\x00\xff"} {
		for _, p := range []string{brokerConfigPath("7"), groupConfigPath("g")} {
			if err := n.setEntityConfig(p, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := n.zk.set(p, []byte(data), -1); err != nil {
				t.Fatal(err)
			}
		}
		if cfg, err := n.BrokerConfig("7"); !errors.Is(err, ErrCorruptZnode) {
			t.Errorf("broker config %q: %v, %v; want ErrCorruptZnode", data, cfg, err)
		}
		if cfg, err := n.GroupConfig("g"); !errors.Is(err, ErrCorruptZnode) {
			t.Errorf("group config %q: %v, %v; want ErrCorruptZnode", data, cfg, err)
		}
	}
	if _, err := n.zk.set(brokerConfigPath("7"), []byte(`{"version":1,"config":null}`), -1); err != nil {
		t.Fatal(err)
	}
	if cfg, err := n.BrokerConfig("7"); err != nil || cfg == nil || len(cfg) != 0 {
		t.Errorf("null config: %v, %v; want an empty map", cfg, err)
	}
}
