package segment

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// syncFS makes everything written to the file system holding f durable
// with one syncfs(2): the data and metadata of every file on it, the
// pages dirtied through shared mappings included, and the directories.
// It returns a writeback error that happened on the file system since f
// was opened (or earlier, if nobody saw it yet): Linux reports those from
// syncfs since 5.8 (see syncFSReportsErrors).
func syncFS(f *os.File) error {
	for {
		err := unix.Syncfs(int(f.Fd()))
		if err != unix.EINTR {
			return err
		}
	}
}

// syncFSReportsErrors reports whether this kernel's syncfs(2) returns the
// writeback errors of the file system (Linux 5.8 and later: the
// superblock's errseq_t). Before that it only returned errors of the
// call itself, and a Store fsyncs each log instead.
func syncFSReportsErrors() bool {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return false
	}
	return kernelAtLeast(unix.ByteSliceToString(u.Release[:]), 5, 8)
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
