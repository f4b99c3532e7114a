// Package safe turns a panic in a goroutine that runs request work (a
// partition's produce, an append round, a replica fetcher's round, a
// coordinator's load) into an error for that request or partition, so a
// bug hit by one request or one partition cannot take the broker down with
// it. The panic is logged with its stack: it is still a bug.
package safe

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
)

// ErrPanic marks an error made from a recovered panic.
var ErrPanic = errors.New("safe: recovered panic")

// Call runs fn and returns its error, or, if fn panics, an error wrapping
// ErrPanic that names what (logged at Error with the stack to log).
func Call(log *slog.Logger, what string, fn func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%w in %s: %v", ErrPanic, what, v)
			log.Error("panic recovered; the work failed, the broker goes on", "in", what, "panic", v, "stack", string(debug.Stack()))
		}
	}()
	return fn()
}
