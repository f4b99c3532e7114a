package group

import "time"

// Clock is the coordinator's source of time and timers. Tests inject a fake
// one so that session and rebalance timeouts fire when the test says, not
// when the wall clock does.
//
// AfterFunc must call f at most once, in its own goroutine or in the
// goroutine that advances the clock, never while the caller of AfterFunc is
// still inside AfterFunc. Stop prevents a call that has not started; a call
// already started may still run, so every callback revalidates its state.
type Clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc call.
type Timer interface {
	// Stop cancels the call if it has not started and reports whether it did.
	Stop() bool
}

// realClock is the wall clock, with an optional replacement for Now.
type realClock struct{ now func() time.Time }

func (c realClock) Now() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}

func (realClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
