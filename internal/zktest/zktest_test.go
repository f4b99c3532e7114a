package zktest

import (
	"crypto/tls"
	"errors"
	"net"
	"reflect"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/sluice/sluice/internal/testpki"
)

// connect opens a client session and waits until it has one.
func connect(t *testing.T, s *Server) (*zk.Conn, <-chan zk.Event) {
	t.Helper()
	c, ev, err := zk.Connect([]string{s.Addr()}, 4*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	waitState(t, ev, zk.StateHasSession)
	return c, ev
}

func waitState(t *testing.T, ev <-chan zk.Event, want zk.State) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case e := <-ev:
			if e.State == want {
				return
			}
		case <-deadline:
			t.Fatalf("no %v event within 30s", want)
		}
	}
}

func TestStartRestartExpire(t *testing.T) {
	s := Start(t)
	c, ev := connect(t, s)
	if _, err := c.Create("/persist", []byte("x"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create("/eph", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	// Force-expire the session from a second connection.
	passwd := reflect.ValueOf(c).Elem().FieldByName("passwd").Bytes()
	if err := s.ExpireSession(c.SessionID(), passwd); err != nil {
		t.Fatal(err)
	}
	waitState(t, ev, zk.StateExpired)
	waitState(t, ev, zk.StateHasSession) // the client gets a new session
	if ok, _, err := c.Exists("/eph"); err != nil || ok {
		t.Fatalf("ephemeral after expiry: exists=%v err=%v", ok, err)
	}

	if err := s.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := s.Resume(); err != nil {
		t.Fatal(err)
	}

	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	c2, _ := connect(t, s)
	b, _, err := c2.Get("/persist")
	if err != nil || string(b) != "x" {
		t.Fatalf("after restart: %q %v", b, err)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if s.Pid() != 0 {
		t.Fatal("pid after stop")
	}
}

// TestSecureOptions: a server with a super user and a secureClientPort
// serves TLS sessions (with a client certificate, ssl.clientAuth=need),
// and the super user passes an ACL that locks everyone else out.
func TestSecureOptions(t *testing.T) {
	pki := testpki.New(t, "client")
	s := StartWith(t, Options{
		SuperUser: "super:s3cret",
		TLS:       &TLSOptions{Keystore: pki.Broker.Keystore, Truststore: pki.Broker.CA},
	})
	if s.SecureAddr() == "" || s.SecureAddr() == s.Addr() {
		t.Fatalf("secure addr %q, plain %q", s.SecureAddr(), s.Addr())
	}
	cert, err := tls.LoadX509KeyPair(pki.Clients["client"].Keystore, pki.Clients["client"].Keystore)
	if err != nil {
		t.Fatal(err)
	}
	tcfg := pki.TLS.Clone()
	tcfg.Certificates = []tls.Certificate{cert}
	dial := func(network, addr string, timeout time.Duration) (net.Conn, error) {
		return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, network, addr, tcfg)
	}
	sc, ev, err := zk.Connect([]string{s.SecureAddr()}, 4*time.Second, zk.WithLogInfo(false), zk.WithDialer(dial))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sc.Close)
	waitState(t, ev, zk.StateHasSession)
	if _, err := sc.Create("/locked", []byte("x"), 0, zk.DigestACL(zk.PermAll, "owner", "pw")); err != nil {
		t.Fatal(err)
	}

	plain, _ := connect(t, s)
	if _, _, err := plain.Get("/locked"); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("anonymous read of /locked: %v, want ErrNoAuth", err)
	}
	if err := plain.AddAuth("digest", []byte("super:s3cret")); err != nil {
		t.Fatal(err)
	}
	if b, _, err := plain.Get("/locked"); err != nil || string(b) != "x" {
		t.Fatalf("super user read of /locked: %q %v", b, err)
	}
}
