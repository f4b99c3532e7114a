package broker_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice/sluice/broker"
	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
)

// TestInterBrokerKeystoreError: a keystore the inter-broker connections
// cannot use fails Start, naming the inter-broker listener, instead of
// dialing the other brokers without a certificate.
func TestInterBrokerKeystoreError(t *testing.T) {
	garbage := filepath.Join(t.TempDir(), "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not PEM\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := brokertest.Config(t.TempDir(), "memory", func(c *config.Config) {
		c.ZooKeeperConnect = "127.0.0.1:1" // never dialed: Start fails first
		c.Listeners = []string{"SSL://127.0.0.1:0"}
		c.SecurityProperties = map[string]string{"ssl.keystore.location": garbage}
	})
	b, err := broker.Start(cfg, broker.Options{Logger: brokertest.Logger(t)})
	if err == nil {
		b.Close()
		t.Fatal("started")
	}
	if !strings.Contains(err.Error(), "inter-broker listener SSL") || !strings.Contains(err.Error(), "ssl.keystore.location") {
		t.Fatalf("err %v, want one naming the inter-broker listener's keystore", err)
	}
}
