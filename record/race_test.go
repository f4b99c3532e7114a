//go:build race

package record

// raceEnabled: the race detector makes sync.Pool drop items on purpose,
// so pooled paths allocate.
const raceEnabled = true
