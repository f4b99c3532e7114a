package server

import (
	"math"
	"testing"
	"time"

	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/offsets"
)

// TestEffectiveConfigCleaner: cleanup.policy and the cleaner configs reach
// engine.LogConfig (for the log cleaner) and record.Rules (RequireKeys),
// from a topic override or else the broker's log.cleaner.* value.
func TestEffectiveConfigCleaner(t *testing.T) {
	broker := config.Default()
	if err := broker.Set("log.cleaner.min.cleanable.ratio", "0.75"); err != nil {
		t.Fatal(err)
	}
	s := &Server{cfg: broker}
	s.dyn.cur.Store(&broker)
	s.topicDefaults.Store(newTopicDefaults(&broker))
	cases := []struct {
		name            string
		overrides       map[string]string
		compact, delete bool
		ratio           float64
		deleteRetention time.Duration
		minLag, maxLag  time.Duration
	}{
		{"broker defaults", nil, false, true, 0.75, 24 * time.Hour, 0, math.MaxInt64},
		{"compact", map[string]string{"cleanup.policy": "compact"}, true, false, 0.75, 24 * time.Hour, 0, math.MaxInt64},
		{"both, overrides", map[string]string{"cleanup.policy": "delete,compact", "min.cleanable.dirty.ratio": "0.1",
			"delete.retention.ms": "0", "min.compaction.lag.ms": "1000", "max.compaction.lag.ms": "60000"},
			true, true, 0.1, 0, time.Second, time.Minute},
		{"stored bad policy falls back to the broker's", map[string]string{"cleanup.policy": "purge"}, false, true, 0.75, 24 * time.Hour, 0, math.MaxInt64},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := s.effectiveConfig(tc.overrides)
			l := c.log
			if l.Compact != tc.compact || l.Delete != tc.delete || c.rules.RequireKeys != tc.compact {
				t.Fatalf("policy: compact %v delete %v requireKeys %v", l.Compact, l.Delete, c.rules.RequireKeys)
			}
			if l.MinCleanableDirtyRatio != tc.ratio || l.DeleteRetention != tc.deleteRetention ||
				l.MinCompactionLag != tc.minLag || l.MaxCompactionLag != tc.maxLag {
				t.Fatalf("cleaner settings: ratio %v delete.retention %v lag [%v, %v]", l.MinCleanableDirtyRatio,
					l.DeleteRetention, l.MinCompactionLag, l.MaxCompactionLag)
			}
		})
	}
}

// TestInternalOverrides: __consumer_offsets created before compaction
// (retention.ms=-1 alone) runs compacted; an explicit policy and other
// topics are left alone, and the stored map is not changed.
func TestInternalOverrides(t *testing.T) {
	old := map[string]string{"retention.ms": "-1"}
	got := internalOverrides(offsets.Topic, old)
	if got["cleanup.policy"] != "compact" || got["retention.ms"] != "-1" || len(old) != 1 {
		t.Fatalf("internalOverrides(%v) = %v", old, got)
	}
	set := map[string]string{"cleanup.policy": "compact,delete"}
	if got := internalOverrides(offsets.Topic, set); got["cleanup.policy"] != "compact,delete" {
		t.Fatalf("explicit policy replaced: %v", got)
	}
	if got := internalOverrides("users", old); got["cleanup.policy"] != "" {
		t.Fatalf("another topic got %v", got)
	}
}
