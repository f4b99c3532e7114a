package server

import "golang.org/x/sys/unix"

// mapFrame returns n bytes of anonymous memory outside the Go heap for a
// frame being read (see frameBuf), or nil when the kernel refuses. Pages
// cost resident memory only once written, and unmapFrame gives them back
// to the kernel at once. MAP_NORESERVE: the frame's bytes are already
// counted by the memPool, and a 100 MiB mapping of which a slow client
// sent 1 MiB should not count 100 MiB against vm.overcommit.
func mapFrame(n int) []byte {
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil
	}
	return b
}

// unmapFrame releases a mapping from mapFrame. b must not be used after.
func unmapFrame(b []byte) {
	unix.Munmap(b)
}
