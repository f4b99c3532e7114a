package server

import (
	"errors"
	"net"
	"os"
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
