//go:build unix && !linux

package server

import "golang.org/x/sys/unix"

// volumeSpace returns the total and the unprivileged-usable bytes of the
// volume holding dir. Blocks are counted in f_bsize units on the BSDs and
// darwin, whose field widths differ (uint32 on darwin), hence the
// conversions.
func volumeSpace(dir string) (total, usable int64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	return int64(st.Blocks) * int64(st.Bsize), int64(st.Bavail) * int64(st.Bsize), nil
}
