package segment

import (
	"os"
	"strconv"
)

// SEGMENT_OPEN_MAX=n runs the package's tests with an open-segment cache
// of n segments (1 makes nearly every access reopen files), so that every
// test also exercises eviction and reopening.
func init() {
	if v := os.Getenv("SEGMENT_OPEN_MAX"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			panic("SEGMENT_OPEN_MAX: " + err.Error())
		}
		setOpenSegmentsMax(n)
	}
}

func init() {
	// Stores abandoned by crash tests would otherwise checkpoint their
	// stale recovery points into reused directories a minute later; the
	// tests of the periodic checkpoint turn it on themselves.
	setRecoveryCheckpointInterval(0)
}
