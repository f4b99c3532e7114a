package server

import (
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// maxFrameMappings bounds the mappings of frames being read at once. Each
// is a VMA of the process, and vm.max_map_count (65530 by default) is
// shared with the Go runtime and the mmapped indexes: a runtime that finds
// no VMA left dies. Past the bound frames are read into the heap, as on
// other platforms; 1024 connections each reading a frame above
// smallFrameMax already hold 64 MiB of the pool or more.
const maxFrameMappings = 1024

var frameMappings atomic.Int32

// mapFrame returns n bytes of anonymous memory outside the Go heap for a
// frame being read (see frameBuf), or nil when the kernel refuses or
// maxFrameMappings are in use. Pages cost resident memory only once
// written, and unmapFrame gives them back to the kernel at once.
// MAP_NORESERVE: the frame's bytes are already counted by the memPool,
// and a 100 MiB mapping of which a slow client sent 1 MiB should not
// count 100 MiB against vm.overcommit.
func mapFrame(n int) []byte {
	if frameMappings.Add(1) > maxFrameMappings {
		frameMappings.Add(-1)
		return nil
	}
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		frameMappings.Add(-1)
		return nil
	}
	return b
}

// adviseHugeFrame asks for transparent huge pages in a frame's mapping
// (madvise MADV_HUGEPAGE), so that the socket reads filling it fault once
// per 2 MiB instead of once per 4 KiB page. In THP's "madvise" mode (as
// on the machines of BENCHMARKS.md) anonymous memory gets huge pages only
// where advised. On the paravirtualized hosts these benchmarks run on a
// page fault costs 10-14 us: filling fresh 16 MiB mappings in 64 KiB
// copies cost 3.3-3.5 CPU s per GB in 4 KiB pages and 0.07 with the
// advice (BENCHMARKS.md, "Huge pages for the frames read into
// mappings"). frameBuf.grow advises a mapping once its charge reaches
// hugeFrameBytes, so the pages a slow client can make resident stay
// within twice what the pool charged it (a huge page at the end of what
// was read, at most the charge again). The advice is a hint: the kernel
// may fall back to small pages, and an error (THP compiled out) is
// ignored.
func adviseHugeFrame(b []byte) {
	_ = unix.Madvise(b, unix.MADV_HUGEPAGE)
}

// unmapFrame releases a mapping from mapFrame. b must not be used after.
func unmapFrame(b []byte) {
	if unix.Munmap(b) == nil {
		frameMappings.Add(-1)
	}
}
