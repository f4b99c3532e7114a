package console

import (
	"net"
	"net/netip"
	"sync"
	"time"
)

// Connection bounds of each listener.
//
// maxConns bounds the open HTTP connections of one listener: past it,
// Accept waits for one to close (as golang.org/x/net/netutil's
// LimitListener does), so a flood of idle connections cannot exhaust the
// broker's file descriptors. maxConnsPerIP bounds those of one client
// address: a connection past it is closed at once, so that one client
// holding idle keep-alives cannot take every slot and starve the probes
// of /healthz and the scrapes of /metrics, which come from other
// addresses. A browser opens at most 6 connections to a host, Prometheus
// one, so 32 leaves room for many users behind one NAT address; it takes
// maxConns/maxConnsPerIP = 8 addresses to fill a listener. idleTimeout
// frees a keep-alive nobody uses after 30 s (Prometheus scrapes every 15 s
// by default and keeps its connection).
const (
	maxConns      = 256
	maxConnsPerIP = 32
	idleTimeout   = 30 * time.Second
)

// limitListener is a net.Listener with at most n connections open, at
// most perIP of them from one address. onOpen and onClose (either may be
// nil) are called for each connection handed out and closed (the HTTP
// listener's connection metrics).
type limitListener struct {
	net.Listener
	sem     chan struct{}
	perIP   int
	onOpen  func()
	onClose func()
	done    chan struct{}
	once    sync.Once

	mu   sync.Mutex
	byIP map[netip.Addr]int // open connections per client address
}

func newLimitListener(l net.Listener, n, perIP int, onOpen, onClose func()) *limitListener {
	return &limitListener{Listener: l, sem: make(chan struct{}, n), perIP: perIP,
		onOpen: onOpen, onClose: onClose, done: make(chan struct{}), byIP: map[netip.Addr]int{}}
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		select {
		case l.sem <- struct{}{}:
		case <-l.done:
			return nil, net.ErrClosed
		}
		c, err := l.Listener.Accept()
		if err != nil {
			<-l.sem
			return nil, err
		}
		ip := connIP(c)
		l.mu.Lock()
		over := l.byIP[ip] >= l.perIP
		if !over {
			l.byIP[ip]++
		}
		l.mu.Unlock()
		if over {
			c.Close()
			<-l.sem
			continue
		}
		if l.onOpen != nil {
			l.onOpen()
		}
		return &limitConn{Conn: c, release: func() {
			l.mu.Lock()
			if l.byIP[ip]--; l.byIP[ip] <= 0 {
				delete(l.byIP, ip)
			}
			l.mu.Unlock()
			<-l.sem
			if l.onClose != nil {
				l.onClose()
			}
		}}, nil
	}
}

// connIP is c's remote address (the zero Addr when it has none, all such
// connections sharing one count).
func connIP(c net.Conn) netip.Addr {
	ap, err := netip.ParseAddrPort(c.RemoteAddr().String())
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}

func (l *limitListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitConn gives its slot back once, on the first Close.
type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
