package server

import (
	"context"
	"log/slog"
	"math"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/quota"
)

// connLimits holds what bounds the client port as a whole: the request
// memory pool (queued.max.request.bytes, see mempool.go) and the connection
// limits, with Kafka's semantics (SocketServer's ConnectionQuotas):
//
//   - max.connections: at the limit each listener holds the connection it
//     has just accepted, unserved, and stops accepting; new connections
//     wait in the listen backlog until one closes ("new connections are
//     blocked", Kafka's doc), and none is closed.
//   - listener.name.<l>.max.connections: the same, for one listener; a
//     connection needs a slot on its listener and, unless the listener is
//     protected, a broker-wide one.
//   - protected listeners: with more than one listener, the inter-broker
//     listener's connections count toward max.connections but are never
//     held back by it, nor by max.connection.creation.rate (Kafka's
//     protectedListener). Sluice protects the control-plane listener too,
//     which Kafka does not: the controller must reach a broker whose
//     clients hold every slot.
//   - max.connection.creation.rate and listener.name.<l>.max.connection.
//     creation.rate (KIP-612): accepting is delayed until each applicable
//     rate allows one more connection (see rateLimit).
//   - max.connections.per.ip (and .overrides, "host:count" with host an IP
//     address or a name resolved once at start): a connection from an
//     address already at its limit is accepted and closed at once.
//
// Safe for concurrent use once init has run.
type connLimits struct {
	once sync.Once
	// pool is the request memory pool, set by init; atomic because the
	// metrics collector and Stats may read it before Serve ran init.
	pool atomic.Pointer[memPool]
	cfg  *config.Config
	now  func() time.Time // time.Now; tests may replace it before init

	maxTotal  int
	maxPerIP  int
	overrides map[netip.Addr]int
	protected map[string]bool // listener names the broker-wide limits spare
	rate      *rateLimit      // max.connection.creation.rate; nil: none
	// ipRates are the ip entities' connection_creation_rate quotas
	// (KIP-612, ipquota.go); nil until the server starts them.
	ipRates atomic.Pointer[quota.IPRates]

	mu        sync.Mutex
	total     int                       // connections counted by reserve, all listeners
	listeners map[string]*listenerQuota // by listener name, made on first use
	perIP     map[netip.Addr]int        // open connections per address
	freed     chan struct{}             // closed and replaced when a slot frees
}

// listenerQuota is one listener's share of connLimits.
type listenerQuota struct {
	name      string
	max       int        // listener.name.<l>.max.connections; MaxInt32 when unset
	protected bool       // spared by the broker-wide limits
	rate      *rateLimit // listener.name.<l>.max.connection.creation.rate; nil: none
	open      int        // slots taken on this listener; guarded by connLimits.mu
	// throttled and throttleTime are the accepts delayed by a creation
	// rate and the sum of their delays (Kafka's connection-accept-throttle-
	// time is their average); guarded by connLimits.mu.
	throttled    int64
	throttleTime time.Duration
	// ipThrottled and ipThrottleTime are the connections closed unserved
	// over their ip entity's connection_creation_rate and the sum of the
	// times they were held (Kafka's ip-connection-accept-throttle-time is
	// the average); guarded by connLimits.mu.
	ipThrottled    int64
	ipThrottleTime time.Duration
}

// acceptThrottle is one listener's accept delays, for the metrics.
type acceptThrottle struct {
	listener  string
	throttled int64
	time      time.Duration
	// ipThrottled, ipTime: the connections refused by ip quotas.
	ipThrottled int64
	ipTime      time.Duration
}

// poolUsage returns the request memory pool's bytes in use and its limit
// (queued.max.request.bytes; <= 0: unbounded); zeros before Serve.
func (l *connLimits) poolUsage() (used, limit int64) {
	p := l.pool.Load()
	if p == nil {
		return 0, 0
	}
	return p.inUse(), p.limit
}

// throttleStats returns the accept delays of every listener that has
// accepted a connection, by name.
func (l *connLimits) throttleStats() []acceptThrottle {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]acceptThrottle, 0, len(l.listeners))
	for _, q := range l.listeners {
		out = append(out, acceptThrottle{listener: q.name, throttled: q.throttled, time: q.throttleTime,
			ipThrottled: q.ipThrottled, ipTime: q.ipThrottleTime})
	}
	slices.SortFunc(out, func(a, b acceptThrottle) int { return strings.Compare(a.listener, b.listener) })
	return out
}

// rateLimit delays connections so that at most burst+rate*t are accepted
// in any span t: a virtual scheduler (GCRA) where each accept moves the
// next free time tat on by 1/rate, and an accept may run up to burst-1
// intervals ahead of it. Kafka measures a windowed rate instead (11
// samples of one second) and delays by the time that brings it back under
// the quota, capped at one window; both allow about one second's worth at
// once and the rate over longer spans. Guarded by connLimits.mu.
type rateLimit struct {
	interval time.Duration // 1/rate
	ahead    time.Duration // (burst-1) intervals: how far an accept may run ahead of tat
	tat      time.Time     // theoretical time of the next accept
}

// newRateLimit returns a limiter for perSec connections a second, with a
// burst of one second's worth; nil for math.MaxInt32, Kafka's default and
// "no limit". 0 is taken as 1: Kafka's delay is capped at one quota window,
// so a zero quota still lets about one connection a second through.
func newRateLimit(perSec int32) *rateLimit {
	if perSec == math.MaxInt32 {
		return nil
	}
	perSec = max(perSec, 1)
	iv := time.Second / time.Duration(perSec)
	return &rateLimit{interval: iv, ahead: time.Duration(perSec-1) * iv}
}

// take counts one connection at now and returns how long its accept must
// wait. A nil limiter never delays.
func (r *rateLimit) take(now time.Time) time.Duration {
	if r == nil {
		return 0
	}
	if r.tat.Before(now) {
		r.tat = now
	}
	wait := max(r.tat.Sub(now)-r.ahead, 0)
	r.tat = r.tat.Add(r.interval)
	return wait
}

// init reads the limits from cfg, once; Serve calls it before accepting.
func (l *connLimits) init(cfg *config.Config, log *slog.Logger) {
	l.once.Do(func() {
		l.pool.Store(newMemPool(cfg.QueuedMaxRequestBytes, int64(cfg.SocketRequestMaxBytes)))
		l.cfg = cfg
		if l.now == nil {
			l.now = time.Now
		}
		l.maxTotal = int(cfg.MaxConnections)
		l.rate = newRateLimit(cfg.MaxConnectionCreationRate)
		l.mu.Lock() // throttleStats (the metrics) may run before Serve
		l.listeners = map[string]*listenerQuota{}
		l.mu.Unlock()
		l.protected = map[string]bool{}
		if len(cfg.Listeners) > 1 {
			// Kafka protects the inter-broker listener only when there is
			// another one; alone, it is also the clients' listener.
			for _, name := range []string{cfg.InterBrokerListenerName, cfg.ControlPlaneListenerName} {
				if name != "" {
					l.protected[name] = true
				}
			}
		}
		l.maxPerIP = int(cfg.MaxConnectionsPerIP)
		l.perIP = map[netip.Addr]int{}
		l.freed = make(chan struct{})
		l.overrides = map[netip.Addr]int{}
		for host, n := range cfg.MaxConnectionsPerIPOverrides {
			if a, err := netip.ParseAddr(host); err == nil {
				l.overrides[a.Unmap()] = int(n)
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
			cancel()
			if err != nil {
				log.Error("server: max.connections.per.ip.overrides: cannot resolve host; ignoring it", "host", host, "err", err)
				continue
			}
			for _, a := range addrs {
				l.overrides[a.Unmap()] = int(n)
			}
		}
	})
}

// quotaLocked returns listener's quota, made from the config on first use.
// REQUIRES: l.mu held.
func (l *connLimits) quotaLocked(listener string) *listenerQuota {
	q := l.listeners[listener]
	if q == nil {
		q = &listenerQuota{name: listener, max: math.MaxInt32, protected: l.protected[listener]}
		if n, ok := l.cfg.ListenerLimit(listener, "max.connections"); ok {
			q.max = int(n)
		}
		if n, ok := l.cfg.ListenerLimit(listener, "max.connection.creation.rate"); ok {
			q.rate = newRateLimit(n)
		}
		l.listeners[listener] = q
	}
	return q
}

// reserve takes a connection slot on listener for a connection just
// accepted, as Kafka's ConnectionQuotas.inc does: it counts the connection
// against the creation rates (the listener's, and the broker's unless the
// listener is protected) and waits out the delay they ask for, then waits
// while the listener is at its max.connections or, unless the listener is
// protected, the broker is at max.connections. nil: stop was closed first.
func (l *connLimits) reserve(listener string, stop <-chan struct{}) *listenerQuota {
	l.mu.Lock()
	q := l.quotaLocked(listener)
	now := l.now()
	wait := q.rate.take(now)
	if !q.protected {
		wait = max(wait, l.rate.take(now))
	}
	if wait > 0 {
		q.throttled++
		q.throttleTime += wait
	}
	l.mu.Unlock()
	if wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-stop:
			t.Stop()
			return nil
		}
	}
	for {
		l.mu.Lock()
		if q.open < q.max && (q.protected || l.total < l.maxTotal) {
			q.open++
			l.total++
			l.mu.Unlock()
			return q
		}
		freed := l.freed
		l.mu.Unlock()
		select {
		case <-freed:
		case <-stop:
			return nil
		}
	}
}

// unreserve gives back a slot taken by reserve.
func (l *connLimits) unreserve(q *listenerQuota) {
	l.mu.Lock()
	q.open--
	l.total--
	l.freeLocked()
	l.mu.Unlock()
}

// listenerClosed gives back a closed connection's slot on its listener
// (conn.unregister calls it, beside closed for the broker-wide slot).
func (l *connLimits) listenerClosed(q *listenerQuota) {
	if q == nil { // a connection made without a listener (tests)
		return
	}
	l.mu.Lock()
	q.open--
	l.freeLocked()
	l.mu.Unlock()
}

// freeLocked wakes the reserves waiting for a slot. REQUIRES: l.mu held.
func (l *connLimits) freeLocked() {
	close(l.freed)
	l.freed = make(chan struct{})
}

// throttleIP counts a new connection from ip against its ip entity's
// connection_creation_rate (Kafka's recordIpConnectionMaybeThrottle, on
// every listener as Kafka's) and returns 0 to go on, or how long to hold
// the connection before closing it unserved, counted on q (its listener's
// quota; nil in tests).
func (l *connLimits) throttleIP(ip netip.Addr, q *listenerQuota) time.Duration {
	d := l.ipRates.Load().Throttle(ip)
	if d > 0 && q != nil {
		l.mu.Lock()
		q.ipThrottled++
		q.ipThrottleTime += d
		l.mu.Unlock()
	}
	return d
}

// addIP counts a connection from ip against its per-address limit; false
// (nothing counted) when ip is at its limit. The zero Addr (not TCP) is
// never limited.
func (l *connLimits) addIP(ip netip.Addr) (ok bool, max int) {
	if !ip.IsValid() {
		return true, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	max = l.maxPerIP // dynamic: reconfigure changes it under l.mu
	if n, ok := l.overrides[ip]; ok {
		max = n
	}
	if l.perIP[ip] >= max {
		return false, max
	}
	l.perIP[ip]++
	return true, max
}

// closed unregisters a connection counted by reserve and addIP: its
// address and its broker-wide slot. Its listener's share is given back by
// listenerClosed.
func (l *connLimits) closed(ip netip.Addr) {
	l.mu.Lock()
	if ip.IsValid() {
		if l.perIP[ip]--; l.perIP[ip] <= 0 {
			delete(l.perIP, ip)
		}
	}
	l.total--
	l.freeLocked()
	l.mu.Unlock()
}

// remoteIP is the address of a TCP peer (IPv4-mapped IPv6 unmapped, so
// both spellings of one address count together); the zero Addr otherwise.
func remoteIP(nc net.Conn) netip.Addr {
	if a, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
		return a.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}
