package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultReloadInterval is how often, at most, a Server looks at its
// keystore and truststore files for changes.
const DefaultReloadInterval = 10 * time.Second

// ServerOptions tune a Server beyond Kafka's settings.
type ServerOptions struct {
	// ReloadInterval is how often, at most, a handshake checks whether the
	// keystore and truststore files changed (their identity, size or mtime).
	// 0 means DefaultReloadInterval; negative disables reloading.
	ReloadInterval time.Duration
	Logger         *slog.Logger // nil means slog.Default()
}

// Server is the TLS side of one listener: the tls.Config to accept
// connections with, and the principal of each connection. Its keystore and
// truststore files are reloaded when they change: a handshake that starts
// at least ReloadInterval after the last check stats the files and, if one
// changed, loads both again; the new certificates serve that handshake and
// the later ones. A reload that fails (a half-written file, a key that does
// not match) is logged and the previous certificates stay in use.
// Connections already established are not affected. A Server is safe for
// concurrent use and needs no Close: it runs no goroutine.
type Server struct {
	settings Settings
	opts     ServerOptions
	log      *slog.Logger
	base     *tls.Config // returned by Config; its GetConfigForClient serves cur

	cur atomic.Pointer[serverState]

	// mu serializes checks; a handshake that finds it held does not wait
	// and uses the current state.
	mu          sync.Mutex
	nextCheck   atomic.Int64 // unix nanoseconds
	failedStamp [2]fileStamp // REQUIRES: mu held; stamps of the last failed reload
}

// serverState is one loaded generation of certificates; immutable.
type serverState struct {
	config *tls.Config
	stamps [2]fileStamp // keystore, truststore; zero for inline PEM
}

// fileStamp identifies one version of a file: a rename over it changes the
// identity, a rewrite in place the size or the mtime.
type fileStamp struct {
	info fs.FileInfo
}

func (a fileStamp) same(b fileStamp) bool {
	if a.info == nil || b.info == nil {
		return a.info == nil && b.info == nil
	}
	return os.SameFile(a.info, b.info) && a.info.Size() == b.info.Size() && a.info.ModTime().Equal(b.info.ModTime())
}

func stat(path string) fileStamp {
	if path == "" {
		return fileStamp{}
	}
	fi, err := os.Stat(path) // follows symlinks: a Kubernetes secret swap is seen
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{fi}
}

// NewServer loads the keystore and truststore of s. Errors are
// *ConfigErrors naming the setting at fault.
func NewServer(s Settings, opts ServerOptions) (*Server, error) {
	if opts.ReloadInterval == 0 {
		opts.ReloadInterval = DefaultReloadInterval
	}
	if s.PrincipalMapper == nil {
		s.PrincipalMapper = &PrincipalMapper{rules: []rule{{isDefault: true}}}
	}
	if s.MinVersion == 0 {
		s.MinVersion = tls.VersionTLS12
	}
	srv := &Server{settings: s, opts: opts, log: opts.Logger}
	if srv.log == nil {
		srv.log = slog.Default()
	}
	st, err := srv.load()
	if err != nil {
		return nil, err
	}
	srv.cur.Store(st)
	srv.nextCheck.Store(time.Now().Add(opts.ReloadInterval).UnixNano())
	srv.base = &tls.Config{
		MinVersion:         s.MinVersion,
		MaxVersion:         s.MaxVersion,
		GetConfigForClient: srv.configForClient,
	}
	return srv, nil
}

// Config returns the tls.Config for the listener (tls.NewListener). Its
// GetConfigForClient hands each handshake the current certificates; do not
// modify it.
func (s *Server) Config() *tls.Config { return s.base }

// Certificate returns the leaf certificate currently served.
func (s *Server) Certificate() *x509.Certificate { return s.cur.Load().config.Certificates[0].Leaf }

func (s *Server) configForClient(*tls.ClientHelloInfo) (*tls.Config, error) {
	if s.opts.ReloadInterval > 0 && time.Now().UnixNano() >= s.nextCheck.Load() && s.mu.TryLock() {
		s.maybeReloadLocked()
		s.mu.Unlock()
	}
	return s.cur.Load().config, nil
}

// Reload checks the files now, as a handshake would after ReloadInterval,
// and reports whether new certificates were loaded. A failed reload
// returns its error and keeps the previous certificates.
func (s *Server) Reload() (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maybeReloadLocked()
}

// REQUIRES: s.mu held.
func (s *Server) maybeReloadLocked() (bool, error) {
	s.nextCheck.Store(time.Now().Add(s.opts.ReloadInterval).UnixNano())
	old := s.cur.Load()
	now := [2]fileStamp{stat(s.settings.KeystoreLocation), stat(s.settings.TruststoreLocation)}
	if now[0].same(old.stamps[0]) && now[1].same(old.stamps[1]) {
		return false, nil
	}
	if now[0].same(s.failedStamp[0]) && now[1].same(s.failedStamp[1]) {
		return false, errors.New("tlsconf: the files are unchanged since the last failed reload")
	}
	st, err := s.load()
	if err != nil {
		s.failedStamp = now
		s.log.Error("tls: reloading certificates failed; keeping the previous ones",
			"keystore", s.settings.KeystoreLocation, "truststore", s.settings.TruststoreLocation, "err", err)
		return false, err
	}
	s.failedStamp = [2]fileStamp{}
	s.cur.Store(st)
	s.log.Info("tls: reloaded certificates", "keystore", s.settings.KeystoreLocation,
		"subject", st.config.Certificates[0].Leaf.Subject.String(),
		"not_after", st.config.Certificates[0].Leaf.NotAfter)
	return true, nil
}

// load reads the stores. The stamps are taken before reading, so a file
// changed while being read is read again at the next check.
func (s *Server) load() (*serverState, error) {
	set := s.settings
	st := &serverState{stamps: [2]fileStamp{stat(set.KeystoreLocation), stat(set.TruststoreLocation)}}
	cert, err := set.keystore()
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientAuth:   set.ClientAuth,
		MinVersion:   set.MinVersion,
		MaxVersion:   set.MaxVersion,
		CipherSuites: set.CipherSuites,
	}
	if cfg.ClientCAs, err = set.truststore(); err != nil {
		return nil, err
	}
	if cfg.ClientCAs == nil && set.ClientAuth != tls.NoClientCert {
		return nil, configErr(KeyTruststoreLocation, "missing: ssl.client.auth asks for client certificates")
	}
	st.config = cfg
	return st, nil
}

// keystore reads the keystore, from its file or inline. Errors are
// *ConfigErrors.
func (set Settings) keystore() (tls.Certificate, error) {
	if set.KeystoreLocation != "" {
		data, err := readPEMFile(set.KeystoreLocation, KeyKeystoreLocation)
		if err != nil {
			return tls.Certificate{}, err
		}
		return parseKeystore(data, data, set.KeyPassword, KeyKeystoreLocation, KeyKeystoreLocation)
	}
	return parseKeystore([]byte(set.KeystoreKey), []byte(set.KeystoreCertificateChain), set.KeyPassword, KeyKeystoreKey, KeyKeystoreCertificateChain)
}

// truststore reads the truststore, from its file or inline; nil when
// neither is set. Errors are *ConfigErrors.
func (set Settings) truststore() (*x509.CertPool, error) {
	switch {
	case set.TruststoreLocation != "":
		data, err := readPEMFile(set.TruststoreLocation, KeyTruststoreLocation)
		if err != nil {
			return nil, err
		}
		return parseTruststore(data, KeyTruststoreLocation)
	case set.TruststoreCertificates != "":
		return parseTruststore([]byte(set.TruststoreCertificates), KeyTruststoreCertificates)
	}
	return nil, nil
}

// AnonymousPrincipal is the principal of a connection without a client
// certificate, as Kafka names it.
const AnonymousPrincipal = "User:ANONYMOUS"

// Principal returns Kafka's principal for a TLS connection:
// "User:" + the client certificate's subject DN (formatted by FormatDN)
// mapped through ssl.principal.mapping.rules, or AnonymousPrincipal when
// the client sent no certificate. An error (wrapping ErrNoMatchingRule when
// no rule applies) means the connection must be refused, as Kafka does.
func (s *Server) Principal(state tls.ConnectionState) (string, error) {
	if len(state.PeerCertificates) == 0 {
		return AnonymousPrincipal, nil
	}
	dn, err := FormatDN(state.PeerCertificates[0].RawSubject)
	if err != nil {
		return "", fmt.Errorf("tlsconf: client certificate subject: %w", err)
	}
	name, err := s.settings.PrincipalMapper.Name(dn)
	if err != nil {
		return "", err
	}
	return "User:" + name, nil
}

// Reconfigure makes the Server serve the stores of set from the next
// handshake on (a dynamic broker config changed the listener's keystore or
// truststore location, as Kafka's SslFactory.reconfigure). Only the stores
// change: set's other settings must be the Server's (they are not dynamic).
// As Kafka requires, the new keystore's certificate must name the same
// subject and subject alternative names as the current one. With
// validateOnly the stores are read and checked but nothing changes. On
// error the current certificates stay; errors are *ConfigErrors or name
// the mismatch.
func (s *Server) Reconfigure(set Settings, validateOnly bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := s.settings
	next.KeystoreLocation, next.KeystoreKey, next.KeystoreCertificateChain = set.KeystoreLocation, set.KeystoreKey, set.KeystoreCertificateChain
	next.KeyPassword = set.KeyPassword
	next.TruststoreLocation, next.TruststoreCertificates = set.TruststoreLocation, set.TruststoreCertificates
	probe := &Server{settings: next, opts: s.opts, log: s.log}
	st, err := probe.load()
	if err != nil {
		return err
	}
	if err := sameIdentity(s.cur.Load().config.Certificates[0].Leaf, st.config.Certificates[0].Leaf); err != nil {
		return err
	}
	if validateOnly {
		return nil
	}
	s.settings = next
	s.failedStamp = [2]fileStamp{}
	s.cur.Store(st)
	s.log.Info("tls: reconfigured certificates", "keystore", next.KeystoreLocation, "truststore", next.TruststoreLocation,
		"subject", st.config.Certificates[0].Leaf.Subject.String(), "not_after", st.config.Certificates[0].Leaf.NotAfter)
	return nil
}

// Settings returns the settings the Server serves now.
func (s *Server) Settings() Settings {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.settings
}

// sameIdentity refuses a new leaf certificate whose subject or subject
// alternative names differ from the old one's, as Kafka's
// SslFactory.CertificateEntries.ensureCompatible does.
func sameIdentity(old, next *x509.Certificate) error {
	if old == nil || next == nil {
		return nil
	}
	sameStrings := func(a, b []string) bool {
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if a[i] != b[i] {
				return false
			}
		}
		return true
	}
	ips := func(c *x509.Certificate) []string {
		out := make([]string, len(c.IPAddresses))
		for i, ip := range c.IPAddresses {
			out[i] = ip.String()
		}
		return out
	}
	if old.Subject.String() != next.Subject.String() || !sameStrings(old.DNSNames, next.DNSNames) || !sameStrings(ips(old), ips(next)) {
		return fmt.Errorf("tlsconf: Keystore DistinguishedName or SubjectAltNames do not match: existing %s %v %v, new %s %v %v",
			old.Subject, old.DNSNames, ips(old), next.Subject, next.DNSNames, ips(next))
	}
	return nil
}
