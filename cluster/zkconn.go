package cluster

// Connecting to ZooKeeper securely: the digest identity a broker (or the
// `sluice zk` tool) authenticates with, and TLS to ZooKeeper's
// secureClientPort, as Kafka's zookeeper.ssl.* keys configure it.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/sluice/sluice/config"
)

// ZkSecurity is how a client authenticates to ZooKeeper and which ACLs it
// gives the znodes it creates. The zero value is Kafka's default: plain
// TCP, no identity, znodes open to all.
type ZkSecurity struct {
	// SetACL is zookeeper.set.acl: znodes are created with Kafka's secure
	// ACLs (defaultACL). It needs an identity: Digest, or a TLS client
	// certificate ZooKeeper maps to one.
	SetACL bool
	// Digest, "user:password", is the identity sent with ZooKeeper's
	// digest scheme (AddAuth) on every session; "" sends none. Every
	// broker of a cluster must use the same one: the znodes one broker
	// creates, the others must change.
	Digest string
	// TLS, when set, makes every connection to ZooKeeper TLS (to its
	// secureClientPort). A config with an empty ServerName and no
	// InsecureSkipVerify verifies the host name of zookeeper.connect's
	// server (crypto/tls takes it from the address dialed, which keeps the
	// name as written: no DNS lookup turns it into an address first).
	TLS *tls.Config
}

// zkDialer dials ZooKeeper servers, over TLS when tls is set, and keeps
// the last dial error so that a client without a session can say why.
type zkDialer struct {
	tls  *tls.Config
	last atomic.Pointer[error]
}

func (d *zkDialer) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	nd := &net.Dialer{Timeout: timeout}
	var c net.Conn
	var err error
	if d.tls == nil {
		c, err = nd.Dial(network, addr)
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		c, err = (&tls.Dialer{NetDialer: nd, Config: d.tls}).DialContext(ctx, network, addr)
		cancel()
		if err != nil {
			err = fmt.Errorf("TLS to %s: %w", addr, err)
		}
	}
	if err != nil {
		d.last.Store(&err)
	}
	return c, err
}

// lastErr is the last dial error, or nil.
func (d *zkDialer) lastErr() error {
	if p := d.last.Load(); p != nil {
		return *p
	}
	return nil
}

// namedHosts is a zk.HostProvider that keeps zookeeper.connect's host
// names, in a random order, instead of resolving them as go-zookeeper's
// DNSHostProvider does: TLS verifies the server's certificate against the
// name, not the address.
type namedHosts struct {
	mu      sync.Mutex
	servers []string
	cur     int // index of the server Next returned last
	last    int // index of the last server connected to; -1 before any
}

func (h *namedHosts) Init(servers []string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(servers) == 0 {
		return errors.New("cluster: no zookeeper servers")
	}
	h.servers = append([]string(nil), servers...)
	rand.Shuffle(len(h.servers), func(i, j int) { h.servers[i], h.servers[j] = h.servers[j], h.servers[i] })
	h.cur, h.last = -1, -1
	return nil
}

func (h *namedHosts) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.servers)
}

func (h *namedHosts) Next() (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cur = (h.cur + 1) % len(h.servers)
	retryStart := h.cur == h.last
	if h.last == -1 {
		h.last = 0
	}
	return h.servers[h.cur], retryStart
}

func (h *namedHosts) Connected() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last = h.cur
}

// connectZK opens a ZooKeeper session with servers as sec says, waits for
// it (up to max(sessionTimeout, 10 s)), and authenticates it with
// sec.Digest; go-zookeeper sends the identity again on every later
// session. onEvent, when not nil, sees every session event, from
// go-zookeeper's goroutine. The returned client has no chroot and creates
// znodes with sec.SetACL's ACLs. A client that gets no session says why
// with the last dial error (a certificate refused, say).
func connectZK(servers []string, sessionTimeout time.Duration, sec ZkSecurity, log *slog.Logger, onEvent func(zk.Event)) (*zkClient, error) {
	d := &zkDialer{tls: sec.TLS}
	hasSession := make(chan struct{})
	var once sync.Once
	var hosts zk.HostProvider = zk.NewDNSHostProvider()
	if sec.TLS != nil {
		hosts = &namedHosts{}
	}
	conn, events, err := zk.Connect(servers, sessionTimeout,
		zk.WithLogger(zkLogger{log}), zk.WithLogInfo(false), zk.WithDialer(d.dial), zk.WithHostProvider(hosts),
		zk.WithEventCallback(func(e zk.Event) {
			if e.Type == zk.EventSession && e.State == zk.StateHasSession {
				once.Do(func() { close(hasSession) })
			}
			if onEvent != nil {
				onEvent(e)
			}
		}))
	if err != nil {
		return nil, fmt.Errorf("cluster: connect to zookeeper %v: %w", servers, err)
	}
	go func() { // go-zookeeper drops events nobody reads; the callback sees them all
		for range events {
		}
	}()
	wait := max(sessionTimeout, 10*time.Second)
	select {
	case <-hasSession:
	case <-time.After(wait):
		conn.Close()
		if err := d.lastErr(); err != nil {
			return nil, fmt.Errorf("cluster: no zookeeper session with %v within %v: %w", servers, wait, err)
		}
		return nil, fmt.Errorf("cluster: no zookeeper session with %v within %v", servers, wait)
	}
	if sec.Digest != "" {
		if err := conn.AddAuth("digest", []byte(sec.Digest)); err != nil {
			conn.Close()
			return nil, fmt.Errorf("cluster: zookeeper digest authentication: %w", err)
		}
	}
	return &zkClient{conn: conn, secure: sec.SetACL}, nil
}

// ZkSecurityFrom reads the ZooKeeper security keys of cfg
// (zookeeper.set.acl, zookeeper.auth.digest or its file,
// zookeeper.ssl.*), loading the digest file and the TLS files now. Errors
// name the key at fault.
func ZkSecurityFrom(cfg *config.Config) (ZkSecurity, error) {
	digest, err := cfg.ZooKeeperDigest()
	if err != nil {
		return ZkSecurity{}, err
	}
	tcfg, err := cfg.ZooKeeperTLS()
	if err != nil {
		return ZkSecurity{}, err
	}
	return ZkSecurity{SetACL: cfg.ZooKeeperSetACL, Digest: digest, TLS: tcfg}, nil
}
