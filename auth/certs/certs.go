// Package certs creates a certificate authority, broker certificates and
// client certificates for local use and tests, and writes them as the PEM
// files Kafka's and librdkafka's TLS settings read:
//
//	ca.crt                 the CA certificate: ssl.truststore.location (broker,
//	                       type PEM) and ssl.ca.location (librdkafka clients)
//	ca.key                 the CA's private key (PKCS#8), to issue more
//	                       certificates; never give it to a broker or client
//	NAME.keystore.pem      private key (PKCS#8) then certificate chain in one
//	                       file: ssl.keystore.location with ssl.keystore.type=PEM
//	NAME.crt, NAME.key     the same certificate and key in separate files:
//	                       ssl.certificate.location and ssl.key.location
//
// Keys are ECDSA P-256 by default, or RSA 2048. Private keys are written
// unencrypted with mode 0600. This is a tool for development, tests and small
// deployments; it has no revocation, no intermediates and no key protection.
package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// KeyType selects the algorithm of a generated key.
type KeyType string

const (
	ECDSAP256 KeyType = "ecdsa" // ECDSA on P-256: small and fast; the default
	RSA2048   KeyType = "rsa"   // RSA 2048 bits: for peers that want RSA
)

// ParseKeyType accepts "ecdsa" (or "ec", "p256") and "rsa" (or "rsa2048").
func ParseKeyType(s string) (KeyType, error) {
	switch strings.ToLower(s) {
	case "", "ecdsa", "ec", "p256", "p-256":
		return ECDSAP256, nil
	case "rsa", "rsa2048":
		return RSA2048, nil
	}
	return "", fmt.Errorf("certs: unknown key type %q (want ecdsa or rsa)", s)
}

// Options tunes a generated certificate. The zero value is an ECDSA P-256
// key valid from one hour ago (to absorb clock skew) for DefaultValidity.
type Options struct {
	KeyType  KeyType
	Validity time.Duration // 0 means DefaultValidity (DefaultCAValidity for a CA)
}

const (
	DefaultValidity   = 365 * 24 * time.Hour
	DefaultCAValidity = 10 * 365 * 24 * time.Hour
)

// File names inside an output directory.
const (
	CACertFile = "ca.crt"
	CAKeyFile  = "ca.key"
)

// Bundle is a certificate with its private key, in parsed and PEM form.
type Bundle struct {
	Cert    *x509.Certificate
	Key     crypto.Signer
	CertPEM []byte // the certificate alone
	KeyPEM  []byte // the private key, PKCS#8 ("PRIVATE KEY")
}

// KeystorePEM returns the key followed by the certificate: the layout of a
// Kafka PEM keystore file (ssl.keystore.location with ssl.keystore.type=PEM).
func (b *Bundle) KeystorePEM() []byte {
	out := append([]byte(nil), b.KeyPEM...)
	return append(out, b.CertPEM...)
}

// Authority is a self-signed CA that issues certificates.
type Authority struct {
	Bundle
}

// NewCA creates a self-signed CA whose subject is CN=commonName.
func NewCA(commonName string, opts Options) (*Authority, error) {
	key, err := newKey(opts.KeyType)
	if err != nil {
		return nil, err
	}
	validity := opts.Validity
	if validity == 0 {
		validity = DefaultCAValidity
	}
	tmpl, err := template(pkix.Name{CommonName: commonName}, validity)
	if err != nil {
		return nil, err
	}
	tmpl.IsCA = true
	tmpl.BasicConstraintsValid = true
	tmpl.MaxPathLenZero = true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature
	b, err := sign(tmpl, tmpl, key.Public(), key, key)
	if err != nil {
		return nil, err
	}
	return &Authority{*b}, nil
}

// LoadCA reads ca.crt and ca.key from dir, as written by WriteCA.
func LoadCA(dir string) (*Authority, error) {
	certPEM, err := os.ReadFile(filepath.Join(dir, CACertFile))
	if err != nil {
		return nil, fmt.Errorf("certs: load CA: %w", err)
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, CAKeyFile))
	if err != nil {
		return nil, fmt.Errorf("certs: load CA: %w", err)
	}
	cb, _ := pem.Decode(certPEM)
	if cb == nil || cb.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("certs: load CA: %s: no CERTIFICATE block", filepath.Join(dir, CACertFile))
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("certs: load CA: %s: %w", filepath.Join(dir, CACertFile), err)
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil || kb.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("certs: load CA: %s: no PRIVATE KEY block", filepath.Join(dir, CAKeyFile))
	}
	k, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("certs: load CA: %s: %w", filepath.Join(dir, CAKeyFile), err)
	}
	signer, ok := k.(crypto.Signer)
	if !ok || !publicKeysEqual(signer.Public(), cert.PublicKey) {
		return nil, fmt.Errorf("certs: load CA: %s does not hold the key of %s", CAKeyFile, CACertFile)
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("certs: load CA: %s is not a CA certificate", filepath.Join(dir, CACertFile))
	}
	return &Authority{Bundle{Cert: cert, Key: signer, CertPEM: certPEM, KeyPEM: keyPEM}}, nil
}

// WriteCA writes ca.crt (0644) and ca.key (0600) into dir, creating it.
func (a *Authority) WriteCA(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	if err := writeFile(filepath.Join(dir, CACertFile), a.CertPEM, 0o644); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, CAKeyFile), a.KeyPEM, 0o600)
}

// IssueServer issues a certificate for a broker that answers on hosts:
// each is a DNS name or an IP address and goes into the subject alternative
// names (IP addresses as IP SANs, which is what hostname verification of
// an address checks). The subject is CN=hosts[0]. The certificate is also
// valid for client authentication, so a broker can present it to another
// broker over an mTLS inter-broker listener.
func (a *Authority) IssueServer(hosts []string, opts Options) (*Bundle, error) {
	if len(hosts) == 0 {
		return nil, errors.New("certs: a server certificate needs at least one host")
	}
	key, err := newKey(opts.KeyType)
	if err != nil {
		return nil, err
	}
	tmpl, err := template(pkix.Name{CommonName: hosts[0]}, validityOr(opts.Validity))
	if err != nil {
		return nil, err
	}
	for _, h := range hosts {
		h = strings.TrimSpace(h)
		switch ip := net.ParseIP(h); {
		case h == "":
			return nil, errors.New("certs: empty host name")
		case ip != nil:
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		default:
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	if opts.KeyType == RSA2048 {
		tmpl.KeyUsage |= x509.KeyUsageKeyEncipherment
	}
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	return sign(tmpl, a.Cert, key.Public(), a.Key, key)
}

// IssueClient issues a client certificate with the given subject; a broker
// with ssl.client.auth=required maps it to a principal (User:CN=alice,...
// through ssl.principal.mapping.rules). The subject needs a CommonName.
func (a *Authority) IssueClient(subject pkix.Name, opts Options) (*Bundle, error) {
	if subject.CommonName == "" {
		return nil, errors.New("certs: a client certificate needs a common name")
	}
	key, err := newKey(opts.KeyType)
	if err != nil {
		return nil, err
	}
	tmpl, err := template(subject, validityOr(opts.Validity))
	if err != nil {
		return nil, err
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	if opts.KeyType == RSA2048 {
		tmpl.KeyUsage |= x509.KeyUsageKeyEncipherment
	}
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	return sign(tmpl, a.Cert, key.Public(), a.Key, key)
}

// Paths are the files WriteFiles wrote.
type Paths struct {
	Keystore string // key + certificate: ssl.keystore.location
	Cert     string // certificate: ssl.certificate.location
	Key      string // key: ssl.key.location
	CA       string // the issuing CA's certificate: truststore / ssl.ca.location
}

// WriteFiles writes NAME.keystore.pem, NAME.crt and NAME.key into dir
// (creating it) and a copy of the issuing CA's certificate as ca.crt, so
// that dir alone configures a broker or a client. Keys get mode 0600.
func (b *Bundle) WriteFiles(dir, name string, ca *Authority) (Paths, error) {
	if name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
		return Paths{}, fmt.Errorf("certs: %q is not a usable file name", name)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Paths{}, fmt.Errorf("certs: %w", err)
	}
	p := Paths{
		Keystore: filepath.Join(dir, name+".keystore.pem"),
		Cert:     filepath.Join(dir, name+".crt"),
		Key:      filepath.Join(dir, name+".key"),
		CA:       filepath.Join(dir, CACertFile),
	}
	for _, f := range []struct {
		path string
		data []byte
		mode os.FileMode
	}{
		{p.Keystore, b.KeystorePEM(), 0o600},
		{p.Cert, b.CertPEM, 0o644},
		{p.Key, b.KeyPEM, 0o600},
		{p.CA, ca.CertPEM, 0o644},
	} {
		if err := writeFile(f.path, f.data, f.mode); err != nil {
			return Paths{}, err
		}
	}
	return p, nil
}

func validityOr(d time.Duration) time.Duration {
	if d == 0 {
		return DefaultValidity
	}
	return d
}

func newKey(t KeyType) (crypto.Signer, error) {
	switch t {
	case "", ECDSAP256:
		return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case RSA2048:
		return rsa.GenerateKey(rand.Reader, 2048)
	}
	return nil, fmt.Errorf("certs: unknown key type %q", t)
}

func template(subject pkix.Name, validity time.Duration) (*x509.Certificate, error) {
	// 128-bit random serial: unique without any state (CA/B forum asks for
	// at least 64 bits of entropy).
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("certs: serial: %w", err)
	}
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      subject,
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(validity),
	}, nil
}

// sign creates the certificate tmpl signed by parent's key and returns it
// with key, the new certificate's own private key.
func sign(tmpl, parent *x509.Certificate, pub crypto.PublicKey, parentKey, key crypto.Signer) (*Bundle, error) {
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, parentKey)
	if err != nil {
		return nil, fmt.Errorf("certs: create certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("certs: parse created certificate: %w", err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("certs: marshal key: %w", err)
	}
	return &Bundle{
		Cert:    cert,
		Key:     key,
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}),
	}, nil
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	e, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && e.Equal(b)
}

// writeFile replaces path with data through a temporary file and a rename,
// so that a broker reloading its keystore never reads a half-written file.
func writeFile(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename this fails harmlessly
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return fmt.Errorf("certs: %w", err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("certs: write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("certs: write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	return nil
}
