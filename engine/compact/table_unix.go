//go:build unix

package compact

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// newTable returns a zeroed table of n slots, mapped anonymously outside
// the Go heap, and the mapping (nil when the map had to fall back to the
// heap).
//
// Why not make: the table is log.cleaner.dedupe.buffer.size, 128 MiB by
// default, allocated when the cleaner starts. On the Go heap it counts as
// live memory, so with GOGC=100 it raises the heap goal by 128 MiB: the
// broker then lets that much garbage pile up before collecting, and the
// garbage is resident memory, while the table itself, untouched until a
// cleaning round, is not. Measured with `bin/scale` (pebble, 100,000
// partitions): 3.97 KiB of RSS per partition right after growing with the
// table on the heap, 3.36 KiB with the cleaner off. A mapping has no such
// effect, and Clear can hand its pages back (MADV_DONTNEED).
func newTable(n int) ([]slot, []byte) {
	size := n * int(unsafe.Sizeof(slot{}))
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return make([]slot, n), nil
	}
	return unsafe.Slice((*slot)(unsafe.Pointer(unsafe.SliceData(mem))), n), mem
}

// releaseWith unmaps mem once m is unreachable.
func releaseWith(m *OffsetMap, mem []byte) {
	if mem != nil {
		runtime.AddCleanup(m, func(mem []byte) { _ = unix.Munmap(mem) }, mem)
	}
}

// clearTable empties the table: on Linux a mapped one by dropping its
// pages (MADV_DONTNEED on a private anonymous mapping: they read as zero
// again, and are resident only once written), otherwise by zeroing it
// (elsewhere MADV_DONTNEED may keep the contents).
func clearTable(table []slot, mem []byte) {
	if runtime.GOOS == "linux" && mem != nil && unix.Madvise(mem, unix.MADV_DONTNEED) == nil {
		return
	}
	clear(table)
}
