package main

import (
	"fmt"
	"os"
	"runtime/trace"
)

// startTrace starts a runtime execution trace of the whole run written to
// path (nothing when path is ""), for `go tool trace`: where goroutines
// waited (network, sync, scheduler: `go tool trace -pprof=net|sync|sched`)
// while a client had work queued. The returned func stops it and closes the
// file; it runs on a clean shutdown, so a SIGKILL leaves a truncated trace.
// A trace costs the broker a few percent of CPU while it runs.
func startTrace(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--trace: %w", err)
	}
	if err := trace.Start(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--trace: %w", err)
	}
	return func() {
		trace.Stop()
		f.Close()
	}, nil
}
