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
// holds: for segment an open segment's .log descriptor and its two index
// mappings (the index files are closed once mapped: mmapindex; a
// .txnindex is open only while it is written) (segment/opencache.go); for
// pebble one partition's data file (engine/pebblelog/datafile.go); memory
// keeps no files.
func openFileCost(backend string) (fds, maps int) {
	switch backend {
	case "segment", "":
		return 1, 2
	case "pebble":
		return 1, 0
	default:
		return 0, 0
	}
}

// fdReserve is the least the broker keeps besides the backend's cache:
// connections, the metastore (Pebble), checkpoints being written, ZooKeeper.
// mapReserve is the same for mappings (the runtime's heap, Pebble's
// files, the other backends' mappings).
const (
	fdReserve  = 1024
	mapReserve = 1024
)

// Bounds of the size checkLimits derives for log.segment.open.files.max
// when it is 0: at least autoOpenFilesMin (the cache still works, slower,
// under a tiny ulimit; the warning says so), at most autoOpenFilesMax.
const (
	autoOpenFilesMin = 64
	autoOpenFilesMax = 1 << 20
)

// autoOpenFiles sizes the open-file cache (log.segment.open.files.max 0)
// from the limits: three quarters of the descriptors left after
// fdReserve (the rest, at least a quarter of RLIMIT_NOFILE, stays for
// connections), and the mappings vm.max_map_count leaves after
// mapReserve. Kafka keeps every segment open and asks operators for a
// large ulimit; Sluice keeps what the limits allow open, so that at
// 10,000 active partitions under `ulimit -n` 20000 each appends to an
// open file (a reopen per append cost a quarter of the broker's CPU there,
// BENCHMARKS.md), and stays within them at any partition count.
// nofile is the soft RLIMIT_NOFILE (RLIM_INFINITY: no bound), maxMaps
// vm.max_map_count (< 0: unknown).
func autoOpenFiles(backend string, nofile uint64, maxMaps int64) int {
	fds, maps := openFileCost(backend)
	if fds == 0 {
		return engine.DefaultOpenFilesMax
	}
	n := uint64(autoOpenFilesMax)
	if nofile != unix.RLIM_INFINITY {
		left := uint64(0)
		if nofile > fdReserve {
			left = (nofile - fdReserve) * 3 / 4
		}
		n = min(n, left/uint64(fds))
	}
	if maps > 0 && maxMaps > 0 {
		n = min(n, uint64(max(maxMaps-mapReserve, 0))/uint64(maps))
	}
	return int(max(n, autoOpenFilesMin))
}

// checkLimits raises the soft RLIMIT_NOFILE to the hard one (as Kafka's
// packaged services and most servers do; connections need descriptors
// too), sizes the storage backend's open-file cache
// (log.segment.open.files.max, one per log dir) from the limits when it
// is 0 (autoOpenFiles, shared among the log dirs), logs what the descriptor and mapping limits allow
// given the cache, and warns when the cache cannot fit in them. It
// returns the cache's size for the stores of storage.backend, and for
// those of another backend a topic opens in a log dir (others): the key's
// value when it is set, else engine.DefaultOpenFilesMax, so that such a
// store does not take as many descriptors again as the limits allowed the
// first (the quarter of RLIMIT_NOFILE autoOpenFiles leaves covers it). It
// never fails the start: a limit it cannot read or raise is logged.
func checkLimits(cfg config.Config, log *slog.Logger) (openSegs, others int) {
	openSegs, others = cfg.LogSegmentOpenFilesMax, cfg.LogSegmentOpenFilesMax
	if others <= 0 {
		others = engine.DefaultOpenFilesMax
	}

	var nofile unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &nofile); err != nil {
		log.Warn("broker: cannot read RLIMIT_NOFILE", "err", err)
		if openSegs <= 0 {
			openSegs = engine.DefaultOpenFilesMax
		}
		return openSegs, others
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
	// Each log dir's store has its own cache (a topic on another backend
	// opens one more, of others, in the dirs that hold it).
	dirs := max(len(cfg.LogDirs), 1)
	auto := openSegs <= 0
	if auto {
		openSegs = max(autoOpenFiles(cfg.StorageBackend, nofile.Cur, maxMaps)/dirs, autoOpenFilesMin)
	}
	fds, maps := openFileCost(cfg.StorageBackend)
	needFds := uint64(dirs*openSegs*fds + fdReserve)
	needMaps := int64(dirs * openSegs * maps)
	log.Info("broker: file and mapping limits",
		"nofileSoft", nofile.Cur, "nofileHard", nofile.Max, "vmMaxMapCount", maxMaps,
		"storage.backend", cfg.StorageBackend, "log.segment.open.files.max", openSegs, "sizedFromLimits", auto,
		"logDirs", dirs, "storageFds", dirs*openSegs*fds, "storageMaps", needMaps,
		"connectionsLeft", int64(nofile.Cur)-int64(needFds))
	if nofile.Cur != unix.RLIM_INFINITY && nofile.Cur < needFds {
		log.Warn("broker: RLIMIT_NOFILE is below what log.segment.open.files.max needs; lower it or raise ulimit -n",
			"need", needFds, "soft", nofile.Cur)
	}
	if maxMaps > 0 && maxMaps < needMaps+mapReserve {
		log.Warn("broker: vm.max_map_count is below what log.segment.open.files.max needs; lower it or raise the sysctl",
			"need", needMaps+mapReserve, "vmMaxMapCount", maxMaps)
	}
	return openSegs, others
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
