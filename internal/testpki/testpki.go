// Package testpki makes the certificates a security test needs: a CA, a
// broker certificate for 127.0.0.1 and localhost, and client certificates,
// written as Kafka PEM files under the test's temp dir (package
// auth/certs), plus a client TLS config that trusts the CA.
package testpki

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice/sluice/auth/certs"
)

// PKI is what New made.
type PKI struct {
	Broker  certs.Paths            // ssl.keystore.location = Broker.Keystore, truststore = Broker.CA
	Clients map[string]certs.Paths // by common name
	// TLS trusts the CA and expects the broker's certificate for 127.0.0.1.
	TLS *tls.Config
}

// New makes a CA, a broker certificate and a client certificate for each
// of clients (their CN).
func New(t testing.TB, clients ...string) PKI {
	t.Helper()
	dir := t.TempDir()
	ca, err := certs.NewCA("sluice test CA", certs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sb, err := ca.IssueServer([]string{"127.0.0.1", "localhost"}, certs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := PKI{Clients: map[string]certs.Paths{}}
	if p.Broker, err = sb.WriteFiles(filepath.Join(dir, "broker"), "broker", ca); err != nil {
		t.Fatal(err)
	}
	for _, cn := range clients {
		cb, err := ca.IssueClient(pkix.Name{CommonName: cn}, certs.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Clients[cn], err = cb.WriteFiles(filepath.Join(dir, "client-"+cn), cn, ca); err != nil {
			t.Fatal(err)
		}
	}
	pem, err := os.ReadFile(p.Broker.CA)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	p.TLS = &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
	return p
}

// BrokerSets are the broker's TLS settings as --set values.
func (p PKI) BrokerSets() []string {
	return []string{"ssl.keystore.type=PEM", "ssl.keystore.location=" + p.Broker.Keystore,
		"ssl.truststore.type=PEM", "ssl.truststore.location=" + p.Broker.CA}
}
