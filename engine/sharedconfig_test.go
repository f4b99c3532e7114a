package engine

import (
	"testing"
	"time"
)

// TestShareLogConfig: equal configurations share one copy, different ones
// do not, defaults are filled, and interning a known one does not allocate.
func TestShareLogConfig(t *testing.T) {
	a := LogConfig{SegmentBytes: 1 << 20, RetentionMs: time.Hour}
	sa, sb := ShareLogConfig(a), ShareLogConfig(a)
	if !sa.Same(sb) {
		t.Fatal("equal configs interned apart")
	}
	if got, want := sa.Get(), a.WithDefaults(); got != want {
		t.Fatalf("Get = %+v, want %+v", got, want)
	}
	b := a
	b.RetentionMs = 2 * time.Hour
	if ShareLogConfig(b).Same(sa) {
		t.Fatal("different configs share a copy")
	}
	// A config and the same with its defaults filled are one config.
	if !ShareLogConfig(a.WithDefaults()).Same(sa) {
		t.Fatal("a config and its defaults-filled form interned apart")
	}
	if n := testing.AllocsPerRun(100, func() { sa = ShareLogConfig(a) }); n != 0 {
		t.Fatalf("ShareLogConfig of a known config: %v allocs, want 0", n)
	}
}
