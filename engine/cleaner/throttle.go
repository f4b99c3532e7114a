package cleaner

import (
	"errors"
	"math"
	"sync"
	"time"
)

var errStopped = errors.New("cleaner: stopped")

// throttler bounds the cleaner threads' I/O together to a rate, as Kafka's
// Throttler does for log.cleaner.io.max.bytes.per.second: it counts bytes
// over a window and, when they run ahead of the rate, sleeps until the
// rate is met.
type throttler struct {
	rate float64 // bytes per second; 0: unthrottled
	stop <-chan struct{}

	mu          sync.Mutex
	windowStart time.Time
	bytes       float64
}

// window is how long the throttler averages over (Kafka checks every 300 ms).
const window = 300 * time.Millisecond

func newThrottler(rate float64, stop <-chan struct{}) *throttler {
	if rate <= 0 || math.IsInf(rate, 1) || rate >= math.MaxFloat64 {
		rate = 0
	}
	return &throttler{rate: rate, stop: stop}
}

// take accounts n bytes and sleeps while the threads are ahead of the rate.
func (t *throttler) take(n int64) {
	if t.rate == 0 {
		return
	}
	t.mu.Lock()
	now := time.Now()
	if t.windowStart.IsZero() {
		t.windowStart = now
	}
	t.bytes += float64(n)
	elapsed := now.Sub(t.windowStart)
	var sleep time.Duration
	if elapsed >= window || t.bytes/t.rate > elapsed.Seconds() {
		// The time these bytes should have taken, less the time they did.
		if need := time.Duration(t.bytes / t.rate * float64(time.Second)); need > elapsed {
			sleep = need - elapsed
		}
		if elapsed+sleep >= window {
			t.windowStart, t.bytes = now.Add(sleep), 0
		}
	}
	t.mu.Unlock()
	if sleep > 0 {
		timer := time.NewTimer(sleep)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-t.stop:
		}
	}
}
