package cluster

import (
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// cutProxy forwards TCP connections to target until cut, which closes the
// listener and every forwarded connection at once: to ZooKeeper, the
// client behind it has vanished as a SIGKILLed process does, without
// closing its session, which lives on until its timeout.
type cutProxy struct {
	l     net.Listener
	mu    sync.Mutex
	conns []net.Conn
	cut   bool
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{l: l}
	t.Cleanup(p.Cut)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			if p.cut {
				p.mu.Unlock()
				c.Close()
				up.Close()
				return
			}
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { io.Copy(up, c); up.Close() }()
			go func() { io.Copy(c, up); c.Close() }()
		}
	}()
	return p
}

func (p *cutProxy) Addr() string { return p.l.Addr().String() }

// Cut closes the listener and every connection.
func (p *cutProxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	p.l.Close()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// A broker restarted after a crash, while ZooKeeper still holds the
// registration of its dead process's session, waits for that session to
// expire and registers (it used to exit with ErrBrokerIDInUse at once).
// TestRegistrationAndDuplicateID checks that a live broker's id is still
// refused.
func TestRestartWithinSessionTimeoutRegisters(t *testing.T) {
	tc := newTestCluster(t, 0, nil)
	proxy := newCutProxy(t, tc.zk.Addr())
	opts := tc.options(1)
	opts.SessionTimeout = 3 * time.Second
	opts.ZkConnect = proxy.Addr() + "/sluice"
	old, err := Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { old.Close() })
	_, stat, err := tc.client.Get("/sluice" + brokerPath(1))
	if err != nil {
		t.Fatal(err)
	}
	oldSession := stat.EphemeralOwner

	proxy.Cut() // the old process "dies": its session stays until it times out
	opts.ZkConnect = tc.zk.Addr() + "/sluice"
	n, err := Start(opts)
	if err != nil {
		t.Fatalf("restart within the session timeout: %v", err)
	}
	defer n.Close()
	_, stat, err = tc.client.Get("/sluice" + brokerPath(1))
	if err != nil {
		t.Fatal(err)
	}
	if stat.EphemeralOwner != n.zk.conn.SessionID() || stat.EphemeralOwner == oldSession {
		t.Fatalf("registration owned by session 0x%x; new node 0x%x, old 0x%x", stat.EphemeralOwner, n.zk.conn.SessionID(), oldSession)
	}
	if !n.Registered() || n.BrokerEpoch() != stat.Czxid {
		t.Fatalf("Registered %v, BrokerEpoch %d, znode czxid %d", n.Registered(), n.BrokerEpoch(), stat.Czxid)
	}
}

// A persistent /brokers/ids/<id> (no session will ever remove it) is
// refused at once, without waiting.
func TestRegistrationRefusesPersistentZnode(t *testing.T) {
	tc := newTestCluster(t, 0, nil)
	if err := (&zkClient{conn: tc.client}).ensureAbs("/sluice" + brokerIDsPath); err != nil {
		t.Fatal(err)
	}
	if _, err := tc.client.Create("/sluice"+brokerPath(1), []byte("{}"), 0, openACL); err != nil {
		t.Fatal(err)
	}
	_, err := Start(tc.options(1))
	if !errors.Is(err, ErrBrokerIDInUse) {
		t.Fatalf("start over a persistent registration: %v", err)
	}
}
