package broker

import (
	"io"
	"log/slog"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/engine"
)

// TestAutoOpenFiles: log.segment.open.files.max 0 sizes the cache from
// the limits, keeping a quarter of the descriptors for connections and
// staying within vm.max_map_count.
func TestAutoOpenFiles(t *testing.T) {
	for _, tc := range []struct {
		name    string
		backend string
		nofile  uint64
		maps    int64
		want    int
	}{
		// This machine's limits: 10,000 active partitions fit.
		{"segment, ulimit 20000", "segment", 20000, 65530, 14232},
		{"pebble, ulimit 20000", "pebble", 20000, 65530, 14232},
		// Descriptors plentiful: the mappings bound segment, not pebble.
		{"segment, ulimit 1M", "segment", 1 << 20, 65530, 32253},
		{"pebble, ulimit 1M", "pebble", 1 << 20, 65530, 785664},
		{"segment, map count unknown", "segment", 1 << 20, -1, 785664},
		{"segment, no descriptor bound", "segment", unix.RLIM_INFINITY, 65530, 32253},
		{"pebble, no bound at all", "pebble", unix.RLIM_INFINITY, -1, autoOpenFilesMax},
		// A tiny ulimit still gets a working cache; checkLimits warns.
		{"segment, ulimit 1024", "segment", 1024, 65530, autoOpenFilesMin},
		{"segment, ulimit 0", "segment", 0, 65530, autoOpenFilesMin},
		{"memory keeps no files", "memory", 20000, 65530, engine.DefaultOpenFilesMax},
	} {
		if got := autoOpenFiles(tc.backend, tc.nofile, tc.maps); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestCheckLimitsOtherBackends: a cache sized from the limits is the
// storage.backend stores' only: a store of another backend gets the
// default bound, not as many descriptors again; a set value is every
// store's. Two log dirs share the sized cache.
func TestCheckLimitsOtherBackends(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := config.Config{StorageBackend: "segment", LogDirs: []string{"a", "b"}}
	own, others := checkLimits(cfg, log)
	if others != engine.DefaultOpenFilesMax {
		t.Errorf("sized from the limits: others %d, want %d", others, engine.DefaultOpenFilesMax)
	}
	var nofile unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &nofile); err != nil {
		t.Skip(err)
	}
	if want := max(autoOpenFiles("segment", nofile.Cur, readMaxMapCount())/2, autoOpenFilesMin); own != want {
		t.Errorf("sized from the limits over 2 log dirs: %d, want %d", own, want)
	}
	cfg.LogSegmentOpenFilesMax = 50
	if own, others := checkLimits(cfg, log); own != 50 || others != 50 {
		t.Errorf("set to 50: %d and %d", own, others)
	}
}
