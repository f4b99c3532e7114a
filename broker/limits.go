package broker

import (
	"log/slog"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/engine"
)

// What one entry of a backend's open-file cache (log.segment.open.files.max)
// holds: for segment an open segment's .log, .index and .timeindex
// descriptors and its two index mappings (segment/opencache.go); for pebble
// one partition's data file (engine/pebblelog/datafile.go); memory keeps no
// files.
func openFileCost(backend string) (fds, maps int) {
	switch backend {
	case "segment", "":
		return 3, 2
	case "pebble":
		return 1, 0
	default:
		return 0, 0
	}
}

// fdReserve is what the broker needs besides the backend's cache:
// connections, the metastore (Pebble), checkpoints being written, ZooKeeper.
const fdReserve = 1024

// checkLimits raises the soft RLIMIT_NOFILE to the hard one (as Kafka's
// packaged services and most servers do; connections need descriptors
// too), and logs what the descriptor and mapping limits allow given the
// storage backend's open-file cache (log.segment.open.files.max),
// warning when the cache cannot fit in them. It never fails the start: a
// limit it cannot read or raise is logged.
func checkLimits(cfg config.Config, log *slog.Logger) {
	openSegs := cfg.LogSegmentOpenFilesMax
	if openSegs <= 0 {
		openSegs = engine.DefaultOpenFilesMax
	}

	var nofile unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &nofile); err != nil {
		log.Warn("broker: cannot read RLIMIT_NOFILE", "err", err)
		return
	}
	if nofile.Cur < nofile.Max {
		raised := nofile
		raised.Cur = nofile.Max
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &raised); err != nil {
			log.Warn("broker: cannot raise the soft RLIMIT_NOFILE to the hard limit", "soft", nofile.Cur, "hard", nofile.Max, "err", err)
		} else {
			log.Info("broker: raised the soft RLIMIT_NOFILE to the hard limit", "from", nofile.Cur, "to", raised.Cur)
			nofile = raised
		}
	}
	maxMaps := readMaxMapCount()
	fds, maps := openFileCost(cfg.StorageBackend)
	needFds := uint64(openSegs*fds + fdReserve)
	needMaps := int64(openSegs * maps)
	log.Info("broker: file and mapping limits",
		"nofileSoft", nofile.Cur, "nofileHard", nofile.Max, "vmMaxMapCount", maxMaps,
		"storage.backend", cfg.StorageBackend, "log.segment.open.files.max", openSegs,
		"storageFds", openSegs*fds, "storageMaps", needMaps,
		"connectionsLeft", int64(nofile.Cur)-int64(needFds))
	if nofile.Cur != unix.RLIM_INFINITY && nofile.Cur < needFds {
		log.Warn("broker: RLIMIT_NOFILE is below what log.segment.open.files.max needs; lower it or raise ulimit -n",
			"need", needFds, "soft", nofile.Cur)
	}
	if maxMaps > 0 && maxMaps < needMaps+1024 {
		log.Warn("broker: vm.max_map_count is below what log.segment.open.files.max needs; lower it or raise the sysctl",
			"need", needMaps+1024, "vmMaxMapCount", maxMaps)
	}
}

// readMaxMapCount returns vm.max_map_count, or -1 when it cannot be read
// (not Linux).
func readMaxMapCount() int64 {
	b, err := os.ReadFile("/proc/sys/vm/max_map_count")
	if err != nil {
		return -1
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return -1
	}
	return n
}
