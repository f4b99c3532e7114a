package server

import (
	"errors"
	"net"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/internal/kraw"
)

// serveTwo starts a server with two PLAINTEXT listeners, CLIENT and
// REPLICATION (the inter-broker one), after set has changed the config,
// and returns their addresses.
func serveTwo(t *testing.T, set func(*config.Config)) (client, replication string) {
	t.Helper()
	cfg := config.Default()
	cfg.Listeners = []string{"CLIENT://127.0.0.1:0", "REPLICATION://127.0.0.1:0"}
	cfg.ListenerSecurityProtocolMap = map[string]string{"CLIENT": "PLAINTEXT", "REPLICATION": "PLAINTEXT"}
	cfg.InterBrokerListenerName = "REPLICATION"
	set(&cfg)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	s := newTestServer(t, &cfg, Options{ClusterID: "quota", AdvertisedHost: "127.0.0.1"})
	var addrs []string
	for _, name := range []string{"CLIENT", "REPLICATION"} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, ln.Addr().String())
		go s.ServeListener(ln, name)
	}
	return addrs[0], addrs[1]
}

// served reports whether the broker answers ApiVersions on c within wait.
// A broker that serves the connection answers well within wait; one that
// has not accepted it never does.
func served(t *testing.T, c *kraw.Conn, wait time.Duration) bool {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	c.Send(req)
	_, err := c.ReadFrame(wait)
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("connection closed: %v", err)
	}
	return err == nil
}

// TestMaxConnectionsSparesInterBroker: with max.connections=2 held by two
// client connections, the inter-broker listener still accepts (Kafka's
// ConnectionQuotas.protectedListener), and the client listener does not.
func TestMaxConnectionsSparesInterBroker(t *testing.T) {
	client, repl := serveTwo(t, func(c *config.Config) { c.MaxConnections = 2 })
	for range 2 {
		if c := kraw.Dial(t, client); !served(t, c, 10*time.Second) {
			t.Fatal("client connection under the limit not served")
		}
	}
	if c := kraw.Dial(t, repl); !served(t, c, 10*time.Second) {
		t.Fatal("inter-broker connection blocked by the broker-wide max.connections")
	}
	if c := kraw.Dial(t, client); served(t, c, 300*time.Millisecond) {
		t.Fatal("third client connection served past max.connections=2")
	}
}

// TestListenerMaxConnections: listener.name.client.max.connections=1
// holds back CLIENT's second connection and leaves REPLICATION usable.
func TestListenerMaxConnections(t *testing.T) {
	client, repl := serveTwo(t, func(c *config.Config) {
		if err := c.Set("listener.name.client.max.connections", "1"); err != nil {
			t.Fatal(err)
		}
	})
	if c := kraw.Dial(t, client); !served(t, c, 10*time.Second) {
		t.Fatal("first client connection not served")
	}
	for range 3 {
		if c := kraw.Dial(t, repl); !served(t, c, 10*time.Second) {
			t.Fatal("REPLICATION connection blocked by CLIENT's limit")
		}
	}
	if c := kraw.Dial(t, client); served(t, c, 300*time.Millisecond) {
		t.Fatal("second client connection served past listener.name.client.max.connections=1")
	}
}

// TestRateLimitCounts: 20 connections arriving at once at 5 a second are
// all let through, the first 5 at once, and by any time t at most
// burst+rate*t have been (the times come from a clock the test owns).
func TestRateLimitCounts(t *testing.T) {
	const rate, burst, n = 5, 5, 20
	r := newRateLimit(rate)
	t0 := time.Unix(1000, 0)
	var at []time.Duration // release times after t0, in take order
	for range n {
		at = append(at, r.take(t0))
	}
	for i, d := range at {
		if i < burst && d != 0 {
			t.Fatalf("connection %d delayed %v, want none within the burst", i, d)
		}
		if i > 0 && d < at[i-1] {
			t.Fatalf("connection %d released at %v, before %d at %v", i, d, i-1, at[i-1])
		}
		// at[i] is when i+1 have been let through.
		if limit := burst + float64(rate)*d.Seconds(); float64(i+1) > limit+1e-9 {
			t.Fatalf("%d let through by %v, want at most %.2f", i+1, d, limit)
		}
	}
	if last := at[n-1]; last != 3*time.Second {
		t.Fatalf("last released at %v, want 3s (15 at 200ms intervals after the burst)", last)
	}
	if r := newRateLimit(2147483647); r.take(t0) != 0 {
		t.Fatal("the default rate delays")
	}
}

// TestMaxConnectionCreationRate: with max.connection.creation.rate=5, 20
// connections opened at once are all served, and by any time at most
// 5+5*elapsed of them have been. The broker accepts a connection before
// the test sees its answer, and its first accept follows the test's start,
// so counting answers against the test's clock can only make the count
// smaller and the elapsed time longer: the check cannot fail spuriously.
// The inter-broker listener is not held back by the broker-wide rate.
func TestMaxConnectionCreationRate(t *testing.T) {
	t.Parallel()
	const rate, burst, n = 5, 5, 20
	client, repl := serveTwo(t, func(c *config.Config) { c.MaxConnectionCreationRate = rate })
	start := time.Now()
	conns := make([]*kraw.Conn, n)
	for i := range conns {
		conns[i] = kraw.Dial(t, client)
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(3)
		conns[i].Send(req)
	}
	type answer struct {
		at  time.Time
		err error
	}
	answers := make(chan answer, n)
	for _, c := range conns {
		go func() {
			_, err := c.ReadFrame(30 * time.Second)
			answers <- answer{time.Now(), err}
		}()
	}
	// While the client listener is throttled, REPLICATION answers at once.
	for range 3 {
		if c := kraw.Dial(t, repl); !served(t, c, 10*time.Second) {
			t.Fatal("inter-broker connection not served while clients were throttled")
		}
	}
	var at []time.Duration
	for range n {
		a := <-answers
		if a.err != nil {
			t.Fatalf("connection not served: %v", a.err)
		}
		at = append(at, a.at.Sub(start))
	}
	slices.Sort(at)
	for i, d := range at {
		if limit := burst + rate*d.Seconds(); float64(i+1) > limit {
			t.Fatalf("%d connections served %v after the start, want at most %.2f", i+1, d, limit)
		}
	}
}
