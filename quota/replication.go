package quota

// Replication throttles, Kafka's ReplicationQuotaManager (KIP-73): one
// for the leader side (leader.replication.throttled.rate) and one for the
// follower side (follower.replication.throttled.rate) of a broker. Each
// measures the bytes of its throttled replicas with a SimpleRate over
// replication.quota.window.num samples of
// replication.quota.window.size.seconds and says whether that rate is above
// the configured bound. Enforcement is the callers':
//
//   - the leader answers a follower's fetch with no data for a throttled
//     partition while the quota is exceeded, unless that follower is in
//     the ISR (ReplicaManager.shouldLeaderThrottle), and records the bytes
//     of every throttled partition it sends, in sync or not;
//   - the follower leaves a throttled partition out of its fetches while
//     the quota is exceeded, unless it is caught up with the leader's high
//     watermark (RemoteLeaderEndPoint.shouldFollowerThrottle), and records
//     the bytes of every throttled partition it receives.
//
// In-sync replicas are never held back ("to avoid ISR thrashing"), but
// their bytes count, so the total replication traffic of throttled
// replicas stays near the bound.
//
// Which partitions are throttled comes from the topics'
// leader.replication.throttled.replicas and
// follower.replication.throttled.replicas ("*" or partition:brokerId
// pairs, config.ThrottledPartitions): the caller passes the topic's
// current value to Throttled, which parses a value once and reuses it
// until the value changes, so a topic config change applies with the next
// fetch.

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice/sluice/config"
)

// ReplicationConfig shapes a Replication quota: Kafka's
// replication.quota.window.num and replication.quota.window.size.seconds.
type ReplicationConfig struct {
	// BrokerID is this broker's id: the entries of a throttled replica
	// list that name it apply here.
	BrokerID int32
	Samples  int           // 0: 11
	Window   time.Duration // 0: 1s
	// Now returns the current time; nil: time.Now.
	Now func() time.Time
}

// Replication is one side's replication quota. Safe for concurrent use.
// With no bound set (math.MaxInt64, Kafka's default) Exceeded costs one
// atomic load.
type Replication struct {
	cfg    ReplicationConfig
	window int64        // ms
	bound  atomic.Int64 // bytes/s; math.MaxInt64: none

	mu   sync.Mutex
	rate sampled // bytes of the throttled partitions

	// lists caches each topic's parsed replica list, by topic name.
	lmu   sync.RWMutex
	lists map[string]*throttledList

	skipped atomic.Int64 // partitions held back (Skipped)
}

// throttledList is one topic's parsed replica list. Immutable.
type throttledList struct {
	raw   string  // the config value it was parsed from
	all   bool    // "*"
	parts []int32 // the partitions whose listed broker is this one
}

// NewReplication returns a quota with no bound and no throttled replica.
func NewReplication(cfg ReplicationConfig) *Replication {
	sampleDefaults(&cfg.Samples, &cfg.Window, &cfg.Now)
	r := &Replication{cfg: cfg, window: cfg.Window.Milliseconds(), lists: map[string]*throttledList{}}
	r.window = max(r.window, 1)
	r.rate = newSampled(cfg.Samples, r.window)
	r.bound.Store(math.MaxInt64)
	return r
}

// SetBound makes bytesPerSec the quota (a dynamic config change takes
// effect with the next check). Negative or math.MaxInt64: none. 0 is a
// bound, as Kafka's Quota.upperBound(0): any byte recorded exceeds it, so
// the throttled replicas not in sync stop (one fetch per quiet window).
func (r *Replication) SetBound(bytesPerSec int64) {
	if bytesPerSec < 0 {
		bytesPerSec = math.MaxInt64
	}
	r.bound.Store(bytesPerSec)
}

// Bound returns the quota in bytes/s (math.MaxInt64: none), Kafka's
// upperBound.
func (r *Replication) Bound() int64 { return r.bound.Load() }

// Throttled reports whether partition of topic is throttled on this
// broker, given the topic's current replica list (the value of its
// leader.replication.throttled.replicas or
// follower.replication.throttled.replicas; "" for none). Kafka's
// isThrottled. An invalid list throttles nothing (the topic config was
// validated when set).
func (r *Replication) Throttled(topic, list string, partition int32) bool {
	if r == nil || list == "" {
		return false
	}
	r.lmu.RLock()
	l := r.lists[topic]
	r.lmu.RUnlock()
	if l == nil || l.raw != list {
		l = r.parse(topic, list)
	}
	if l.all {
		return true
	}
	for _, p := range l.parts {
		if p == partition {
			return true
		}
	}
	return false
}

// parse parses and caches topic's list.
func (r *Replication) parse(topic, list string) *throttledList {
	parts, all, err := config.ThrottledPartitions(list, r.cfg.BrokerID)
	if err != nil {
		parts, all = nil, false
	}
	l := &throttledList{raw: list, all: all, parts: parts}
	r.lmu.Lock()
	r.lists[topic] = l
	r.lmu.Unlock()
	return l
}

// Forget drops topic's cached list (the topic was deleted).
func (r *Replication) Forget(topic string) {
	if r == nil {
		return
	}
	r.lmu.Lock()
	delete(r.lists, topic)
	r.lmu.Unlock()
}

// Exceeded reports whether the measured rate is above the bound, Kafka's
// isQuotaExceeded (a Sensor's checkQuotas: value > bound). Never with no
// bound.
func (r *Replication) Exceeded() bool {
	if r == nil {
		return false
	}
	b := r.bound.Load()
	if b == math.MaxInt64 {
		return false
	}
	now := r.cfg.Now().UnixMilli()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.simpleRateLocked(now) > float64(b)
}

// Record adds n bytes of throttled partitions, whatever the quota (Kafka's
// record, which never refuses).
func (r *Replication) Record(n int64) {
	if r == nil || n <= 0 {
		return
	}
	now := r.cfg.Now().UnixMilli()
	r.mu.Lock()
	r.rate.record(float64(n), now)
	r.mu.Unlock()
}

// Rate returns the measured bytes/s of the throttled partitions (the
// byte-rate metric).
func (r *Replication) Rate() float64 {
	if r == nil {
		return 0
	}
	now := r.cfg.Now().UnixMilli()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.simpleRateLocked(now)
}

// NoteSkipped counts n partitions held back by the throttle.
func (r *Replication) NoteSkipped(n int) {
	if r != nil && n > 0 {
		r.skipped.Add(int64(n))
	}
}

// Skipped returns how many partition fetches the throttle held back.
func (r *Replication) Skipped() int64 {
	if r == nil {
		return 0
	}
	return r.skipped.Load()
}

// simpleRateLocked is Kafka's SimpleRate: the bytes in the live windows
// over the time since the oldest began, at least one window (so a first
// burst is not divided by a few ms). Unlike the client quotas' Rate, it
// does not stretch a young sensor's span to samples-1 windows: a quota
// set while a move starts holds from the first second. REQUIRES: r.mu
// held.
func (r *Replication) simpleRateLocked(now int64) float64 {
	v, _ := r.rate.total(now) // purges the expired windows
	oldest := now
	for _, w := range r.rate.samples {
		oldest = min(oldest, w.start)
	}
	span := max(now-oldest, r.window)
	return v / (float64(span) / 1000)
}
