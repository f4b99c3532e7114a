package server

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/sluice/sluice/config"
)

// connLimits holds what bounds the client port as a whole: the request
// memory pool (queued.max.request.bytes, see mempool.go) and the connection
// counts of max.connections and max.connections.per.ip, with Kafka's
// semantics (SocketServer's ConnectionQuotas):
//
//   - max.connections: at the limit the broker stops accepting; new
//     connections wait in the listen backlog until one closes ("new
//     connections are blocked", Kafka's doc), and none is closed.
//   - max.connections.per.ip (and .overrides, "host:count" with host an IP
//     address or a name resolved once at start): a connection from an
//     address already at its limit is accepted and closed at once.
//
// Safe for concurrent use once init has run.
type connLimits struct {
	once sync.Once
	pool *memPool

	maxTotal  int
	maxPerIP  int
	overrides map[netip.Addr]int

	mu    sync.Mutex
	total int                // slots taken: open connections plus reserved accepts
	perIP map[netip.Addr]int // open connections per address
	freed chan struct{}      // closed and replaced when a slot frees
}

// init reads the limits from cfg, once; Serve calls it before accepting.
func (l *connLimits) init(cfg *config.Config, log *slog.Logger) {
	l.once.Do(func() {
		l.pool = newMemPool(cfg.QueuedMaxRequestBytes, int64(cfg.SocketRequestMaxBytes))
		l.maxTotal = int(cfg.MaxConnections)
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

// reserve takes a connection slot, waiting while max.connections are
// open. false: stop was closed first.
func (l *connLimits) reserve(stop <-chan struct{}) bool {
	for {
		l.mu.Lock()
		if l.total < l.maxTotal {
			l.total++
			l.mu.Unlock()
			return true
		}
		freed := l.freed
		l.mu.Unlock()
		select {
		case <-freed:
		case <-stop:
			return false
		}
	}
}

// unreserve gives back a slot taken by reserve.
func (l *connLimits) unreserve() {
	l.mu.Lock()
	l.total--
	close(l.freed)
	l.freed = make(chan struct{})
	l.mu.Unlock()
}

// addIP counts a connection from ip against its per-address limit; false
// (nothing counted) when ip is at its limit. The zero Addr (not TCP) is
// never limited.
func (l *connLimits) addIP(ip netip.Addr) (ok bool, max int) {
	if !ip.IsValid() {
		return true, 0
	}
	max = l.maxPerIP
	if n, ok := l.overrides[ip]; ok {
		max = n
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.perIP[ip] >= max {
		return false, max
	}
	l.perIP[ip]++
	return true, max
}

// closed unregisters a connection counted by reserve and addIP.
func (l *connLimits) closed(ip netip.Addr) {
	if ip.IsValid() {
		l.mu.Lock()
		if l.perIP[ip]--; l.perIP[ip] <= 0 {
			delete(l.perIP, ip)
		}
		l.mu.Unlock()
	}
	l.unreserve()
}

// remoteIP is the address of a TCP peer (IPv4-mapped IPv6 unmapped, so
// both spellings of one address count together); the zero Addr otherwise.
func remoteIP(nc net.Conn) netip.Addr {
	if a, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
		return a.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}
