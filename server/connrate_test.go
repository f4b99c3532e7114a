package server

// Connection creation rates end to end, through real connections on
// several listeners, and their accept-delay metrics on /metrics.

import (
	"net"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/internal/kraw"
	"github.com/sluice/sluice/metrics"
	"github.com/sluice/sluice/metrics/metricstest"
)

// serveNamed starts a server with PLAINTEXT listeners of the given names,
// metrics on, after set has changed the config, and returns it with their
// addresses by name and the URL of its /metrics. The config is not
// validated: a control-plane listener needs zookeeper.connect, which
// connLimits does not look at.
func serveNamed(t *testing.T, names []string, set func(*config.Config)) (*Server, map[string]string, string) {
	t.Helper()
	cfg := config.Default()
	cfg.ListenerSecurityProtocolMap = map[string]string{}
	for _, n := range names {
		cfg.Listeners = append(cfg.Listeners, n+"://127.0.0.1:0")
		cfg.ListenerSecurityProtocolMap[n] = "PLAINTEXT"
	}
	set(&cfg)
	m := metrics.New()
	s := newTestServer(t, &cfg, Options{ClusterID: "rate", AdvertisedHost: "127.0.0.1", Metrics: m})
	addrs := map[string]string{}
	for _, n := range names {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addrs[n] = ln.Addr().String()
		go s.ServeListener(ln, n)
	}
	hs := httptest.NewServer(promhttp.HandlerFor(m.Registry(), promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	t.Cleanup(hs.Close)
	return s, addrs, hs.URL + "/metrics"
}

// burst opens n connections to addr at once, each sending ApiVersions, and
// waits until every one is answered.
func burst(t *testing.T, addr string, n int) {
	t.Helper()
	conns := make([]*kraw.Conn, n)
	for i := range conns {
		conns[i] = kraw.Dial(t, addr)
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(3)
		conns[i].Send(req)
	}
	for i, c := range conns {
		if _, err := c.ReadFrame(30 * time.Second); err != nil {
			t.Fatalf("connection %d of %d to %s not served: %v", i+1, n, addr, err)
		}
	}
}

// throttled returns how many accepts of listener a creation rate delayed,
// as /metrics shows it, and the milliseconds of those delays.
func throttled(t *testing.T, url, listener string) (n, ms float64) {
	t.Helper()
	fams, err := metricstest.Scrape(url)
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"listener": listener}
	n, ok := metricstest.Value(fams, "kafka_server_socket_server_metrics_connection_accept_throttled_total", labels)
	if !ok {
		t.Fatalf("no connection_accept_throttled_total series for %s", listener)
	}
	ms, ok = metricstest.Value(fams, "kafka_server_socket_server_metrics_connection_accept_throttle_time_ms_total", labels)
	if !ok {
		t.Fatalf("no connection_accept_throttle_time_ms_total series for %s", listener)
	}
	return n, ms
}

// TestListenerCreationRateEndToEnd: listener.name.client.max.connection.
// creation.rate=5 delays a burst of 20 connections on CLIENT (the 15 past
// the one-second burst, 200 ms each, since a listener's accept loop waits
// out one delay before it accepts the next: 3 s in all) and none on
// OTHER, an ordinary client listener.
func TestListenerCreationRateEndToEnd(t *testing.T) {
	_, addrs, url := serveNamed(t, []string{"CLIENT", "OTHER"}, func(c *config.Config) {
		if err := c.Set("listener.name.client.max.connection.creation.rate", "5"); err != nil {
			t.Fatal(err)
		}
	})
	burst(t, addrs["OTHER"], 20)
	burst(t, addrs["CLIENT"], 20)
	if n, _ := throttled(t, url, "OTHER"); n != 0 {
		t.Errorf("OTHER: %v accepts delayed, want none (no rate on it)", n)
	}
	// The test's dials take time of their own, so fewer accepts may
	// have to wait, never more.
	n, ms := throttled(t, url, "CLIENT")
	if n < 1 || n > 15 {
		t.Errorf("CLIENT: %v accepts delayed, want 1..15 of 20 at 5 a second", n)
	}
	if ms <= 0 || ms > 3000 {
		t.Errorf("CLIENT: %v ms of delays, want some and at most 3000", ms)
	}
	t.Logf("CLIENT: %v accepts delayed, %v ms in all", n, ms)
}

// TestControlPlaneExemptFromCreationRate: the broker-wide
// max.connection.creation.rate delays a burst on the client listener but
// none on the control-plane listener (nor the inter-broker one), which
// count only against their own listener.name.<l>.max.connection.creation.
// rate. Kafka spares only the inter-broker listener; Sluice spares the
// control plane's too, so the controller can reach a broker whose clients
// are being throttled (connlimit.go).
func TestControlPlaneExemptFromCreationRate(t *testing.T) {
	_, addrs, url := serveNamed(t, []string{"CLIENT", "REPLICATION", "CONTROLLER"}, func(c *config.Config) {
		c.InterBrokerListenerName = "REPLICATION"
		c.ControlPlaneListenerName = "CONTROLLER"
		c.MaxConnectionCreationRate = 2
	})
	burst(t, addrs["CLIENT"], 6)
	burst(t, addrs["CONTROLLER"], 10)
	burst(t, addrs["REPLICATION"], 10)
	if n, _ := throttled(t, url, "CLIENT"); n < 1 {
		t.Errorf("CLIENT: no accept delayed by max.connection.creation.rate=2 in a burst of 6")
	}
	for _, l := range []string{"CONTROLLER", "REPLICATION"} {
		if n, _ := throttled(t, url, l); n != 0 {
			t.Errorf("%s: %v accepts delayed by the broker-wide rate, want none", l, n)
		}
	}
}
