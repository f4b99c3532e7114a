package certs

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"os"
	"testing"
)

func TestIssueAndVerify(t *testing.T) {
	for _, kt := range []KeyType{ECDSAP256, RSA2048} {
		t.Run("key="+string(kt), func(t *testing.T) {
			ca, err := NewCA("test CA", Options{KeyType: kt})
			if err != nil {
				t.Fatal(err)
			}
			srv, err := ca.IssueServer([]string{"localhost", "127.0.0.1", "::1"}, Options{KeyType: kt})
			if err != nil {
				t.Fatal(err)
			}
			cli, err := ca.IssueClient(pkix.Name{CommonName: "alice", Organization: []string{"acme"}}, Options{KeyType: kt})
			if err != nil {
				t.Fatal(err)
			}
			roots := x509.NewCertPool()
			roots.AddCert(ca.Cert)
			for _, host := range []string{"localhost", "127.0.0.1", "::1"} {
				if _, err := srv.Cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: host}); err != nil {
					t.Errorf("server cert for %s: %v", host, err)
				}
			}
			if _, err := srv.Cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: "example.com"}); err == nil {
				t.Error("server cert verified for a host it was not issued for")
			}
			if _, err := cli.Cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
				t.Errorf("client cert: %v", err)
			}
			if !srv.Cert.IPAddresses[0].Equal(net.IPv4(127, 0, 0, 1)) {
				t.Errorf("IP SANs = %v", srv.Cert.IPAddresses)
			}
			if _, err := tls.X509KeyPair(srv.CertPEM, srv.KeyPEM); err != nil {
				t.Errorf("cert and key do not pair: %v", err)
			}
		})
	}
}

func TestWriteAndLoad(t *testing.T) {
	dir := t.TempDir()
	ca, err := NewCA("test CA", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := ca.WriteCA(dir); err != nil {
		t.Fatal(err)
	}
	loaded, err := LoadCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !loaded.Cert.Equal(ca.Cert) {
		t.Fatal("loaded CA differs from the written one")
	}
	b, err := loaded.IssueClient(pkix.Name{CommonName: "bob"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	p, err := b.WriteFiles(out, "bob", loaded)
	if err != nil {
		t.Fatal(err)
	}
	ks, err := os.ReadFile(p.Keystore)
	if err != nil {
		t.Fatal(err)
	}
	// A keystore file is both the certificate and the key argument of
	// X509KeyPair: each takes the blocks of its kind.
	if _, err := tls.X509KeyPair(ks, ks); err != nil {
		t.Errorf("keystore file: %v", err)
	}
	for path, want := range map[string]os.FileMode{p.Keystore: 0o600, p.Key: 0o600, p.Cert: 0o644, p.CA: 0o644} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", path, fi.Mode().Perm(), want)
		}
	}
	if _, err := b.WriteFiles(out, "../x", loaded); err == nil {
		t.Error("WriteFiles accepted a name with a path separator")
	}
	if _, err := LoadCA(out); err == nil {
		t.Error("LoadCA accepted a directory without ca.key")
	}
}
