package pebblelog

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// syncFSMin is how many dirty data files make a store-wide flush use one
// syncfs(2) of the data directory's file system instead of one fdatasync
// per file: a broker stopping with 100,000 written partitions would
// otherwise spend tens of seconds in fdatasyncs (segment's Store.Close
// does the same, see segment/syncfs_linux.go).
const syncFSMin = 32

// syncFS syncs the file system holding f: every file's data and metadata,
// directories included. It reports the file system's writeback errors
// since f was opened only on Linux 5.8 and later (syncFSReportsErrors).
func syncFS(f *os.File) error {
	for {
		if err := unix.Syncfs(int(f.Fd())); err != unix.EINTR {
			return err
		}
	}
}

// syncFSReportsErrors reports whether this kernel's syncfs(2) returns the
// writeback errors of the file system (Linux 5.8 and later), which a flush
// must see; before that the store fdatasyncs each file.
func syncFSReportsErrors() bool {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return false
	}
	parts := strings.SplitN(unix.ByteSliceToString(u.Release[:]), ".", 3)
	if len(parts) < 2 {
		return false
	}
	n := 0
	for n < len(parts[1]) && parts[1][n] >= '0' && parts[1][n] <= '9' {
		n++
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1][:n])
	return err1 == nil && err2 == nil && (major > 5 || (major == 5 && minor >= 8))
}
