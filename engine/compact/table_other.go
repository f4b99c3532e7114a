//go:build !unix

package compact

// newTable returns a zeroed table of n slots on the Go heap (see
// table_unix.go for why unix systems map it instead).
func newTable(n int) ([]slot, []byte) { return make([]slot, n), nil }

func releaseWith(*OffsetMap, []byte) {}

func clearTable(table []slot, _ []byte) { clear(table) }
