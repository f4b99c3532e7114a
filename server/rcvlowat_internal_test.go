package server

import (
	"errors"
	"syscall"
	"testing"
)

// failingRaw is a syscall.RawConn whose Control always fails.
type failingRaw struct{ syscall.RawConn }

func (failingRaw) Control(func(fd uintptr)) error { return errors.New("closed") }

// TestRcvLowatSetFailure: failing to raise the mark only turns the marks
// off for the connection; failing to lower a raised one is an error (the
// reader closes the connection rather than let a small request wait on a
// high mark).
func TestRcvLowatSetFailure(t *testing.T) {
	l := rcvLowat{raw: failingRaw{}, cur: 1}
	if err := l.set(1 << 20); err != nil || l.raw != nil || l.cur != 1 {
		t.Fatalf("raise failed: err %v, raw %v, cur %d; want no error and marks off", err, l.raw, l.cur)
	}
	if err := l.reset(); err != nil {
		t.Fatalf("reset with marks off: %v", err)
	}
	l = rcvLowat{raw: failingRaw{}, cur: 1 << 20}
	if err := l.reset(); err == nil {
		t.Fatal("lowering a raised mark failed without an error")
	}
}
