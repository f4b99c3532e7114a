package fsutil

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// SyncFS makes everything written to the file system holding f durable
// with one syncfs(2): the data and metadata of every file on it, the pages
// dirtied through shared mappings included, and the directories. It
// returns a writeback error that happened on the file system since f was
// opened (or earlier, if nobody saw it yet) only where SyncFSReportsErrors.
func SyncFS(f *os.File) error {
	for {
		err := unix.Syncfs(int(f.Fd()))
		if err != unix.EINTR {
			return err
		}
	}
}

// SyncFSReportsErrors reports whether this kernel's syncfs(2) returns the
// writeback errors of the file system (Linux 5.8 and later: the
// superblock's errseq_t). Before that it only returned errors of the call
// itself, and a caller that must see them fsyncs each file instead.
func SyncFSReportsErrors() bool {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return false
	}
	return kernelAtLeast(unix.ByteSliceToString(u.Release[:]), 5, 8)
}

// errNoFallocate marks a file system without fallocate(2) (Reserver stops
// trying on it).
var errNoFallocate = errors.New("fsutil: fallocate unsupported")

// fallocateKeepSize allocates [off, off+n) of f without changing its size.
func fallocateKeepSize(f *os.File, off, n int64) error {
	for {
		err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_KEEP_SIZE, off, n)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EOPNOTSUPP || err == unix.ENOSYS:
			return fmt.Errorf("%w: %w", errNoFallocate, err)
		}
		return err
	}
}

// StartWriteback asks the kernel to start writing the dirty pages of
// [off, off+n) of f to disk (sync_file_range(2) with
// SYNC_FILE_RANGE_WRITE) and returns without waiting for them. It makes
// nothing durable: the file's metadata is not written, and a writeback
// error is reported by the next fsync(2) of f, not here. It may block
// while the device's request queue is full.
func StartWriteback(f *os.File, off, n int64) error {
	for {
		err := unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.ENOSYS || err == unix.EOPNOTSUPP || err == unix.ESPIPE:
			return fmt.Errorf("%w: %w", ErrNoWriteback, err)
		}
		return err
	}
}
