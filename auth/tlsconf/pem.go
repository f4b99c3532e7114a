package tlsconf

// Reading PEM keystores and truststores. Kafka's PemStore
// (DefaultSslEngineFactory.java) takes every "... PRIVATE KEY" block and
// every CERTIFICATE block from the text, ignoring anything around them,
// and wants exactly one key and at least one certificate. We do the same,
// and also accept the PKCS#1 ("RSA PRIVATE KEY") and SEC 1 ("EC PRIVATE
// KEY") keys that openssl writes, which Kafka cannot read.

import (
	"bytes"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// parseKeystore returns the certificate (key and chain, leaf first) in
// PEM text keyPEM and chainPEM (the same text for a keystore file). keyKey
// and chainKey name the settings the texts came from, for errors.
func parseKeystore(keyPEM, chainPEM []byte, password, keyKey, chainKey string) (tls.Certificate, error) {
	var keys []*pem.Block
	for _, b := range pemBlocks(keyPEM) {
		if strings.HasSuffix(b.Type, "PRIVATE KEY") {
			keys = append(keys, b)
		}
	}
	var chain [][]byte
	for _, b := range pemBlocks(chainPEM) {
		if b.Type == "CERTIFICATE" {
			chain = append(chain, b.Bytes)
		}
	}
	switch {
	case len(keys) == 0:
		return tls.Certificate{}, configErr(keyKey, "no PRIVATE KEY block found")
	case len(keys) > 1:
		return tls.Certificate{}, configErr(keyKey, "expected one private key, found %d", len(keys))
	case len(chain) == 0:
		return tls.Certificate{}, configErr(chainKey, "no CERTIFICATE block found")
	}
	key, err := parsePrivateKey(keys[0], password)
	if err != nil {
		var pe keyPasswordError
		if errors.As(err, &pe) {
			return tls.Certificate{}, &ConfigError{Key: KeyKeyPassword, Err: err}
		}
		return tls.Certificate{}, &ConfigError{Key: keyKey, Err: err}
	}
	leaf, err := x509.ParseCertificate(chain[0])
	if err != nil {
		return tls.Certificate{}, configErr(chainKey, "first certificate: %w", err)
	}
	for i, der := range chain[1:] {
		if _, err := x509.ParseCertificate(der); err != nil {
			return tls.Certificate{}, configErr(chainKey, "certificate %d: %w", i+2, err)
		}
	}
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(leaf.PublicKey) {
		return tls.Certificate{}, configErr(keyKey, "the private key does not belong to the first certificate of the chain (subject %s)", leaf.Subject)
	}
	return tls.Certificate{Certificate: chain, PrivateKey: key, Leaf: leaf}, nil
}

// keyPasswordError marks an error that is about ssl.key.password.
type keyPasswordError struct{ error }

func (e keyPasswordError) Unwrap() error { return e.error }

func keyPasswordErr(format string, args ...any) error {
	return keyPasswordError{fmt.Errorf(format, args...)}
}

func parsePrivateKey(b *pem.Block, password string) (crypto.Signer, error) {
	if _, ok := b.Headers["DEK-Info"]; ok {
		return nil, errors.New("legacy OpenSSL-encrypted PEM key (Proc-Type: 4,ENCRYPTED) is not supported; convert it with `openssl pkcs8 -topk8 -v2 aes-256-cbc`")
	}
	der := b.Bytes
	if b.Type == "ENCRYPTED PRIVATE KEY" {
		if password == "" {
			return nil, keyPasswordErr("the private key is encrypted and %s is not set", KeyKeyPassword)
		}
		var err error
		if der, err = decryptPKCS8(der, []byte(password)); err != nil {
			return nil, err
		}
	} else if password != "" {
		return nil, keyPasswordErr("%s is set but the private key is not encrypted", KeyKeyPassword)
	}
	var k any
	var err error
	switch b.Type {
	case "RSA PRIVATE KEY":
		k, err = x509.ParsePKCS1PrivateKey(der)
	case "EC PRIVATE KEY":
		k, err = x509.ParseECPrivateKey(der)
	default:
		k, err = x509.ParsePKCS8PrivateKey(der)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Type, err)
	}
	s, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%s: unsupported key type %T", b.Type, k)
	}
	return s, nil
}

// parseTruststore returns a pool of the certificates in text, which came
// from the setting key.
func parseTruststore(text []byte, key string) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	n := 0
	for _, b := range pemBlocks(text) {
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, configErr(key, "certificate %d: %w", n+1, err)
		}
		pool.AddCert(c)
		n++
	}
	if n == 0 {
		return nil, configErr(key, "no CERTIFICATE block found")
	}
	return pool, nil
}

// pemBlocks returns the PEM blocks in text, skipping text around them.
// When encoding/pem finds none, it falls back to Kafka's laxer reading
// (PemParser: base64 between BEGIN and END lines, whitespace anywhere),
// so that inline PEM values folded onto one line in a properties file,
// which Kafka accepts, work here too.
func pemBlocks(text []byte) []*pem.Block {
	var blocks []*pem.Block
	for rest := text; ; {
		b, r := pem.Decode(rest)
		if b == nil {
			break
		}
		blocks = append(blocks, b)
		rest = r
	}
	if len(blocks) != 0 {
		return blocks
	}
	for _, m := range laxPEM.FindAllSubmatch(text, -1) {
		if string(m[1]) != string(m[3]) {
			continue
		}
		der, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(string(m[2])), ""))
		if err != nil {
			continue
		}
		blocks = append(blocks, &pem.Block{Type: strings.Join(strings.Fields(string(m[1])), " "), Bytes: der})
	}
	return blocks
}

var laxPEM = regexp.MustCompile(`-----BEGIN ([A-Z0-9 ]+)-----\s*([A-Za-z0-9+/=\s]*?)\s*-----END ([A-Z0-9 ]+)-----`)

// readPEMFile reads a store file named by the setting key.
func readPEMFile(path, key string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &ConfigError{Key: key, Err: err}
	}
	if !bytes.Contains(data, []byte("-----BEGIN")) {
		return nil, configErr(key, "%s holds no PEM block", path)
	}
	return data, nil
}
