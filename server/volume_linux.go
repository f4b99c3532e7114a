package server

import "golang.org/x/sys/unix"

// volumeSpace returns the total and the unprivileged-usable bytes of the
// volume holding dir. On Linux statfs counts blocks in fragment units
// (f_frsize); f_bsize is only the preferred I/O size. The fields' widths
// differ by architecture (int32 on 386), hence the conversions.
func volumeSpace(dir string) (total, usable int64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	unit := int64(st.Frsize)
	if unit <= 0 {
		unit = int64(st.Bsize)
	}
	return int64(st.Blocks) * unit, int64(st.Bavail) * unit, nil
}
