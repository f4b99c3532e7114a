package cluster

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// TestWatchTopicConfigChanges: every broker's watch resyncs once at its
// first listing, then sees each SetTopicConfig, written through any node,
// in order; notifications written before the watch began are not replayed.
func TestWatchTopicConfigChanges(t *testing.T) {
	tc := newTestCluster(t, 2, nil)
	ctl := tc.controller()
	other := tc.anyNonController(ctl)
	tc.createTopic(other, "a", 1, 2)
	tc.createTopic(other, "b", 1, 2)
	ctx := context.Background()
	if err := ctl.SetTopicConfig(ctx, "a", map[string]string{"retention.ms": "1"}); err != nil {
		t.Fatal(err) // before the watch: not notified
	}

	var mu sync.Mutex
	var got []string
	resynced := make(chan struct{})
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		other.WatchTopicConfigChanges(wctx, func(topic string) {
			mu.Lock()
			got = append(got, topic)
			mu.Unlock()
		}, func() { close(resynced) })
	}()
	<-resynced
	for i, topic := range []string{"b", "a", "b"} {
		if err := tc.nodes[int32(i%2+1)].SetTopicConfig(ctx, topic, map[string]string{"retention.ms": "2"}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "three notifications", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= 3
	})
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(got, []string{"b", "a", "b"}) {
		t.Fatalf("notified %v, want [b a b]", got)
	}
	if cfg, err := ctl.TopicConfigs("b"); err != nil || cfg["retention.ms"] != "2" {
		t.Fatalf("configs of b: %v %v", cfg, err)
	}
}

// TestConfigChangesPurged: handled notifications older than
// ConfigChangeExpiration are deleted by the watching broker; newer ones and
// those not yet handled stay.
func TestConfigChangesPurged(t *testing.T) {
	const expiry = 2 * time.Second
	tc := newTestCluster(t, 1, func(o *Options) { o.ConfigChangeExpiration = expiry })
	n := tc.nodes[1]
	tc.createTopic(n, "c", 1, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var mu sync.Mutex
	seen := 0
	resynced := make(chan struct{})
	go func() {
		defer close(done)
		n.WatchTopicConfigChanges(ctx, func(string) { mu.Lock(); seen++; mu.Unlock() }, func() { close(resynced) })
	}()
	defer func() { cancel(); <-done }()
	<-resynced
	children := func() []string {
		kids, _, err := tc.client.Children("/sluice" + configChangesPath)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(kids)
		return kids
	}
	for i := range 3 {
		if err := n.SetTopicConfig(context.Background(), "c", map[string]string{"retention.ms": strconv.Itoa(i + 1)}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "three notifications handled", func() bool { mu.Lock(); defer mu.Unlock(); return seen == 3 })
	old := children()
	if len(old) != 3 {
		t.Fatalf("notifications %v, want 3 before they expire", old)
	}
	time.Sleep(expiry + 500*time.Millisecond) // let the three age past the expiry (ZooKeeper's ctime)
	// The purge runs when the watch fires: a fourth change triggers it.
	fourth := time.Now()
	if err := n.SetTopicConfig(context.Background(), "c", map[string]string{"retention.ms": "4"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "old notifications purged", func() bool {
		for _, k := range children() {
			if slices.Contains(old, k) {
				return false
			}
		}
		return true
	})
	// The fourth is younger than the expiry: it stays (unless this test
	// itself stalled past the expiry, when its deletion would be right).
	if kids := children(); len(kids) != 1 && time.Since(fourth) < expiry {
		t.Fatalf("left %v, want only the fourth notification", kids)
	}
}
