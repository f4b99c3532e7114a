// Package fsutil holds the file-system calls the storage backends share:
// fsync of a directory, syncfs(2) of a whole file system with the kernel
// check that says whether it reports writeback errors, and a raw open of
// regular files.
package fsutil

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// SyncDir fsyncs a directory, making the entries created, renamed or
// removed in it durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// kernelAtLeast parses the "major.minor" prefix of a kernel release
// ("6.18.44-fc-v1098") and compares it with major.minor.
func kernelAtLeast(release string, major, minor int) bool {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(parts[1][:digits(parts[1])]) // "8-rc1" in "5.8-rc1"
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || (ma == major && mi >= minor)
}

// digits returns the length of s's leading run of decimal digits.
func digits(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

// OpenRaw opens path read-write (flags adds to O_RDWR|O_CLOEXEC, e.g.
// O_CREAT) with open(2) and returns the descriptor, retrying on EINTR as
// package os does. os.OpenFile would also try to register the descriptor
// with the runtime's poller (two fcntl(2) to make it non-blocking, an
// epoll_ctl(2) that fails for a regular file, two more fcntl(2) to make it
// blocking again): five system calls that a regular file never needs. For
// files opened often: segments reopened by the open-file cache, index
// files opened to be mapped.
func OpenRaw(path string, flags int) (int, error) {
	for {
		fd, err := syscall.Open(path, syscall.O_RDWR|syscall.O_CLOEXEC|flags, 0o644)
		if err != syscall.EINTR {
			if err != nil {
				return -1, &os.PathError{Op: "open", Path: path, Err: err}
			}
			return fd, nil
		}
	}
}

// ErrNoWriteback marks a file (or system) on which StartWriteback cannot
// start writeback; a caller stops asking.
var ErrNoWriteback = errors.New("fsutil: starting writeback is unsupported")
