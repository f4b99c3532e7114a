package main

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice/sluice/auth/certs"
	"github.com/sluice/sluice/auth/tlsconf"
)

// TestCert runs `sluice cert ca|broker|client` and loads what they wrote
// with the broker's and the client's TLS settings.
func TestCert(t *testing.T) {
	dir := t.TempDir()
	caDir, brokerDir, clientDir := filepath.Join(dir, "ca"), filepath.Join(dir, "broker"), filepath.Join(dir, "alice")
	sl := func(wantCode int, args ...string) string {
		t.Helper()
		var stdout, stderr strings.Builder
		if code := run(args, &stdout, &stderr); code != wantCode {
			t.Fatalf("sluice %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, wantCode, stdout.String(), stderr.String())
		}
		return stdout.String() + stderr.String()
	}
	sl(0, "cert", "ca", "--out", caDir)
	sl(1, "cert", "ca", "--out", caDir) // would orphan every issued certificate
	brokerOut := sl(0, "cert", "broker", "--ca", caDir, "--hosts", "localhost, 127.0.0.1", "--out", brokerDir)
	sl(0, "cert", "client", "--ca", caDir, "--name", "alice", "--ou", "eng", "--org", "acme", "--out", clientDir, "--key-type", "rsa", "--days", "2")

	// The printed server.properties lines configure a listener.
	brokerProps := map[string]string{tlsconf.KeyClientAuth: "required"}
	for _, line := range strings.Split(brokerOut, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && strings.HasPrefix(k, "ssl.") {
			brokerProps[k] = v
		}
	}
	s, err := tlsconf.FromProperties(func(k string) (string, bool) { v, ok := brokerProps[k]; return v, ok })
	if err != nil {
		t.Fatalf("printed broker properties: %v\n%s", err, brokerOut)
	}
	srv, err := tlsconf.NewServer(s, tlsconf.ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	leaf := srv.Certificate()
	if got := append(leaf.DNSNames, leaf.IPAddresses[0].String()); strings.Join(got, ",") != "localhost,127.0.0.1" {
		t.Errorf("broker SANs %v", got)
	}
	cs, err := tlsconf.ClientFromProperties(func(k string) (string, bool) {
		v, ok := map[string]string{
			tlsconf.KeyCALocation:          filepath.Join(clientDir, certs.CACertFile),
			tlsconf.KeyCertificateLocation: filepath.Join(clientDir, "alice.crt"),
			tlsconf.KeyKeyLocation:         filepath.Join(clientDir, "alice.key"),
		}[k]
		return v, ok
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := cs.Config()
	if err != nil {
		t.Fatal(err)
	}
	client := cfg.Certificates[0].Leaf
	if client.Subject.String() != "CN=alice,OU=eng,O=acme" || client.NotAfter.Sub(client.NotBefore).Hours() > 50 {
		t.Errorf("client certificate %s valid %s..%s", client.Subject, client.NotBefore, client.NotAfter)
	}
	if _, ok := cfg.Certificates[0].PrivateKey.(interface{ Size() int }); !ok {
		t.Errorf("--key-type rsa gave a %T key", cfg.Certificates[0].PrivateKey)
	}
	roots := x509.NewCertPool()
	caPEM, err := os.ReadFile(filepath.Join(caDir, certs.CACertFile))
	if err != nil {
		t.Fatal(err)
	}
	roots.AppendCertsFromPEM(caPEM)
	if _, err := client.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client certificate does not chain to the CA: %v", err)
	}
	if principal, err := srv.Principal(tls.ConnectionState{PeerCertificates: []*x509.Certificate{client}}); err != nil || principal != "User:CN=alice,OU=eng,O=acme" {
		t.Errorf("principal %q, %v", principal, err)
	}
}

func TestCertUsage(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args     []string
		wantCode int
		want     string
	}{
		{[]string{"cert"}, 2, "usage: sluice cert"},
		{[]string{"cert", "--help"}, 0, "usage: sluice cert"},
		{[]string{"cert", "sign"}, 2, `unknown subcommand "sign"`},
		{[]string{"cert", "ca"}, 2, "--out is required"},
		{[]string{"cert", "ca", "--out", dir, "--key-type", "dsa"}, 2, "unknown key type"},
		{[]string{"cert", "broker", "--out", dir, "--ca", dir}, 2, "--hosts is required"},
		{[]string{"cert", "client", "--out", dir, "--ca", dir}, 2, "--name is required"},
		{[]string{"cert", "client", "--out", dir, "--name", "x"}, 2, "--ca is required"},
		{[]string{"cert", "client", "--out", dir, "--name", "x", "--ca", filepath.Join(dir, "none")}, 1, "ca.crt"},
		{[]string{"cert", "broker", "--help"}, 0, "--hosts"},
	} {
		var stdout, stderr strings.Builder
		code := run(tc.args, &stdout, &stderr)
		if code != tc.wantCode || !strings.Contains(stdout.String()+stderr.String(), tc.want) {
			t.Errorf("sluice %s: exit %d, want %d with %q\n%s%s", strings.Join(tc.args, " "), code, tc.wantCode, tc.want, stdout.String(), stderr.String())
		}
	}
}
