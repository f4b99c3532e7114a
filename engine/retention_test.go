package engine

import (
	"testing"
	"time"
)

func TestRetentionCut(t *testing.T) {
	now := time.UnixMilli(100_000)
	// Four segments: newest timestamps 10s, 50s, 90s, 99s; 100 bytes each.
	times := []int64{10_000, 50_000, 90_000, 99_000}
	seg := func(i int) (int64, int64) { return times[i], 100 }
	cases := []struct {
		name  string
		ms    time.Duration
		bytes int64
		want  int
	}{
		{"unlimited", -1, -1, 0},
		{"time: older than 30s", 30 * time.Second, -1, 2},
		{"time: all old, newest kept", time.Millisecond, -1, 3},
		{"bytes: keep at least 250", -1, 250, 1},
		{"bytes: keep at least 200", -1, 200, 2},
		{"bytes: 0 keeps the newest", -1, 0, 3},
		{"time then bytes", 60 * time.Second, 150, 2},
		{"bytes beyond the log", -1, 1000, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := LogConfig{RetentionMs: tc.ms, RetentionBytes: tc.bytes}
			if got := RetentionCut(cfg, now, len(times), seg); got != tc.want {
				t.Fatalf("RetentionCut = %d, want %d", got, tc.want)
			}
		})
	}
	// cleanup.policy: retention applies only when it includes delete.
	policies := []struct {
		name            string
		compact, delete bool
		want            int
	}{
		{"policy unset (delete)", false, false, 3},
		{"delete", false, true, 3},
		{"compact", true, false, 0},
		{"compact,delete", true, true, 3},
	}
	for _, tc := range policies {
		t.Run(tc.name, func(t *testing.T) {
			cfg := LogConfig{RetentionMs: time.Millisecond, RetentionBytes: 0, Compact: tc.compact, Delete: tc.delete}
			if got := RetentionCut(cfg, now, len(times), seg); got != tc.want {
				t.Fatalf("RetentionCut = %d, want %d", got, tc.want)
			}
		})
	}
	if got := RetentionCut(LogConfig{RetentionMs: 1, RetentionBytes: 0}, now, 0, seg); got != 0 {
		t.Fatalf("empty log: %d", got)
	}
}

func TestLogConfigPolicyDefaults(t *testing.T) {
	d := DefaultLogConfig()
	if !d.Delete || d.Compact || d.DeleteRetention != 24*time.Hour || d.MinCleanableDirtyRatio != 0.5 ||
		d.MinCompactionLag != 0 || d.MaxCompactionLag != NoMaxCompactionLag {
		t.Fatalf("DefaultLogConfig cleaner fields: %+v", d)
	}
	if c := (LogConfig{}).WithDefaults(); !c.Delete || c.Compact || !c.DeletePolicy() || c.MaxCompactionLag != NoMaxCompactionLag {
		t.Fatalf("zero LogConfig with defaults: %+v", c)
	}
	if c := (LogConfig{Compact: true}).WithDefaults(); c.Delete || c.DeletePolicy() {
		t.Fatalf("compact alone gained delete: %+v", c)
	}
}
