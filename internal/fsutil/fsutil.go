// Package fsutil holds the file-system durability calls both storage
// backends make: fsync of a directory, and syncfs(2) of a whole file
// system with the kernel check that says whether it reports writeback
// errors.
package fsutil

import (
	"os"
	"strconv"
	"strings"
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
