//go:build race

package server

// raceEnabled: the race detector changes what a decode allocates, so the
// tests that measure bytes allocated skip under it (they run in `make
// unit`, which has no -race).
const raceEnabled = true
