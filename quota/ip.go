package quota

// Connection creation rates per client address (KIP-612), Kafka's
// ConnectionQuotas for "ip" quota entities: connection_creation_rate of an
// ip entity (a literal address) or of the default ip entity, which applies
// to every address without one of its own. An address's new connections
// are measured by a sampled Rate (quota.window.num × quota.window.size.
// seconds, as Kafka's); a connection that takes the rate above the quota is
// not accepted: it is taken back from the rate and the broker closes it
// after the throttle time, (rate-quota)/quota × span, at most one window
// (Kafka's recordIpConnectionMaybeThrottle and DelayedCloseSocket).
//
// ip entities never combine with user or client-id ones, and take only
// connection_creation_rate (an INT in Kafka); the other quota keys are
// refused on them, and connection_creation_rate on users and clients.

import (
	"fmt"
	"math"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// IPKey is the one config key of an ip entity (Kafka's
// QuotaConfig.IP_CONNECTION_RATE_OVERRIDE_CONFIG).
const IPKey = "connection_creation_rate"

// CheckIPName validates the name of an ip entity: a literal IPv4 or IPv6
// address without a zone. Kafka also takes a host name it can resolve
// (InetAddress.getByName); Sluice does not look names up from a request
// handler, so a name is refused like an address that does not parse, with
// Kafka's message.
func CheckIPName(name string) error {
	if _, err := ParseIPName(name); err != nil {
		return err
	}
	return nil
}

// ParseIPName returns the address an ip entity name denotes (IPv4-mapped
// IPv6 unmapped, as connections are counted), or an error wrapping
// ErrInvalid.
func ParseIPName(name string) (netip.Addr, error) {
	a, err := netip.ParseAddr(name)
	if err != nil || a.Zone() != "" || len(name) > 64 {
		return netip.Addr{}, fmt.Errorf("%w: %s is not a valid IP or resolvable host.", ErrInvalid, name)
	}
	return a.Unmap(), nil
}

// CheckIPValue validates value for key on an ip entity, as Kafka's
// validateQuotaKeyValue over its ip config keys (connection_creation_rate,
// an INT).
func CheckIPValue(key string, value float64) error {
	if key != IPKey {
		return fmt.Errorf("%w: Invalid configuration key %s", ErrInvalid, key)
	}
	if math.IsNaN(value) || value <= 0 {
		return fmt.Errorf("%w: Quota %s must be greater than 0", ErrInvalid, key)
	}
	if value > math.MaxInt32 {
		return fmt.Errorf("%w: Proposed value for %s is too large for an INT.", ErrInvalid, key)
	}
	if math.Abs(value-math.Round(value)) > 1e-6 {
		return fmt.Errorf("%w: Integer quota %s must be an integer", ErrInvalid, key)
	}
	return nil
}

// IPRates enforces the connection_creation_rate of ip entities. Safe for
// concurrent use; with no ip quota set Throttle costs one atomic load.
type IPRates struct {
	samples int
	window  int64 // ms
	now     func() time.Time

	on atomic.Bool // some quota is set

	mu      sync.Mutex
	def     float64                // the default ip entity's; 0: none
	per     map[netip.Addr]float64 // by address; 0 absent
	sensors map[netip.Addr]*ipSensor
	swept   int64 // ms: the last sweep of idle sensors
}

// ipSensor is one address's connection rate.
type ipSensor struct {
	rate sampled
	used int64 // ms: last recorded
}

// NewIPRates returns rates with no quota, measured over cfg's Samples of
// Window (quota.window.num, quota.window.size.seconds).
func NewIPRates(cfg Config) *IPRates {
	sampleDefaults(&cfg.Samples, &cfg.Window, &cfg.Now)
	return &IPRates{samples: cfg.Samples, window: max(cfg.Window.Milliseconds(), 1), now: cfg.Now,
		per: map[netip.Addr]float64{}, sensors: map[netip.Addr]*ipSensor{}}
}

// Replace makes all the ip quotas set: name (an address, or DefaultName)
// to connection_creation_rate. Names that do not parse are skipped (the
// store holds only what was validated).
func (r *IPRates) Replace(all map[string]float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	clear(r.per)
	r.def = 0
	for name, v := range all {
		r.setLocked(name, v)
	}
	r.on.Store(r.def > 0 || len(r.per) > 0)
}

// Set makes v the connection_creation_rate of ip entity name (an address
// or DefaultName); 0 removes it.
func (r *IPRates) Set(name string, v float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.setLocked(name, v)
	r.on.Store(r.def > 0 || len(r.per) > 0)
}

// REQUIRES: r.mu held.
func (r *IPRates) setLocked(name string, v float64) {
	if name == DefaultName {
		r.def = max(v, 0)
		return
	}
	a, err := ParseIPName(name)
	if err != nil {
		return
	}
	if v > 0 {
		r.per[a] = v
	} else {
		delete(r.per, a)
	}
}

// Quota returns the connection_creation_rate that applies to ip (0: none):
// its own, else the default ip entity's (Kafka's connectionRateForIp).
func (r *IPRates) Quota(ip netip.Addr) float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.quotaLocked(ip.Unmap())
}

func (r *IPRates) quotaLocked(ip netip.Addr) float64 {
	if v, ok := r.per[ip]; ok {
		return v
	}
	return r.def
}

// Throttle counts a new connection from ip and returns 0 to accept it, or
// how long to hold it before closing it unserved: the connection took ip's
// rate above its quota, and is taken back from the rate. The zero Addr
// (not TCP) is never throttled.
func (r *IPRates) Throttle(ip netip.Addr) time.Duration {
	if r == nil || !r.on.Load() || !ip.IsValid() {
		return 0
	}
	ip = ip.Unmap()
	now := r.now().UnixMilli()
	r.mu.Lock()
	defer r.mu.Unlock()
	bound := r.quotaLocked(ip)
	if bound <= 0 {
		return 0
	}
	s := r.sensors[ip]
	if s == nil {
		r.sweepLocked(now)
		s = &ipSensor{rate: newSampled(r.samples, r.window)}
		r.sensors[ip] = s
	}
	s.used = now
	s.rate.record(1, now)
	rate := s.rate.rate(now)
	if rate <= bound {
		return 0
	}
	ms := min(throttleMs(rate, bound, s.rate.span(now)), r.window)
	s.rate.record(-1, now)
	return time.Duration(max(ms, 1)) * time.Millisecond
}

// sweepLocked drops, at most once a window, the sensors idle for longer
// than their windows span: their rate is 0 again, so a flood of connections
// from many addresses holds sensors for ~11 s, not Kafka's hour.
// REQUIRES: r.mu held.
func (r *IPRates) sweepLocked(now int64) {
	if now-r.swept < r.window {
		return
	}
	r.swept = now
	idle := int64(r.samples) * r.window
	for a, s := range r.sensors {
		if now-s.used >= idle {
			delete(r.sensors, a)
		}
	}
}

// Sensors returns how many addresses have a live sensor (tests, metrics).
func (r *IPRates) Sensors() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.sensors)
}
