package engine

import "sync/atomic"

// startMoves counts the times any log of this process moved its start
// offset (retention, DeleteBefore, a truncation that restarts the log,
// tiered storage dropping local segments).
var startMoves atomic.Uint64

// StartMoved records that a log's start offset changed. Backends call it
// after they publish the new start offset, so that a reader that loads
// StartMoves before StartOffset and finds StartMoves unchanged later knows
// that no log's start offset moved since what it read.
func StartMoved() { startMoves.Add(1) }

// StartMoves returns how many times a log start offset moved so far in
// this process. It is coarse (one counter for every log of every store):
// the fetch path uses it to tell, without touching each log, that the log
// start offsets it last answered are still current (server/fetch_session.go),
// and a move anywhere only sends it back to reading them.
func StartMoves() uint64 { return startMoves.Load() }
