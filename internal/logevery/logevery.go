// Package logevery aggregates a log line that a flood would repeat: the
// first event is logged at once, later ones are counted into the next
// line, at most one line per period. A storm of refused logins or of
// connections closed by a timeout then costs one line a minute, not one
// per event, and no event goes uncounted.
package logevery

import (
	"sync"
	"time"
)

// Counter counts events between log lines. Safe for concurrent use; the
// zero value is ready.
type Counter struct {
	mu   sync.Mutex
	last time.Time // when the last line was due
	n    int64     // events since that line
}

// Note counts one event at now. When a line is due (the first event, or
// period has passed since the last line) it returns the events that line
// reports, this one included, and true; otherwise 0 and false.
func (c *Counter) Note(now time.Time, period time.Duration) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	if !c.last.IsZero() && now.Sub(c.last) < period {
		return 0, false
	}
	n := c.n
	c.n, c.last = 0, now
	return n, true
}

// Pending is the number of events counted since the last line.
func (c *Counter) Pending() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}
