// Package tlsconf turns Kafka's ssl.* settings of one listener into a
// crypto/tls configuration for the broker (Server), and librdkafka's ssl.*
// client properties into one for a client (Client).
//
// Only PEM keystores and truststores exist here (ssl.keystore.type=PEM,
// ssl.truststore.type=PEM): Go reads no JKS or PKCS#12 stores. A PEM
// keystore holds the private key and the certificate chain, in a file
// (ssl.keystore.location) or inline (ssl.keystore.key and
// ssl.keystore.certificate.chain). A key may be encrypted PKCS#8 ("BEGIN
// ENCRYPTED PRIVATE KEY", PBES2 with PBKDF2 and AES or 3DES, what
// `openssl pkcs8 -topk8` and Java write) with ssl.key.password; legacy
// OpenSSL-encrypted PEM ("Proc-Type: 4,ENCRYPTED") is refused.
//
// Every configuration error is a *ConfigError naming the key at fault.
// A Server reloads its keystore and truststore files when they change.
package tlsconf

import (
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Kafka's names of the settings FromProperties reads.
const (
	KeyKeystoreType             = "ssl.keystore.type"
	KeyKeystoreLocation         = "ssl.keystore.location"
	KeyKeystorePassword         = "ssl.keystore.password" // refused: PEM keystores have none
	KeyKeystoreKey              = "ssl.keystore.key"
	KeyKeystoreCertificateChain = "ssl.keystore.certificate.chain"
	KeyKeyPassword              = "ssl.key.password"
	KeyTruststoreType           = "ssl.truststore.type"
	KeyTruststoreLocation       = "ssl.truststore.location"
	KeyTruststorePassword       = "ssl.truststore.password" // refused, as in Kafka for PEM
	KeyTruststoreCertificates   = "ssl.truststore.certificates"
	KeyClientAuth               = "ssl.client.auth"
	KeyEnabledProtocols         = "ssl.enabled.protocols"
	KeyCipherSuites             = "ssl.cipher.suites"
	KeyPrincipalMappingRules    = "ssl.principal.mapping.rules"
)

// ConfigError is a bad TLS setting: Key is the property at fault (for
// example "ssl.keystore.location"); Err says what is wrong with it.
type ConfigError struct {
	Key string
	Err error
}

func (e *ConfigError) Error() string { return "tlsconf: " + e.Key + ": " + e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

func configErr(key, format string, args ...any) error {
	return &ConfigError{Key: key, Err: fmt.Errorf(format, args...)}
}

// Settings are the TLS settings of one listener, as Kafka names them, after
// the caller resolved listener.name.<listener>.ssl.* overrides. Build them
// with FromProperties, which checks them; a Server loads the files.
type Settings struct {
	// Keystore: either KeystoreLocation, a PEM file holding the private key
	// and the certificate chain (leaf first), or KeystoreKey and
	// KeystoreCertificateChain, the same as inline PEM text.
	KeystoreLocation         string
	KeystoreKey              string
	KeystoreCertificateChain string
	KeyPassword              string // decrypts an ENCRYPTED PRIVATE KEY

	// Truststore: the CAs client certificates must chain to, a PEM file or
	// inline PEM text; needed when ClientAuth asks for certificates.
	TruststoreLocation     string
	TruststoreCertificates string

	ClientAuth tls.ClientAuthType // ssl.client.auth

	// MinVersion and MaxVersion come from ssl.enabled.protocols (default
	// TLSv1.2,TLSv1.3).
	MinVersion, MaxVersion uint16

	// CipherSuites are the TLS 1.2 suites of ssl.cipher.suites; nil leaves
	// Go's defaults. crypto/tls does not let TLS 1.3 suites be chosen, so
	// FromProperties accepts a list that names all three or none of them;
	// naming none removes TLS 1.3, as it does in Java.
	CipherSuites []uint16

	PrincipalMapper *PrincipalMapper // ssl.principal.mapping.rules; nil means DEFAULT
}

// FromProperties reads the ssl.* settings of one listener through get,
// which returns a property's value and whether it is set; the caller makes
// get apply listener.name.<listener>.ssl.* overrides. It checks the values
// but reads no file. A missing keystore is an error: a TLS listener needs
// a certificate.
func FromProperties(get func(key string) (string, bool)) (Settings, error) {
	val := func(key string) string {
		v, _ := get(key)
		return strings.TrimSpace(v)
	}
	var s Settings
	for _, key := range []string{KeyKeystoreType, KeyTruststoreType} {
		if t := val(key); t != "" && !strings.EqualFold(t, "PEM") {
			return Settings{}, configErr(key, "%q is not supported: only PEM stores can be read (convert a JKS or PKCS12 store with keytool and openssl)", t)
		}
	}
	if val(KeyKeystorePassword) != "" {
		return Settings{}, configErr(KeyKeystorePassword, "a PEM keystore has no store password; set only %s for an encrypted key", KeyKeyPassword)
	}
	if val(KeyTruststorePassword) != "" {
		return Settings{}, configErr(KeyTruststorePassword, "a PEM truststore has no password")
	}

	s.KeystoreLocation = val(KeyKeystoreLocation)
	s.KeystoreKey, _ = get(KeyKeystoreKey)
	s.KeystoreCertificateChain, _ = get(KeyKeystoreCertificateChain)
	s.KeyPassword, _ = get(KeyKeyPassword)
	inlineKey := strings.TrimSpace(s.KeystoreKey) != ""
	inlineChain := strings.TrimSpace(s.KeystoreCertificateChain) != ""
	switch {
	case s.KeystoreLocation != "" && (inlineKey || inlineChain):
		return Settings{}, configErr(KeyKeystoreLocation, "set either it or %s and %s, not both", KeyKeystoreKey, KeyKeystoreCertificateChain)
	case inlineKey && !inlineChain:
		return Settings{}, configErr(KeyKeystoreCertificateChain, "missing: %s is set", KeyKeystoreKey)
	case inlineChain && !inlineKey:
		return Settings{}, configErr(KeyKeystoreKey, "missing: %s is set", KeyKeystoreCertificateChain)
	case s.KeystoreLocation == "" && !inlineKey:
		return Settings{}, configErr(KeyKeystoreLocation, "missing: a TLS listener needs a certificate (or set %s and %s)", KeyKeystoreKey, KeyKeystoreCertificateChain)
	}

	s.TruststoreLocation = val(KeyTruststoreLocation)
	s.TruststoreCertificates, _ = get(KeyTruststoreCertificates)
	if s.TruststoreLocation != "" && strings.TrimSpace(s.TruststoreCertificates) != "" {
		return Settings{}, configErr(KeyTruststoreLocation, "set either it or %s, not both", KeyTruststoreCertificates)
	}

	var err error
	if s.ClientAuth, err = ParseClientAuth(val(KeyClientAuth)); err != nil {
		return Settings{}, &ConfigError{Key: KeyClientAuth, Err: err}
	}
	if s.ClientAuth != tls.NoClientCert && s.TruststoreLocation == "" && strings.TrimSpace(s.TruststoreCertificates) == "" {
		return Settings{}, configErr(KeyTruststoreLocation, "missing: ssl.client.auth=%s needs the CAs that sign client certificates (or set %s)", val(KeyClientAuth), KeyTruststoreCertificates)
	}
	if s.MinVersion, s.MaxVersion, err = ParseProtocols(val(KeyEnabledProtocols)); err != nil {
		return Settings{}, &ConfigError{Key: KeyEnabledProtocols, Err: err}
	}
	var tls13 bool
	if s.CipherSuites, tls13, err = ParseCipherSuites(val(KeyCipherSuites)); err != nil {
		return Settings{}, &ConfigError{Key: KeyCipherSuites, Err: err}
	}
	if s.CipherSuites != nil && !tls13 {
		// Java enables no TLS 1.3 suite, so TLS 1.3 cannot be negotiated.
		if s.MinVersion > tls.VersionTLS12 {
			return Settings{}, configErr(KeyCipherSuites, "names no TLS 1.3 suite but ssl.enabled.protocols allows only TLSv1.3")
		}
		s.MaxVersion = tls.VersionTLS12
	}
	if s.CipherSuites != nil && len(s.CipherSuites) == 0 {
		// Only TLS 1.3 suites: TLS 1.2 has nothing to negotiate with.
		if s.MaxVersion < tls.VersionTLS13 {
			return Settings{}, configErr(KeyCipherSuites, "names only TLS 1.3 suites but ssl.enabled.protocols does not allow TLSv1.3")
		}
		s.MinVersion = tls.VersionTLS13
	}
	rules := DefaultPrincipalMappingRules
	if v, ok := get(KeyPrincipalMappingRules); ok && strings.TrimSpace(v) != "" {
		rules = v
	}
	if s.PrincipalMapper, err = ParsePrincipalMappingRules(rules); err != nil {
		return Settings{}, &ConfigError{Key: KeyPrincipalMappingRules, Err: err}
	}
	return s, nil
}

// ParseClientAuth parses ssl.client.auth: none (or empty), requested,
// required, in any case.
func ParseClientAuth(v string) (tls.ClientAuthType, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "none":
		return tls.NoClientCert, nil
	case "requested":
		return tls.VerifyClientCertIfGiven, nil
	case "required":
		return tls.RequireAndVerifyClientCert, nil
	}
	return 0, fmt.Errorf("%q is not one of none, requested, required", v)
}

// ParseProtocols parses ssl.enabled.protocols, a comma-separated list of
// TLSv1.2 and TLSv1.3 (empty means both), into a version range. TLSv1 and
// TLSv1.1 (deprecated by RFC 8996) and SSL versions are refused.
func ParseProtocols(v string) (minVersion, maxVersion uint16, err error) {
	if strings.TrimSpace(v) == "" {
		return tls.VersionTLS12, tls.VersionTLS13, nil
	}
	var versions []uint16
	for _, name := range strings.Split(v, ",") {
		name = strings.TrimSpace(name)
		switch name {
		case "":
			continue
		case "TLSv1.2":
			versions = append(versions, tls.VersionTLS12)
		case "TLSv1.3":
			versions = append(versions, tls.VersionTLS13)
		case "TLSv1", "TLSv1.1", "SSLv3", "SSLv2", "SSLv2Hello":
			return 0, 0, fmt.Errorf("%s is refused: it is insecure (RFC 8996); use TLSv1.2 and TLSv1.3", name)
		default:
			return 0, 0, fmt.Errorf("unknown protocol %q (want TLSv1.2, TLSv1.3)", name)
		}
	}
	if len(versions) == 0 {
		return 0, 0, errors.New("no protocol enabled")
	}
	return slices.Min(versions), slices.Max(versions), nil
}

// tls13Suites are the TLS 1.3 suites crypto/tls always enables together.
var tls13Suites = []string{"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"}

// ParseCipherSuites parses ssl.cipher.suites, a comma-separated list of
// IANA suite names as Java uses them (TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256),
// into the TLS 1.2 suite IDs for tls.Config.CipherSuites. Empty means Go's
// defaults (suites nil). tls13 reports whether the TLS 1.3 suites are named;
// since crypto/tls cannot enable only some of them, naming some but not all
// is an error. Suites crypto/tls knows but calls insecure (RC4, 3DES, CBC
// with SHA-256, RSA key exchange) and unknown names are errors.
// TLS_EMPTY_RENEGOTIATION_INFO_SCSV, which Java lists as a suite, is ignored.
func ParseCipherSuites(v string) (suites []uint16, tls13 bool, err error) {
	if strings.TrimSpace(v) == "" {
		return nil, false, nil
	}
	known := map[string]*tls.CipherSuite{}
	for _, cs := range tls.CipherSuites() {
		known[cs.Name] = cs
	}
	insecure := map[string]bool{}
	for _, cs := range tls.InsecureCipherSuites() {
		insecure[cs.Name] = true
	}
	suites = []uint16{}
	var named13 []string
	for _, name := range strings.Split(v, ",") {
		name = strings.TrimSpace(name)
		cs := known[name]
		switch {
		case name == "" || name == "TLS_EMPTY_RENEGOTIATION_INFO_SCSV":
			continue
		case insecure[name]:
			return nil, false, fmt.Errorf("%s is refused as insecure", name)
		case cs == nil:
			return nil, false, fmt.Errorf("unknown cipher suite %q", name)
		case slices.Contains(cs.SupportedVersions, tls.VersionTLS13):
			if !slices.Contains(named13, name) {
				named13 = append(named13, name)
			}
		case !slices.Contains(suites, cs.ID):
			suites = append(suites, cs.ID)
		}
	}
	if len(named13) != 0 && len(named13) != len(tls13Suites) {
		return nil, false, fmt.Errorf("names TLS 1.3 suites %v: crypto/tls enables all of %v or, when none is named, no TLS 1.3", named13, tls13Suites)
	}
	if len(suites) == 0 && len(named13) == 0 {
		return nil, false, errors.New("names no cipher suite")
	}
	return suites, len(named13) != 0, nil
}
