package broker_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/auth/certs"
	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
)

// TestDynamicListenerKeystore: a per-broker
// listener.name.<l>.ssl.keystore.location changes the certificate a TLS
// listener serves from the next handshake on, without a restart; a
// keystore naming another subject, one that does not load, the default
// level and the unprefixed key are refused with Kafka's messages and the
// served certificate stays.
func TestDynamicListenerKeystore(t *testing.T) {
	ca, err := certs.NewCA("dyn CA", certs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	issue := func(name string, hosts ...string) (certs.Paths, *big.Int) {
		t.Helper()
		b, err := ca.IssueServer(hosts, certs.Options{})
		if err != nil {
			t.Fatal(err)
		}
		p, err := b.WriteFiles(filepath.Join(dir, name), "broker", ca)
		if err != nil {
			t.Fatal(err)
		}
		return p, b.Cert.SerialNumber
	}
	first, firstSerial := issue("first", "127.0.0.1", "localhost")
	second, secondSerial := issue("second", "127.0.0.1", "localhost")
	other, _ := issue("other", "example.com")

	b := brokertest.Start(t, "memory", func(c *config.Config) {
		c.Listeners = []string{"PLAINTEXT://127.0.0.1:0", "SSL://127.0.0.1:0"}
		c.SecurityProperties = map[string]string{"ssl.keystore.location": first.Keystore}
	})
	caPEM, err := os.ReadFile(first.CA)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	served := func() *big.Int {
		t.Helper()
		conn, err := tls.Dial("tcp", listenerAddr(t, b, "SSL"), &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
		if err != nil {
			t.Fatalf("TLS handshake: %v", err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber
	}
	if s := served(); s.Cmp(firstSerial) != 0 {
		t.Fatalf("serves serial %v, want the first certificate's %v", s, firstSerial)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(listenerAddr(t, b, "PLAINTEXT")))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	alter := func(key, value string, ids ...int32) (error, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resps, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: key, Value: kadm.StringPtr(value)}}, ids...)
		if err != nil || len(resps) != 1 {
			t.Fatalf("alter %s: %v %v", key, err, resps)
		}
		return resps[0].Err, resps[0].ErrMessage
	}
	if err, msg := alter("listener.name.ssl.ssl.keystore.location", second.Keystore, 0); err != nil {
		t.Fatalf("new keystore: %v %s", err, msg)
	}
	if s := served(); s.Cmp(secondSerial) != 0 {
		t.Fatalf("after the alter serves serial %v, want the second certificate's %v", s, secondSerial)
	}
	for _, tc := range []struct {
		key, value string
		ids        []int32
		msg        string
	}{
		{"listener.name.ssl.ssl.keystore.location", other.Keystore, []int32{0}, "Invalid dynamic configuration: listener SSL: tlsconf: Keystore DistinguishedName or SubjectAltNames do not match"},
		{"listener.name.ssl.ssl.keystore.location", filepath.Join(dir, "missing.pem"), []int32{0}, "Invalid dynamic configuration: listener SSL: "},
		{"listener.name.ssl.ssl.keystore.location", second.Keystore, nil, "Cannot update these configs at default cluster level, broker id must be specified: Set(listener.name.ssl.ssl.keystore.location)"},
		{"ssl.keystore.location", second.Keystore, []int32{0}, "These security configs can be dynamically updated only per-listener using the listener prefix: Set(ssl.keystore.location)"},
	} {
		err, msg := alter(tc.key, tc.value, tc.ids...)
		if err != kerr.InvalidRequest || len(msg) < len(tc.msg) || msg[:len(tc.msg)] != tc.msg {
			t.Errorf("%s=%s at %v: %v %q, want INVALID_REQUEST %q...", tc.key, tc.value, tc.ids, err, msg, tc.msg)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rcs, err := adm.DescribeBrokerConfigs(ctx, 0)
	if err != nil || len(rcs) != 1 {
		t.Fatalf("describe: %v %v", err, rcs)
	}
	found := false
	for _, c := range rcs[0].Configs {
		if c.Key == "listener.name.ssl.ssl.keystore.location" {
			found = c.MaybeValue() == second.Keystore && c.Source == kmsg.ConfigSourceDynamicBrokerConfig
		}
	}
	if !found {
		t.Errorf("listener.name.ssl.ssl.keystore.location not described as %s DYNAMIC_BROKER_CONFIG", second.Keystore)
	}
	if s := served(); s.Cmp(secondSerial) != 0 {
		t.Fatalf("after the refusals serves serial %v, want the second certificate's %v", s, secondSerial)
	}

	// Rotation in place: the same path, rewritten, and altered again.
	third, thirdSerial := issue("second", "127.0.0.1", "localhost")
	if third.Keystore != second.Keystore {
		t.Fatalf("rewrote %s, want %s", third.Keystore, second.Keystore)
	}
	if err, msg := alter("listener.name.ssl.ssl.keystore.location", second.Keystore, 0); err != nil {
		t.Fatalf("same path again: %v %s", err, msg)
	}
	if s := served(); s.Cmp(thirdSerial) != 0 {
		t.Fatalf("after the alter naming the rewritten file serves serial %v, want %v", s, thirdSerial)
	}
}
