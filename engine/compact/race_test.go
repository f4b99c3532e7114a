//go:build race

package compact

// raceEnabled: the race detector slows decompression and recompression
// some twentyfold, so the randomized tests do fewer iterations under it.
const raceEnabled = true
