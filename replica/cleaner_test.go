package replica

import (
	"log/slog"
	"testing"

	"github.com/sluice/sluice/config"
)

// TestReconfigureCleaner: new cleaner keys restart the cleaner (a new
// cleaner manager runs), unchanged keys leave it alone, and once stopped
// a reconfiguration only records the keys.
func TestReconfigureCleaner(t *testing.T) {
	e := newEnv(t)
	cfg := config.Default()
	m := New(Options{Config: cfg, Meta: e.meta, Store: e.store, NodeID: 1, Logger: slog.New(slog.DiscardHandler), TopicConfig: testConfig})
	defer m.Close()
	stop, err := m.Start()
	if err != nil {
		t.Fatal(err)
	}
	first := m.cleaner.Load()
	if first == nil {
		t.Fatal("no cleaner after Start")
	}
	if err := m.ReconfigureCleaner(&cfg); err != nil || m.cleaner.Load() != first {
		t.Fatalf("same keys: %v, cleaner replaced %v", err, m.cleaner.Load() != first)
	}
	next := cfg
	next.LogCleanerThreads = 2
	next.LogCleanerIOMaxBytesPerSecond = 1 << 20
	if err := m.ReconfigureCleaner(&next); err != nil {
		t.Fatal(err)
	}
	second := m.cleaner.Load()
	if second == nil || second == first || m.cleanerKeys.threads != 2 || m.cleanerKeys.ioMaxBytes != 1<<20 {
		t.Fatalf("new keys: cleaner %p (was %p), keys %+v", second, first, m.cleanerKeys)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	next.LogCleanerThreads = 3
	if err := m.ReconfigureCleaner(&next); err != nil || m.cleaner.Load() != nil || m.cleanerKeys.threads != 3 {
		t.Fatalf("after stop: %v, cleaner %p, keys %+v", err, m.cleaner.Load(), m.cleanerKeys)
	}
}
