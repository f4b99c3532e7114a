package quota

// Sampled statistics as Kafka's metrics library keeps them
// (org.apache.kafka.common.metrics.stats: SampledStat, Rate, Avg,
// TokenBucket), with the same arithmetic, so that a client is throttled
// for as long as a Kafka broker would throttle it.
//
// A sampled stat holds up to `samples` windows of `window` ms. A record
// goes to the current window, or starts the next one (reusing the oldest
// slot) once the current is window ms old. Windows older than
// samples × window are reset when measured. A Rate is the sum of the
// windows over the time they span, which is at least (samples-1) × window:
// a client's first burst is averaged over ~10 s, not over the few ms it
// took.

// sample is one window of a sampled stat.
type sample struct {
	start int64   // ms: when the window began (Kafka's lastWindowMs)
	value float64 // sum of the values recorded in it
	count int64   // events recorded in it
}

// sampled is Kafka's SampledStat with the windows of a rate. Not safe for
// concurrent use: its sensor's lock guards it.
type sampled struct {
	samples []sample // len = used windows, cap = samples
	current int      // index of the current window
	window  int64    // ms
}

func newSampled(samples int, window int64) sampled {
	return sampled{samples: make([]sample, 0, samples), window: window}
}

func (s *sampled) cur(now int64) *sample {
	if len(s.samples) == 0 {
		s.samples = append(s.samples, sample{start: now})
	}
	return &s.samples[s.current]
}

// record adds v at now.
func (s *sampled) record(v float64, now int64) {
	c := s.cur(now)
	if now-c.start >= s.window {
		s.current = (s.current + 1) % cap(s.samples)
		if s.current >= len(s.samples) {
			s.samples = append(s.samples, sample{start: now})
		} else {
			s.samples[s.current] = sample{start: now}
		}
		c = &s.samples[s.current]
	}
	c.value += v
	c.count++
}

// purge resets the windows that are too old to count at now.
func (s *sampled) purge(now int64) {
	expire := int64(cap(s.samples)) * s.window
	for i := range s.samples {
		if now-s.samples[i].start >= expire {
			s.samples[i] = sample{start: now}
		}
	}
}

// total returns the sum and event count of the live windows at now.
func (s *sampled) total(now int64) (float64, int64) {
	s.purge(now)
	var v float64
	var n int64
	for _, w := range s.samples {
		v += w.value
		n += w.count
	}
	return v, n
}

// span is Kafka's Rate.windowSize: the ms the live windows cover, at
// least (samples-1) full windows, at least 1.
func (s *sampled) span(now int64) int64 {
	s.purge(now)
	oldest := now
	if len(s.samples) == 0 {
		s.samples = append(s.samples, sample{start: now})
	}
	for _, w := range s.samples {
		oldest = min(oldest, w.start)
	}
	elapsed := now - oldest
	full := elapsed / s.window
	if minFull := int64(cap(s.samples) - 1); full < minFull {
		elapsed += (minFull - full) * s.window
	}
	return max(elapsed, 1)
}

// rate is Kafka's Rate: the sum over the span, per second.
func (s *sampled) rate(now int64) float64 {
	v, _ := s.total(now)
	return v / (float64(s.span(now)) / 1000)
}

// avg is Kafka's Avg: the mean of the values recorded in the live
// windows (0 with none).
func (s *sampled) avg(now int64) float64 {
	v, n := s.total(now)
	if n == 0 {
		return 0
	}
	return v / float64(n)
}

// throttleMs is QuotaUtils.throttleTime: how long a client whose rate is
// value over bound must wait for the rate to fall to bound,
// (value-bound)/bound × span, rounded.
func throttleMs(value, bound float64, span int64) int64 {
	ms := (value - bound) / bound * float64(span)
	if ms >= float64(maxThrottle) {
		return maxThrottle
	}
	return int64(ms + 0.5)
}

// maxThrottle bounds every throttle time (ms): a quota set to 1 byte/s
// must not produce an int32 overflow on the wire. Kafka's byte-rate
// throttles are unbounded in principle; a day is beyond any client's
// request timeout.
const maxThrottle = 24 * 3600 * 1000

// bucket is Kafka's TokenBucket (KIP-599): it refills at the quota's rate
// up to a burst of (samples-1) × window × rate, and may go negative.
type bucket struct {
	tokens float64
	last   int64 // ms; 0: never updated, so the first refill fills it
}

func (b *bucket) refill(rate, burst float64, now int64) {
	b.tokens = min(burst, b.tokens+rate*float64(now-b.last)/1000)
	b.last = now
}
