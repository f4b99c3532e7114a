package quota

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// Config shapes a Manager's sampled rates: Kafka's quota.window.num and
// quota.window.size.seconds, and controller.quota.window.* for
// controller_mutation_rate.
type Config struct {
	Samples           int
	Window            time.Duration
	ControllerSamples int
	ControllerWindow  time.Duration
	// Now returns the current time; nil: time.Now.
	Now func() time.Time
}

// The levels at which quotas are set (Kafka's QuotaTypes bits): they
// decide which sensor a client's usage goes to (tagsFor).
const (
	levelClientID     = 1
	levelUser         = 2
	levelUserClientID = 4
)

// tags are Kafka's quota metric tags: the user and client id a client's
// usage is accounted under, "" for a level that does not apply. Clients
// with equal tags share one sensor (all clients of a user with a user
// quota share that user's rate).
type tags struct{ user, clientID string }

// sensor is the usage of one tag set for one quota type.
type sensor struct {
	mu       sync.Mutex
	rate     sampled // bytes, request time % or mutations
	throttle sampled // throttle times applied (ms), for the average
	bucket   bucket  // ControllerMutation only
	// used is when it was last recorded to (ms): sensors idle for
	// sensorExpiry are dropped.
	used atomic.Int64
}

// sensorExpiry is Kafka's InactiveSensorExpirationTimeSeconds.
const sensorExpiry = int64(time.Hour / time.Millisecond)

// sweepEvery is how often, at most, creating a sensor sweeps out the
// idle ones.
const sweepEvery = int64(time.Minute / time.Millisecond)

// Manager enforces client quotas. Safe for concurrent use. The zero
// quota set costs a request one atomic load (Record returns at once).
type Manager struct {
	cfg                  Config
	window, ctrlWindow   int64 // ms
	samples, ctrlSamples int
	// levels holds, per quota type, the level bits of the quotas of that
	// type set now: Kafka keeps one ClientQuotaManager per type, each with
	// its own overridden quotas and enabled levels, so an entity that sets
	// only consumer_byte_rate takes no part in produce's precedence.
	levels [NumTypes]atomic.Uint32
	// anyLevel is the union of levels: Enabled's one atomic load.
	anyLevel  atomic.Uint32
	mu        sync.RWMutex
	overrides map[Entity]Values
	sensors   [NumTypes]map[tags]*sensor
	lastSweep int64
}

// sampleDefaults fills in what a quota configuration leaves unset with
// Kafka's defaults: *samples below 1 becomes 11 (quota.window.num), *window
// not positive becomes 1s (quota.window.size.seconds), and *now, when now
// is not nil, nil becomes time.Now.
func sampleDefaults(samples *int, window *time.Duration, now *func() time.Time) {
	if *samples < 1 {
		*samples = 11
	}
	if *window <= 0 {
		*window = time.Second
	}
	if now != nil && *now == nil {
		*now = time.Now
	}
}

// New returns a manager with no quota set.
func New(cfg Config) *Manager {
	sampleDefaults(&cfg.Samples, &cfg.Window, &cfg.Now)
	sampleDefaults(&cfg.ControllerSamples, &cfg.ControllerWindow, nil)
	m := &Manager{
		cfg: cfg, overrides: map[Entity]Values{},
		window: cfg.Window.Milliseconds(), ctrlWindow: cfg.ControllerWindow.Milliseconds(),
		samples: cfg.Samples, ctrlSamples: cfg.ControllerSamples,
	}
	for t := range m.sensors {
		m.sensors[t] = map[tags]*sensor{}
	}
	return m
}

func (m *Manager) nowMs() int64 { return m.cfg.Now().UnixMilli() }

// Enabled reports whether any quota is set.
func (m *Manager) Enabled() bool { return m != nil && m.anyLevel.Load() != 0 }

// Set makes v the quotas of e (empty v: none), as a change notification
// or an alteration applies them.
func (m *Manager) Set(e Entity, v Values) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if v.Empty() {
		delete(m.overrides, e)
	} else {
		m.overrides[e] = v
	}
	m.relevelLocked()
}

// Replace makes all the quotas set (a resync from the store).
func (m *Manager) Replace(all map[Entity]Values) {
	m.mu.Lock()
	defer m.mu.Unlock()
	clear(m.overrides)
	for e, v := range all {
		if !v.Empty() && e.Valid() {
			m.overrides[e] = v
		}
	}
	m.relevelLocked()
}

// relevelLocked recomputes the level bits of each type. Kafka keeps a
// level's bit until restart once a quota was set at it; Sluice clears it
// when the last quota of the level goes, so a broker whose quotas were all
// removed pays nothing again. REQUIRES: m.mu held for writing.
func (m *Manager) relevelLocked() {
	var lv [NumTypes]uint32
	for e, v := range m.overrides {
		var bit uint32
		switch {
		case e.User.Set && e.ClientID.Set:
			bit = levelUserClientID
		case e.User.Set:
			bit = levelUser
		default:
			bit = levelClientID
		}
		for t, x := range v {
			if x > 0 {
				lv[t] |= bit
			}
		}
	}
	var all uint32
	for t := range lv {
		m.levels[t].Store(lv[t])
		all |= lv[t]
	}
	m.anyLevel.Store(all)
}

// tagsForLocked is DefaultQuotaCallback.quotaMetricTags of type t's
// manager: only quotas of type t count. REQUIRES: m.mu held.
func (m *Manager) tagsForLocked(t Type, user, clientID string) tags {
	switch m.levels[t].Load() {
	case 0, levelClientID:
		return tags{"", clientID}
	case levelUser:
		return tags{user, ""}
	case levelUserClientID:
		return tags{user, clientID}
	}
	u, c := Named(user), Named(clientID)
	has := func(e Entity) bool { return m.overrides[e][t] > 0 }
	switch {
	case has(Entity{u, c}), has(Entity{u, Default}):
		return tags{user, clientID}
	case has(Entity{User: u}):
		return tags{user, ""}
	case has(Entity{Default, c}), has(Entity{Default, Default}):
		return tags{user, clientID}
	case has(Entity{User: Default}):
		return tags{user, ""}
	}
	return tags{"", clientID}
}

// limitLocked is DefaultQuotaCallback.quotaLimit: the quota of type t
// for tags, by Kafka's precedence; 0: none.
//
//	/config/users/<user>/clients/<client-id>
//	/config/users/<user>/clients/<default>
//	/config/users/<user>
//	/config/users/<default>/clients/<client-id>
//	/config/users/<default>/clients/<default>
//	/config/users/<default>
//	/config/clients/<client-id>
//	/config/clients/<default>
//
// Each tag set is resolved within its level, as Kafka's callback does: a
// (user, client id) tag set looks at the pair entities only.
//
// REQUIRES: m.mu held.
func (m *Manager) limitLocked(t Type, tg tags) float64 {
	first := func(es ...Entity) float64 {
		for _, e := range es {
			if x := m.overrides[e][t]; x > 0 {
				return x
			}
		}
		return 0
	}
	u, c := Named(tg.user), Named(tg.clientID)
	switch {
	case tg.user != "" && tg.clientID != "":
		return first(Entity{u, c}, Entity{u, Default}, Entity{Default, c}, Entity{Default, Default})
	case tg.user != "":
		return first(Entity{User: u}, Entity{User: Default})
	case tg.clientID != "":
		return first(Entity{ClientID: c}, Entity{ClientID: Default})
	}
	return 0
}

// Quota returns the quota of type t that applies to a client of user
// with clientID (0: none), by Kafka's precedence.
func (m *Manager) Quota(t Type, user, clientID string) float64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.limitLocked(t, m.tagsForLocked(t, user, clientID))
}

// sensorFor returns the sensor of type t that a client of user with
// clientID is accounted under, and the quota that applies to it (0:
// none).
func (m *Manager) sensorFor(t Type, user, clientID string, now int64) (*sensor, float64) {
	m.mu.RLock()
	tg := m.tagsForLocked(t, user, clientID)
	bound := m.limitLocked(t, tg)
	s := m.sensors[t][tg]
	m.mu.RUnlock()
	if s != nil {
		return s, bound
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s = m.sensors[t][tg]; s != nil {
		return s, bound
	}
	if now-m.lastSweep >= sweepEvery {
		m.lastSweep = now
		for tt := range m.sensors {
			for k, old := range m.sensors[tt] {
				if now-old.used.Load() >= sensorExpiry {
					delete(m.sensors[tt], k)
				}
			}
		}
	}
	n, w := m.samples, m.window
	if t == ControllerMutation {
		n, w = m.ctrlSamples, m.ctrlWindow
	}
	s = &sensor{rate: newSampled(n, w), throttle: newSampled(n, w)}
	s.used.Store(now)
	m.sensors[t][tg] = s
	return s, bound
}

// Record records v (bytes, or request time in percent of a second) for a
// client of user with clientID under type t (Produce, Fetch or Request)
// and returns how long the client must be throttled, in ms: 0 unless its
// rate is now above its quota. Kafka's recordAndGetThrottleTimeMs. With
// no quota set anywhere it returns 0 at once.
func (m *Manager) Record(t Type, user, clientID string, v float64) int32 {
	if !m.Enabled() {
		return 0
	}
	now := m.nowMs()
	s, bound := m.sensorFor(t, user, clientID, now)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.used.Store(now)
	s.rate.record(v, now)
	if bound <= 0 {
		return 0
	}
	rate := s.rate.rate(now)
	if rate <= bound {
		return 0
	}
	ms := throttleMs(rate, bound, s.rate.span(now))
	if t == Request {
		// ClientRequestQuotaManager bounds it to one window.
		ms = min(ms, m.window)
	}
	return int32(ms)
}

// Unrecord takes back v recorded by Record (a throttled fetch answers
// with no data: Kafka's unrecordQuotaSensor).
func (m *Manager) Unrecord(t Type, user, clientID string, v float64) {
	if !m.Enabled() {
		return
	}
	now := m.nowMs()
	s, _ := m.sensorFor(t, user, clientID, now)
	s.mu.Lock()
	s.rate.record(-v, now)
	s.mu.Unlock()
}

// Throttled records that a client of user with clientID was throttled for
// ms under type t (the throttle-time metric; Kafka's throttle()).
func (m *Manager) Throttled(t Type, user, clientID string, ms int32) {
	if ms <= 0 || !m.Enabled() {
		return
	}
	now := m.nowMs()
	s, _ := m.sensorFor(t, user, clientID, now)
	s.mu.Lock()
	s.throttle.record(float64(ms), now)
	s.mu.Unlock()
}

// MaxFetchBytes is Kafka's getMaxValueInQuotaWindow for consumers: the
// most a fetch may return without being throttled for sure,
// quota × (samples-1) × window; 0: no bound.
func (m *Manager) MaxFetchBytes(user, clientID string) int64 {
	if !m.Enabled() {
		return 0
	}
	q := m.Quota(Fetch, user, clientID)
	if q <= 0 {
		return 0
	}
	return int64(q * float64(m.samples-1) * float64(m.window) / 1000)
}

// ErrThrottled is a strict controller mutation refused because the
// client's controller_mutation_rate is exhausted (THROTTLING_QUOTA_EXCEEDED).
var ErrThrottled = errors.New("quota: throttling quota exceeded")

// Mutation is the controller_mutation_rate of one request (Kafka's
// ControllerMutationQuota): Record for each topic's partitions, then
// ThrottleMs for the response. A nil *Mutation (no quota set) accepts
// everything. Used by one goroutine.
type Mutation struct {
	m        *Manager
	s        *sensor
	bound    float64
	strict   bool
	throttle int64 // ms, as computed at at
	at       int64 // ms
}

// NewMutation returns the mutation quota of a request of a client of user
// with clientID; strict (CreateTopics v6+, CreatePartitions v3+,
// DeleteTopics v5+, KIP-599) refuses mutations once the quota is
// exhausted, permissive accepts them and only throttles. nil when no
// quota is set anywhere.
func (m *Manager) NewMutation(user, clientID string, strict bool) *Mutation {
	if !m.Enabled() {
		return nil
	}
	now := m.nowMs()
	s, bound := m.sensorFor(ControllerMutation, user, clientID, now)
	return &Mutation{m: m, s: s, bound: bound, strict: strict}
}

// Record accounts permits (partitions created or deleted). Strict: when
// the bucket is already below zero it returns ErrThrottled and records
// nothing (Kafka's StrictControllerMutationQuota); the permits may take
// it below zero. Permissive: records and notes a throttle.
func (q *Mutation) Record(permits float64) error {
	if q == nil {
		return nil
	}
	m, s := q.m, q.s
	now := m.nowMs()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.used.Store(now)
	if q.bound <= 0 {
		s.rate.record(permits, now)
		return nil
	}
	burst := float64(m.ctrlSamples-1) * float64(m.ctrlWindow) / 1000 * q.bound
	s.bucket.refill(q.bound, burst, now)
	if q.strict && s.bucket.tokens < 0 {
		q.noteLocked(now)
		return ErrThrottled
	}
	s.rate.record(permits, now)
	s.bucket.tokens = min(burst, s.bucket.tokens-permits)
	if !q.strict && s.bucket.tokens < 0 {
		q.noteLocked(now)
	}
	return nil
}

// noteLocked computes the throttle time of a bucket below zero:
// ControllerMutationQuotaManager.throttleTimeMs, -tokens / rate.
// REQUIRES: q.s.mu held.
func (q *Mutation) noteLocked(now int64) {
	ms := -q.s.bucket.tokens / q.bound * 1000
	q.throttle, q.at = min(int64(ms+0.5), maxThrottle), now
}

// ThrottleMs is the throttle time to answer with: the one computed when
// the quota was exceeded, less the time since (the request may have
// waited), never negative.
func (q *Mutation) ThrottleMs() int32 {
	if q == nil || q.throttle == 0 {
		return 0
	}
	return int32(max(0, q.throttle-(q.m.nowMs()-q.at)))
}

// Usage is one sensor's state, for metrics.
type Usage struct {
	Type           Type
	User, ClientID string  // Kafka's metric tags ("" for a level not used)
	Rate           float64 // per second: bytes, request-time %, mutations
	ThrottleAvg    float64 // ms: mean throttle time in the window
	Tokens         float64 // ControllerMutation with a quota: tokens left
	Quota          float64 // 0: none
}

// Each calls fn with the usage of every live sensor (scrape time).
func (m *Manager) Each(fn func(Usage)) {
	if m == nil {
		return
	}
	now := m.nowMs()
	type entry struct {
		t  Type
		tg tags
		s  *sensor
	}
	var all []entry
	m.mu.RLock()
	for t := range m.sensors {
		for tg, s := range m.sensors[t] {
			all = append(all, entry{Type(t), tg, s})
		}
	}
	bounds := make([]float64, len(all))
	for i, e := range all {
		bounds[i] = m.limitLocked(e.t, e.tg)
	}
	m.mu.RUnlock()
	for i, e := range all {
		u := Usage{Type: e.t, User: e.tg.user, ClientID: e.tg.clientID, Quota: bounds[i]}
		e.s.mu.Lock()
		u.Rate = e.s.rate.rate(now)
		u.ThrottleAvg = e.s.throttle.avg(now)
		if e.t == ControllerMutation && bounds[i] > 0 {
			u.Tokens = e.s.bucket.tokens
		}
		e.s.mu.Unlock()
		fn(u)
	}
}
