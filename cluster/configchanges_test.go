package cluster

import (
	"context"
	"slices"
	"sync"
	"testing"
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
