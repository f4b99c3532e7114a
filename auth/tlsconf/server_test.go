package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/auth/certs"
)

// pki is a CA with a broker certificate for localhost and 127.0.0.1, and
// its files in dir.
type pki struct {
	dir    string
	ca     *certs.Authority
	broker certs.Paths
}

func newPKI(t *testing.T, hosts ...string) *pki {
	t.Helper()
	if len(hosts) == 0 {
		hosts = []string{"localhost", "127.0.0.1"}
	}
	ca, err := certs.NewCA("test CA", certs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	b, err := ca.IssueServer(hosts, certs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := b.WriteFiles(dir, "broker", ca)
	if err != nil {
		t.Fatal(err)
	}
	return &pki{dir: dir, ca: ca, broker: p}
}

// client issues a client certificate and returns the files.
func (p *pki) client(t *testing.T, subject pkix.Name) certs.Paths {
	t.Helper()
	b, err := p.ca.IssueClient(subject, certs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	paths, err := b.WriteFiles(p.dir, subject.CommonName, p.ca)
	if err != nil {
		t.Fatal(err)
	}
	return paths
}

// clientConfig is a client tls.Config trusting p's CA, with the client
// certificate in paths when it has one.
func (p *pki) clientConfig(t *testing.T, paths *certs.Paths) *tls.Config {
	t.Helper()
	m := map[string]string{KeyCALocation: p.broker.CA}
	if paths != nil {
		m[KeyCertificateLocation], m[KeyKeyLocation] = paths.Cert, paths.Key
	}
	cs, err := ClientFromProperties(props(m))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := cs.Config()
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func (p *pki) server(t *testing.T, extra map[string]string) *Server {
	t.Helper()
	m := map[string]string{KeyKeystoreType: "PEM", KeyKeystoreLocation: p.broker.Keystore, KeyTruststoreLocation: p.broker.CA}
	for k, v := range extra {
		m[k] = v
	}
	s, err := FromProperties(props(m))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(s, ServerOptions{ReloadInterval: time.Nanosecond, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// leafOf returns the certificate in p.Cert.
func leafOf(t *testing.T, p certs.Paths) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(p.Cert)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode(data)
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

type handshakeResult struct {
	server, client tls.ConnectionState
	serverErr      error
	clientErr      error
}

// handshake runs one TLS handshake over loopback between srv and a client
// with cfg that dials addr host (default "localhost").
func handshake(t *testing.T, srv *Server, cfg *tls.Config, host string) handshakeResult {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type accepted struct {
		state tls.ConnectionState
		err   error
	}
	done := make(chan accepted, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- accepted{err: err}
			return
		}
		defer c.Close()
		tc := c.(*tls.Conn)
		err = tc.Handshake()
		if err == nil {
			// Wait for the client to finish reading our flight (TLS 1.3
			// clients learn of a rejected certificate only when reading).
			_, err = tc.Write([]byte{1})
		}
		done <- accepted{tc.ConnectionState(), err}
	}()
	if host == "" {
		host = "localhost"
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	var r handshakeResult
	conn, err := tls.Dial("tcp", net.JoinHostPort(host, port), cfg)
	if err == nil {
		var b [1]byte
		_, err = io.ReadFull(conn, b[:])
		r.client = conn.ConnectionState()
		conn.Close()
	}
	r.clientErr = err
	a := <-done
	r.server, r.serverErr = a.state, a.err
	return r
}

func (r handshakeResult) ok() bool { return r.clientErr == nil && r.serverErr == nil }

func TestHandshakeClientAuth(t *testing.T) {
	p := newPKI(t)
	alice := p.client(t, pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"eng"}, Organization: []string{"acme"}, Country: []string{"US"}})
	other := newPKI(t)
	mallory := other.client(t, pkix.Name{CommonName: "mallory"})
	const aliceDN = "User:CN=alice,OU=eng,O=acme,C=US"
	for _, tc := range []struct {
		auth, who     string
		wantOK        bool
		wantPrincipal string
	}{
		{"none", "alice", true, AnonymousPrincipal},
		{"none", "nobody", true, AnonymousPrincipal},
		{"requested", "alice", true, aliceDN},
		{"requested", "nobody", true, AnonymousPrincipal},
		{"requested", "mallory", false, ""},
		{"required", "alice", true, aliceDN},
		{"required", "nobody", false, ""},
		{"required", "mallory", false, ""},
	} {
		t.Run("auth="+tc.auth+"/client="+tc.who, func(t *testing.T) {
			srv := p.server(t, map[string]string{KeyClientAuth: tc.auth})
			var cfg *tls.Config
			switch tc.who {
			case "alice":
				cfg = p.clientConfig(t, &alice)
			case "mallory":
				cfg = p.clientConfig(t, &mallory)
			default:
				cfg = p.clientConfig(t, nil)
			}
			r := handshake(t, srv, cfg, "")
			if r.ok() != tc.wantOK {
				t.Fatalf("handshake: client %v, server %v; want ok=%v", r.clientErr, r.serverErr, tc.wantOK)
			}
			if !tc.wantOK {
				return
			}
			got, err := srv.Principal(r.server)
			if err != nil || got != tc.wantPrincipal {
				t.Errorf("Principal = %q, %v; want %q", got, err, tc.wantPrincipal)
			}
		})
	}
}

func TestHandshakeProtocols(t *testing.T) {
	p := newPKI(t)
	for _, tc := range []struct {
		name            string
		server          string
		clientMin, cMax uint16
		want            uint16 // 0: the handshake fails
	}{
		{"default negotiates 1.3", "", 0, 0, tls.VersionTLS13},
		{"default accepts a 1.2 client", "", 0, tls.VersionTLS12, tls.VersionTLS12},
		{"1.3 only refuses a 1.2 client", "TLSv1.3", 0, tls.VersionTLS12, 0},
		{"1.2 only", "TLSv1.2", 0, 0, tls.VersionTLS12},
		{"1.1 clients refused", "", tls.VersionTLS10, tls.VersionTLS11, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := p.server(t, map[string]string{KeyEnabledProtocols: tc.server})
			cfg := p.clientConfig(t, nil)
			cfg.MinVersion, cfg.MaxVersion = tc.clientMin, tc.cMax
			r := handshake(t, srv, cfg, "")
			switch {
			case tc.want == 0 && r.ok():
				t.Fatalf("handshake succeeded with version %x", r.client.Version)
			case tc.want != 0 && !r.ok():
				t.Fatalf("handshake: client %v, server %v", r.clientErr, r.serverErr)
			case tc.want != 0 && r.client.Version != tc.want:
				t.Fatalf("version %x, want %x", r.client.Version, tc.want)
			}
		})
	}
}

func TestHandshakeCipherSuites(t *testing.T) {
	p := newPKI(t) // ECDSA certificates
	srv := p.server(t, map[string]string{KeyCipherSuites: "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"})
	r := handshake(t, srv, p.clientConfig(t, nil), "")
	if !r.ok() {
		t.Fatalf("handshake: client %v, server %v", r.clientErr, r.serverErr)
	}
	if r.client.Version != tls.VersionTLS12 || r.client.CipherSuite != tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384 {
		t.Errorf("negotiated %x / %s; want TLS 1.2 with the one suite allowed", r.client.Version, tls.CipherSuiteName(r.client.CipherSuite))
	}
	cfg := p.clientConfig(t, nil)
	cfg.CipherSuites = []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}
	if r := handshake(t, srv, cfg, ""); r.ok() {
		t.Errorf("a client without the allowed suite negotiated %s", tls.CipherSuiteName(r.client.CipherSuite))
	}
}

func TestPrincipalMappingEndToEnd(t *testing.T) {
	p := newPKI(t)
	svc := p.client(t, pkix.Name{CommonName: "Billing", OrganizationalUnit: []string{"ServiceUsers"}, Organization: []string{"acme"}})
	human := p.client(t, pkix.Name{CommonName: "Alice", OrganizationalUnit: []string{"eng"}, Organization: []string{"acme"}})
	t.Run("rules", func(t *testing.T) {
		srv := p.server(t, map[string]string{KeyClientAuth: "required",
			KeyPrincipalMappingRules: "RULE:^CN=(.*?),OU=ServiceUsers,.*$/svc-$1/L,\nDEFAULT"})
		for _, tc := range []struct {
			paths certs.Paths
			want  string
		}{{svc, "User:svc-billing"}, {human, "User:CN=Alice,OU=eng,O=acme"}} {
			r := handshake(t, srv, p.clientConfig(t, &tc.paths), "")
			if !r.ok() {
				t.Fatalf("handshake: client %v, server %v", r.clientErr, r.serverErr)
			}
			if got, err := srv.Principal(r.server); err != nil || got != tc.want {
				t.Errorf("Principal = %q, %v; want %q", got, err, tc.want)
			}
		}
	})
	t.Run("no rule applies", func(t *testing.T) {
		srv := p.server(t, map[string]string{KeyClientAuth: "required",
			KeyPrincipalMappingRules: "RULE:^CN=(.*?),OU=ServiceUsers,.*$/$1/"})
		r := handshake(t, srv, p.clientConfig(t, &human), "")
		if !r.ok() {
			t.Fatalf("handshake: client %v, server %v", r.clientErr, r.serverErr)
		}
		if got, err := srv.Principal(r.server); !errors.Is(err, ErrNoMatchingRule) {
			t.Errorf("Principal = %q, %v; want ErrNoMatchingRule", got, err)
		}
	})
}

func TestReload(t *testing.T) {
	p := newPKI(t)
	srv := p.server(t, map[string]string{KeyClientAuth: "requested"})
	served := func() *x509.Certificate {
		t.Helper()
		r := handshake(t, srv, p.clientConfig(t, nil), "")
		if !r.ok() {
			t.Fatalf("handshake: client %v, server %v", r.clientErr, r.serverErr)
		}
		return r.client.PeerCertificates[0]
	}
	first := served()

	// A new certificate renamed over the keystore, as certs.WriteFiles does.
	b, err := p.ca.IssueServer([]string{"localhost"}, certs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.WriteFiles(p.dir, "broker", p.ca); err != nil {
		t.Fatal(err)
	}
	if got := served(); !got.Equal(b.Cert) || got.Equal(first) {
		t.Fatalf("after a rename: served serial %x, want the new %x", got.SerialNumber, b.Cert.SerialNumber)
	}

	// A broken rewrite in place keeps the previous certificate.
	if err := os.WriteFile(p.broker.Keystore, []byte("-----BEGIN garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := served(); !got.Equal(b.Cert) {
		t.Fatalf("after a broken keystore: served serial %x, want the previous %x", got.SerialNumber, b.Cert.SerialNumber)
	}
	if _, err := srv.Reload(); err == nil {
		t.Error("Reload of an unchanged broken keystore reported no error")
	}
	// The operator fixes it, in place (the mtime moved on explicitly:
	// file systems with coarse timestamps could show the same one).
	c, err := p.ca.IssueServer([]string{"localhost"}, certs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.broker.Keystore, c.KeystorePEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(p.broker.Keystore, later, later); err != nil {
		t.Fatal(err)
	}
	if got := served(); !got.Equal(c.Cert) {
		t.Fatalf("after an in-place rewrite: served serial %x, want %x", got.SerialNumber, c.Cert.SerialNumber)
	}
	if got := srv.Certificate(); !got.Equal(c.Cert) {
		t.Errorf("Certificate() = serial %x", got.SerialNumber)
	}

	// The truststore reloads too: a client of a new CA is refused, then
	// accepted once the truststore holds that CA.
	other := newPKI(t)
	bob := other.client(t, pkix.Name{CommonName: "bob"})
	bobCfg := p.clientConfig(t, &bob)
	if r := handshake(t, srv, bobCfg, ""); r.ok() {
		t.Fatal("a client of an untrusted CA was accepted")
	}
	trust, err := os.ReadFile(other.broker.CA)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.broker.CA+".new", trust, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(p.broker.CA+".new", p.broker.CA); err != nil {
		t.Fatal(err)
	}
	r := handshake(t, srv, bobCfg, "")
	if !r.ok() {
		t.Fatalf("after the truststore changed: client %v, server %v", r.clientErr, r.serverErr)
	}
	if got, _ := srv.Principal(r.server); got != "User:CN=bob" {
		t.Errorf("principal %q", got)
	}
}

func TestReloadDisabled(t *testing.T) {
	p := newPKI(t)
	s, err := FromProperties(props(map[string]string{KeyKeystoreLocation: p.broker.Keystore}))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(s, ServerOptions{ReloadInterval: -1, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	first := srv.Certificate()
	b, _ := p.ca.IssueServer([]string{"localhost"}, certs.Options{})
	if _, err := b.WriteFiles(p.dir, "broker", p.ca); err != nil {
		t.Fatal(err)
	}
	if r := handshake(t, srv, p.clientConfig(t, nil), ""); !r.ok() || !r.client.PeerCertificates[0].Equal(first) {
		t.Fatalf("reloading disabled, yet the served certificate changed (or the handshake failed: %v)", r.clientErr)
	}
	// An explicit Reload still works.
	if changed, err := srv.Reload(); !changed || err != nil {
		t.Fatalf("Reload = %v, %v", changed, err)
	}
	if !srv.Certificate().Equal(b.Cert) {
		t.Error("Reload did not load the new certificate")
	}
}

func TestNewServerBadInputs(t *testing.T) {
	p := newPKI(t)
	other := newPKI(t)
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	read := func(path string) []byte {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	certPEM, keyPEM := read(p.broker.Cert), read(p.broker.Key)
	otherKey := read(other.broker.Key)
	mismatched := write("mismatched.pem", append(append([]byte{}, otherKey...), certPEM...))
	garbage := write("garbage.pem", []byte("this is not PEM\n"))
	truncated := write("truncated.pem", []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"+string(keyPEM)))
	keyOnly := write("keyonly.pem", keyPEM)
	twoKeys := write("twokeys.pem", append(append(append([]byte{}, keyPEM...), otherKey...), certPEM...))
	legacy := write("legacy.pem", []byte("-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00000000000000000000000000000000\n\nAAAA\n-----END RSA PRIVATE KEY-----\n"+string(certPEM)))

	for _, tc := range []struct {
		name    string
		props   map[string]string
		wantKey string
		wantIs  error
	}{
		{"missing keystore file", map[string]string{KeyKeystoreLocation: filepath.Join(dir, "nope.pem")}, KeyKeystoreLocation, fs.ErrNotExist},
		{"key of another certificate", map[string]string{KeyKeystoreLocation: mismatched}, KeyKeystoreLocation, nil},
		{"garbage keystore", map[string]string{KeyKeystoreLocation: garbage}, KeyKeystoreLocation, nil},
		{"corrupt certificate", map[string]string{KeyKeystoreLocation: truncated}, KeyKeystoreLocation, nil},
		{"no certificate", map[string]string{KeyKeystoreLocation: keyOnly}, KeyKeystoreLocation, nil},
		{"two keys", map[string]string{KeyKeystoreLocation: twoKeys}, KeyKeystoreLocation, nil},
		{"legacy encrypted key", map[string]string{KeyKeystoreLocation: legacy}, KeyKeystoreLocation, nil},
		{"password for a plain key", map[string]string{KeyKeystoreLocation: p.broker.Keystore, KeyKeyPassword: "secret"}, KeyKeyPassword, nil},
		{"inline garbage key", map[string]string{KeyKeystoreKey: "garbage", KeyKeystoreCertificateChain: string(certPEM)}, KeyKeystoreKey, nil},
		{"inline garbage chain", map[string]string{KeyKeystoreKey: string(keyPEM), KeyKeystoreCertificateChain: "garbage"}, KeyKeystoreCertificateChain, nil},
		{"missing truststore file", map[string]string{KeyKeystoreLocation: p.broker.Keystore, KeyTruststoreLocation: filepath.Join(dir, "nope.pem"), KeyClientAuth: "required"}, KeyTruststoreLocation, fs.ErrNotExist},
		{"garbage truststore", map[string]string{KeyKeystoreLocation: p.broker.Keystore, KeyTruststoreLocation: garbage}, KeyTruststoreLocation, nil},
		{"inline garbage truststore", map[string]string{KeyKeystoreLocation: p.broker.Keystore, KeyTruststoreCertificates: "garbage"}, KeyTruststoreCertificates, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := FromProperties(props(tc.props))
			if err == nil {
				_, err = NewServer(s, ServerOptions{Logger: quietLogger()})
			}
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Key != tc.wantKey {
				t.Fatalf("err = %v, want a ConfigError for %s", err, tc.wantKey)
			}
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Fatalf("err = %v, want one that is %v", err, tc.wantIs)
			}
			t.Log(err)
		})
	}
}

func TestInlineKeystore(t *testing.T) {
	p := newPKI(t)
	certPEM, _ := os.ReadFile(p.broker.Cert)
	keyPEM, _ := os.ReadFile(p.broker.Key)
	caPEM, _ := os.ReadFile(p.broker.CA)
	s, err := FromProperties(props(map[string]string{
		KeyKeystoreKey: string(keyPEM), KeyKeystoreCertificateChain: string(certPEM),
		KeyTruststoreCertificates: string(caPEM), KeyClientAuth: "requested",
	}))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(s, ServerOptions{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if r := handshake(t, srv, p.clientConfig(t, nil), ""); !r.ok() {
		t.Fatalf("handshake: client %v, server %v", r.clientErr, r.serverErr)
	}

	// Folded onto one line, as a properties file with line continuations
	// gives it; Kafka reads that too.
	oneLine := func(b []byte) string { return strings.Join(strings.Fields(string(b)), " ") }
	s, err = FromProperties(props(map[string]string{
		KeyKeystoreKey: oneLine(keyPEM), KeyKeystoreCertificateChain: oneLine(certPEM),
		KeyTruststoreCertificates: oneLine(caPEM), KeyClientAuth: "required",
	}))
	if err != nil {
		t.Fatal(err)
	}
	srv, err = NewServer(s, ServerOptions{Logger: quietLogger()})
	if err != nil {
		t.Fatalf("one-line PEM: %v", err)
	}
	if !srv.Certificate().Equal(leafOf(t, p.broker)) {
		t.Error("one-line PEM: another certificate")
	}
}

// TestSettingsClientConfig: a broker dialing another with its listener's
// settings trusts the truststore, presents its keystore (accepted where
// ssl.client.auth=required), verifies the host name, and reports a bad
// keystore instead of dialing without a certificate.
func TestSettingsClientConfig(t *testing.T) {
	p := newPKI(t)
	listener := map[string]string{KeyKeystoreLocation: p.broker.Keystore, KeyTruststoreLocation: p.broker.CA, KeyClientAuth: "required"}
	s, err := FromProperties(props(listener))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := s.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	srv := p.server(t, map[string]string{KeyClientAuth: "required"})

	t.Run("mutual TLS", func(t *testing.T) {
		r := handshake(t, srv, cfg, "")
		if !r.ok() {
			t.Fatalf("handshake: client %v, server %v", r.clientErr, r.serverErr)
		}
		if got := r.server.PeerCertificates; len(got) == 0 || !got[0].Equal(leafOf(t, p.broker)) {
			t.Fatal("the server did not see the broker's certificate")
		}
	})
	t.Run("host name verified", func(t *testing.T) {
		other := newPKI(t, "other.example")
		os2, err := FromProperties(props(map[string]string{KeyKeystoreLocation: other.broker.Keystore, KeyTruststoreLocation: other.broker.CA}))
		if err != nil {
			t.Fatal(err)
		}
		ocfg, err := os2.ClientConfig()
		if err != nil {
			t.Fatal(err)
		}
		osrv := other.server(t, nil)
		if r := handshake(t, osrv, ocfg, "localhost"); r.clientErr == nil {
			t.Fatal("a certificate for other.example was accepted for localhost")
		}
	})
	t.Run("protocols", func(t *testing.T) {
		s, err := FromProperties(props(map[string]string{KeyKeystoreLocation: p.broker.Keystore, KeyEnabledProtocols: "TLSv1.3"}))
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := s.ClientConfig()
		if err != nil || cfg.MinVersion != tls.VersionTLS13 {
			t.Fatalf("MinVersion %x, err %v", cfg.MinVersion, err)
		}
	})
	t.Run("bad keystore", func(t *testing.T) {
		garbage := filepath.Join(t.TempDir(), "garbage.pem")
		if err := os.WriteFile(garbage, []byte("not PEM\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{filepath.Join(t.TempDir(), "nope.pem"), garbage} {
			s, err := FromProperties(props(map[string]string{KeyKeystoreLocation: path}))
			if err != nil {
				t.Fatal(err)
			}
			var ce *ConfigError
			if _, err := s.ClientConfig(); !errors.As(err, &ce) || ce.Key != KeyKeystoreLocation {
				t.Fatalf("%s: err %v, want a ConfigError for %s", path, err, KeyKeystoreLocation)
			}
		}
	})
}
