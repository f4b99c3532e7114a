// Package testenv sorts tests into the two runs the Makefile offers:
// `make unit` (go test -short) runs every test that starts no process and
// needs no installed program; `make test` runs everything.
//
// A test that starts a process (a built sluice binary, ZooKeeper on Java,
// kcat, a Python or Node client, chromium, openssl, or the test binary
// itself as a child to kill) calls NeedsProcess first, usually through the
// helper that finds or starts that program (internal/zktest.Start, the e2e
// harness's sluiceBinary and need). Whether a missing program skips or
// fails a full run stays that helper's decision (under CI=true it fails);
// NeedsProcess only takes such tests out of the short run.
package testenv

import "testing"

// NeedsProcess skips t under `go test -short` and does nothing otherwise.
// what names the process or program, for the skip message. Call it from
// the test's goroutine (it may call t.Skip), before the test starts
// anything it would have to stop.
func NeedsProcess(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("starts %s: not in -short (make unit); make test runs it", what)
	}
}
