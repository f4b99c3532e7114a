package tlsconf

import (
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sluice/sluice/auth/certs"
	"github.com/sluice/sluice/internal/testenv"
)

// TestKeyFormats loads keystores whose key is PKCS#8, PKCS#1 (RSA) or
// SEC 1 (EC), and encrypted PKCS#8 as openssl writes it.
func TestKeyFormats(t *testing.T) {
	ca, err := certs.NewCA("ca", certs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ec, err := ca.IssueServer([]string{"localhost"}, certs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := ca.IssueServer([]string{"localhost"}, certs.Options{KeyType: certs.RSA2048})
	if err != nil {
		t.Fatal(err)
	}
	sec1, _ := x509.MarshalECPrivateKey(ec.Key.(*ecdsa.PrivateKey))
	pkcs1 := x509.MarshalPKCS1PrivateKey(rs.Key.(*rsa.PrivateKey))
	dir := t.TempDir()
	load := func(keyPEM []byte, b *certs.Bundle, password string) error {
		path := filepath.Join(dir, "ks.pem")
		if err := os.WriteFile(path, append(append([]byte{}, keyPEM...), b.CertPEM...), 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := FromProperties(props(map[string]string{KeyKeystoreLocation: path, KeyKeyPassword: password}))
		if err != nil {
			return err
		}
		srv, err := NewServer(s, ServerOptions{Logger: quietLogger()})
		if err != nil {
			return err
		}
		if !srv.Certificate().Equal(b.Cert) {
			t.Error("loaded another certificate")
		}
		return nil
	}
	for _, tc := range []struct {
		name string
		key  []byte
		b    *certs.Bundle
	}{
		{"PKCS#8 EC", ec.KeyPEM, ec},
		{"PKCS#8 RSA", rs.KeyPEM, rs},
		{"SEC 1 EC", pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: sec1}), ec},
		{"PKCS#1 RSA", pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: pkcs1}), rs},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := load(tc.key, tc.b, ""); err != nil {
				t.Fatal(err)
			}
		})
	}

	testenv.NeedsProcess(t, "openssl")
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		t.Skip("openssl not installed: encrypted keys not tested")
	}
	plain := filepath.Join(dir, "plain.key")
	if err := os.WriteFile(plain, ec.KeyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"-v2", "aes-256-cbc"},
		{"-v2", "aes-128-cbc", "-v2prf", "hmacWithSHA1"},
		{"-v2", "aes-192-cbc", "-v2prf", "hmacWithSHA512"},
		{"-v2", "des3"},
	} {
		t.Run("encrypted "+args[1], func(t *testing.T) {
			out := filepath.Join(dir, "enc.key")
			cmd := exec.Command(openssl, append([]string{"pkcs8", "-topk8", "-in", plain, "-out", out, "-passout", "pass:s3cret"}, args...)...)
			if msg, err := cmd.CombinedOutput(); err != nil {
				t.Skipf("openssl cannot write this form: %v\n%s", err, msg)
			}
			enc, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if err := load(enc, ec, "s3cret"); err != nil {
				t.Fatalf("right password: %v", err)
			}
			var ce *ConfigError
			if err := load(enc, ec, "wrong"); !errors.As(err, &ce) || ce.Key != KeyKeyPassword {
				t.Errorf("wrong password: err = %v, want a ConfigError for %s", err, KeyKeyPassword)
			}
			if err := load(enc, ec, ""); !errors.As(err, &ce) || ce.Key != KeyKeyPassword {
				t.Errorf("no password: err = %v, want a ConfigError for %s", err, KeyKeyPassword)
			}
		})
	}
}

func TestClientSettings(t *testing.T) {
	p := newPKI(t, "broker.example") // not the address dialed
	alice := p.client(t, pkix.Name{CommonName: "alice"})
	srv := p.server(t, map[string]string{KeyClientAuth: "required"})
	dial := func(m map[string]string) handshakeResult {
		t.Helper()
		cs, err := ClientFromProperties(props(m))
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := cs.Config()
		if err != nil {
			t.Fatal(err)
		}
		return handshake(t, srv, cfg, "127.0.0.1")
	}
	withCert := func(kv ...string) map[string]string {
		m := map[string]string{KeyCALocation: p.broker.CA, KeyCertificateLocation: alice.Cert, KeyKeyLocation: alice.Key}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	if r := dial(withCert()); r.ok() {
		t.Error("https endpoint identification accepted a certificate for another host")
	}
	r := dial(withCert(KeyEndpointIdentification, "none"))
	if !r.ok() {
		t.Fatalf("endpoint identification none: client %v, server %v", r.clientErr, r.serverErr)
	}
	if got, _ := srv.Principal(r.server); got != "User:CN=alice" {
		t.Errorf("principal %q", got)
	}
	// A CA directory, as OpenSSL's CApath.
	if r := dial(withCert(KeyEndpointIdentification, "none", KeyCALocation, p.dir)); !r.ok() {
		t.Errorf("CA directory: client %v, server %v", r.clientErr, r.serverErr)
	}
	// none still verifies the chain.
	other := newPKI(t)
	if r := dial(withCert(KeyEndpointIdentification, "none", KeyCALocation, other.broker.CA)); r.ok() {
		t.Error("endpoint identification none accepted a server of an untrusted CA")
	}
	if r := dial(withCert(KeyCALocation, other.broker.CA, KeyEnableCertificateValidation, "false")); !r.ok() {
		t.Errorf("verification off: client %v, server %v", r.clientErr, r.serverErr)
	}
	// Inline PEM.
	ca, _ := os.ReadFile(p.broker.CA)
	crt, _ := os.ReadFile(alice.Cert)
	key, _ := os.ReadFile(alice.Key)
	if r := dial(map[string]string{KeyCAPEM: string(ca), KeyCertificatePEM: string(crt), KeyKeyPEM: string(key), KeyEndpointIdentification: "none"}); !r.ok() {
		t.Errorf("inline PEM: client %v, server %v", r.clientErr, r.serverErr)
	}

	for _, tc := range []struct {
		name    string
		props   map[string]string
		wantKey string
	}{
		{"cert without key", map[string]string{KeyCertificateLocation: alice.Cert}, KeyKeyLocation},
		{"key without cert", map[string]string{KeyKeyLocation: alice.Key}, KeyCertificateLocation},
		{"bad algorithm", map[string]string{KeyEndpointIdentification: "dns"}, KeyEndpointIdentification},
		{"missing CA file", map[string]string{KeyCALocation: filepath.Join(p.dir, "nope")}, KeyCALocation},
		{"missing key file", map[string]string{KeyCertificateLocation: alice.Cert, KeyKeyLocation: filepath.Join(p.dir, "nope")}, KeyKeyLocation},
		{"key of another cert", map[string]string{KeyCertificateLocation: alice.Cert, KeyKeyLocation: p.broker.Key}, KeyKeyLocation},
		{"garbage CA", map[string]string{KeyCAPEM: "garbage"}, KeyCAPEM},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, err := ClientFromProperties(props(tc.props))
			if err == nil {
				_, err = cs.Config()
			}
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Key != tc.wantKey {
				t.Fatalf("err = %v, want a ConfigError for %s", err, tc.wantKey)
			}
		})
	}
}
