package broker_test

// connections.authentication.timeout.ms: connections that never finish
// their TLS handshake or SASL authentication are closed, so they cannot
// hold max.connections; authenticated connections are not affected.

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/internal/testpki"
)

// TestAuthenticationTimeoutClosesSilentConnections: 30 TCP connections to
// an SSL listener that never start the handshake and a SASL_PLAINTEXT one
// that sends ApiVersions and never authenticates, against
// max.connections=8. Each is closed by the broker (a read returns EOF or a
// reset, not the test's own generous deadline), after which well-behaved
// SSL and SASL clients connect and produce, and keep producing on their
// connections after the timeout has passed.
func TestAuthenticationTimeoutClosesSilentConnections(t *testing.T) {
	t.Parallel()
	const timeout = 500 * time.Millisecond
	pki := testpki.New(t)
	b := brokertest.Start(t, "memory", func(c *config.Config) {
		c.Listeners = []string{"SSL://127.0.0.1:0", "SASL_PLAINTEXT://127.0.0.1:0"}
		c.SASLEnabledMechanisms = []string{"PLAIN"}
		c.MaxConnections = 8
		c.ConnectionsAuthenticationTimeout = timeout
		c.SecurityProperties = map[string]string{
			"ssl.keystore.type":       "PEM",
			"ssl.keystore.location":   pki.Broker.Keystore,
			"ssl.truststore.type":     "PEM",
			"ssl.truststore.location": pki.Broker.CA,
			"listener.name.sasl_plaintext.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
				`user_admin="admin-secret";`,
		}
	})
	sslAddr := listenerAddr(t, b, "SSL")
	saslAddr := listenerAddr(t, b, "SASL_PLAINTEXT")

	var conns []net.Conn
	for range 30 {
		nc, err := net.Dial("tcp", sslAddr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		conns = append(conns, nc)
	}
	// The SASL connection is among the first 8 the broker accepts only if
	// it dials before the silent ones fill max.connections; either way it
	// must be served and then closed.
	sc, err := net.Dial("tcp", saslAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sc.Close() })
	// ApiVersions v0: size, key 18, version 0, correlation id 1, null
	// client id, empty body.
	var req [14]byte
	binary.BigEndian.PutUint32(req[0:], 10)
	binary.BigEndian.PutUint16(req[4:], 18)
	binary.BigEndian.PutUint16(req[6:], 0)
	binary.BigEndian.PutUint32(req[8:], 1)
	binary.BigEndian.PutUint16(req[12:], 0xffff)
	if _, err := sc.Write(req[:]); err != nil {
		t.Fatal(err)
	}
	sc.SetReadDeadline(time.Now().Add(30 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(sc, size[:]); err != nil {
		t.Fatalf("ApiVersions before authentication: %v", err)
	}
	if _, err := io.CopyN(io.Discard, sc, int64(binary.BigEndian.Uint32(size[:]))); err != nil {
		t.Fatalf("ApiVersions response: %v", err)
	}
	conns = append(conns, sc)

	// Every connection must be closed by the broker. The read deadline is
	// only there so that a broker that never closes them fails the test
	// instead of hanging it.
	var wg sync.WaitGroup
	errs := make([]error, len(conns))
	for i, nc := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc.SetReadDeadline(time.Now().Add(30 * time.Second))
			_, err := nc.Read(make([]byte, 1))
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		switch {
		case err == nil:
			t.Errorf("connection %d: read a byte, want the broker to close it", i)
		case errors.Is(err, os.ErrDeadlineExceeded):
			t.Errorf("connection %d: still open after 30 s (connections.authentication.timeout.ms=%v)", i, timeout)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var hook disconnects
	newClient := func(opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append(opts, kgo.DefaultProduceTopic("t"), kgo.WithHooks(&hook))...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	sslCl := newClient(kgo.SeedBrokers(sslAddr), kgo.DialTLSConfig(pki.TLS))
	saslCl := newClient(kgo.SeedBrokers(saslAddr), kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism()))
	if _, err := kadm.NewClient(sslCl).CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatalf("create topic over SSL after the silent connections: %v", err)
	}
	produce := func(what string) {
		t.Helper()
		for name, cl := range map[string]*kgo.Client{"SSL": sslCl, "SASL_PLAINTEXT": saslCl} {
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(what)}).FirstErr(); err != nil {
				t.Fatalf("%s produce %s: %v", name, what, err)
			}
		}
	}
	produce("after the silent connections closed")
	// Authenticated connections outlive the timeout: the same clients
	// produce again on the connections they hold.
	before := hook.n.Load()
	time.Sleep(3 * timeout)
	produce("after the timeout")
	if n := hook.n.Load(); n != before {
		t.Fatalf("%d client connections closed while authenticated clients waited past the timeout", n-before)
	}
}

// disconnects counts the connections a kgo client saw closed.
type disconnects struct{ n atomic.Int64 }

func (d *disconnects) OnBrokerDisconnect(kgo.BrokerMetadata, net.Conn) { d.n.Add(1) }
