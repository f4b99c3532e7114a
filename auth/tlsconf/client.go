package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// librdkafka's names of the client TLS properties ClientFromProperties
// reads (CONFIGURATION.md of librdkafka); the same file `kcat -F` reads.
const (
	KeyCALocation                  = "ssl.ca.location"
	KeyCAPEM                       = "ssl.ca.pem"
	KeyCertificateLocation         = "ssl.certificate.location"
	KeyCertificatePEM              = "ssl.certificate.pem"
	KeyKeyLocation                 = "ssl.key.location"
	KeyKeyPEM                      = "ssl.key.pem"
	KeyEndpointIdentification      = "ssl.endpoint.identification.algorithm"
	KeyEnableCertificateValidation = "enable.ssl.certificate.verification"
)

// ClientSettings are the TLS settings of a client (an inter-broker
// connection or a CLI command). Build them with ClientFromProperties.
type ClientSettings struct {
	// CA: a PEM file or a directory of PEM files (ssl.ca.location), or PEM
	// text (ssl.ca.pem). Neither, or the location "probe", means the
	// system's roots.
	CALocation string
	CAPEM      string

	// Client certificate for mTLS, optional: files or PEM text. The
	// certificate may be followed by its chain.
	CertificateLocation, KeyLocation string
	CertificatePEM, KeyPEM           string
	KeyPassword                      string // ssl.key.password, for an ENCRYPTED PRIVATE KEY

	// VerifyHostname checks that the broker's certificate names the host
	// dialed (ssl.endpoint.identification.algorithm=https, librdkafka's
	// default); none turns it off but still verifies the chain.
	VerifyHostname bool

	// SkipVerify accepts any server certificate
	// (enable.ssl.certificate.verification=false). For tests only.
	SkipVerify bool
}

// ClientFromProperties reads librdkafka-style TLS properties through get
// (value, whether set). It checks values but reads no file.
func ClientFromProperties(get func(key string) (string, bool)) (ClientSettings, error) {
	val := func(key string) string {
		v, _ := get(key)
		return strings.TrimSpace(v)
	}
	c := ClientSettings{
		CALocation:          val(KeyCALocation),
		CAPEM:               val(KeyCAPEM),
		CertificateLocation: val(KeyCertificateLocation),
		CertificatePEM:      val(KeyCertificatePEM),
		KeyLocation:         val(KeyKeyLocation),
		KeyPEM:              val(KeyKeyPEM),
		VerifyHostname:      true,
	}
	c.KeyPassword, _ = get(KeyKeyPassword)
	switch strings.ToLower(val(KeyEndpointIdentification)) {
	case "", "https":
	case "none":
		c.VerifyHostname = false
	default:
		return ClientSettings{}, configErr(KeyEndpointIdentification, "%q is not https or none", val(KeyEndpointIdentification))
	}
	switch strings.ToLower(val(KeyEnableCertificateValidation)) {
	case "", "true":
	case "false":
		c.SkipVerify = true
	default:
		return ClientSettings{}, configErr(KeyEnableCertificateValidation, "%q is not true or false", val(KeyEnableCertificateValidation))
	}
	if c.CALocation != "" && c.CAPEM != "" {
		return ClientSettings{}, configErr(KeyCALocation, "set either it or %s, not both", KeyCAPEM)
	}
	if c.CertificateLocation != "" && c.CertificatePEM != "" {
		return ClientSettings{}, configErr(KeyCertificateLocation, "set either it or %s, not both", KeyCertificatePEM)
	}
	if c.KeyLocation != "" && c.KeyPEM != "" {
		return ClientSettings{}, configErr(KeyKeyLocation, "set either it or %s, not both", KeyKeyPEM)
	}
	hasCert := c.CertificateLocation != "" || c.CertificatePEM != ""
	hasKey := c.KeyLocation != "" || c.KeyPEM != ""
	switch {
	case hasCert && !hasKey:
		return ClientSettings{}, configErr(KeyKeyLocation, "missing: %s is set", KeyCertificateLocation)
	case hasKey && !hasCert:
		return ClientSettings{}, configErr(KeyCertificateLocation, "missing: %s is set", KeyKeyLocation)
	}
	return c, nil
}

// Config loads the files and returns a tls.Config for dialing brokers.
// ServerName is left empty: crypto/tls (and franz-go's dialer) take it
// from the address dialed. Errors are *ConfigErrors.
func (c ClientSettings) Config() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	roots, err := c.roots()
	if err != nil {
		return nil, err
	}
	cfg.RootCAs = roots
	if c.CertificateLocation != "" || c.CertificatePEM != "" {
		certPEM, certKey := []byte(c.CertificatePEM), KeyCertificatePEM
		if c.CertificateLocation != "" {
			if certPEM, err = readPEMFile(c.CertificateLocation, KeyCertificateLocation); err != nil {
				return nil, err
			}
			certKey = KeyCertificateLocation
		}
		keyPEM, keyKey := []byte(c.KeyPEM), KeyKeyPEM
		if c.KeyLocation != "" {
			if keyPEM, err = readPEMFile(c.KeyLocation, KeyKeyLocation); err != nil {
				return nil, err
			}
			keyKey = KeyKeyLocation
		}
		cert, err := parseKeystore(keyPEM, certPEM, c.KeyPassword, keyKey, certKey)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	switch {
	case c.SkipVerify:
		cfg.InsecureSkipVerify = true
	case !c.VerifyHostname:
		// Verify the chain ourselves, without the host name.
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("tlsconf: the server sent no certificate")
			}
			inter := x509.NewCertPool()
			for _, ic := range cs.PeerCertificates[1:] {
				inter.AddCert(ic)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
			return err
		}
	}
	return cfg, nil
}

// ClientConfig returns a tls.Config for a broker dialing the other brokers
// on a listener with settings s, as Kafka's inter-broker client uses the
// listener's ssl.* settings: it trusts the truststore (the system's roots
// when none is set), presents the keystore's certificate (for listeners
// with ssl.client.auth), keeps the listener's protocol versions and cipher
// suites, and verifies the host name dialed (ServerName is left empty for
// crypto/tls to take it from the address). It reads the files once.
// Errors are *ConfigErrors.
func (s Settings) ClientConfig() (*tls.Config, error) {
	cert, err := s.keystore()
	if err != nil {
		return nil, err
	}
	roots, err := s.truststore()
	if err != nil {
		return nil, err
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		RootCAs:      roots,
		MinVersion:   s.MinVersion,
		MaxVersion:   s.MaxVersion,
		CipherSuites: s.CipherSuites,
	}, nil
}

// roots returns the CA pool; nil means the system's roots to crypto/tls.
func (c ClientSettings) roots() (*x509.CertPool, error) {
	switch {
	case c.CAPEM != "":
		return parseTruststore([]byte(c.CAPEM), KeyCAPEM)
	case c.CALocation == "" || c.CALocation == "probe":
		if !c.VerifyHostname && !c.SkipVerify {
			// VerifyConnection needs an explicit pool.
			pool, err := x509.SystemCertPool()
			if err != nil {
				return nil, &ConfigError{Key: KeyCALocation, Err: err}
			}
			return pool, nil
		}
		return nil, nil
	}
	fi, err := os.Stat(c.CALocation)
	if err != nil {
		return nil, &ConfigError{Key: KeyCALocation, Err: err}
	}
	if !fi.IsDir() {
		data, err := readPEMFile(c.CALocation, KeyCALocation)
		if err != nil {
			return nil, err
		}
		return parseTruststore(data, KeyCALocation)
	}
	// A directory, as OpenSSL's CApath: every file with PEM certificates.
	entries, err := os.ReadDir(c.CALocation)
	if err != nil {
		return nil, &ConfigError{Key: KeyCALocation, Err: err}
	}
	var all []byte
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(c.CALocation, e.Name()))
		if err != nil {
			return nil, &ConfigError{Key: KeyCALocation, Err: err}
		}
		all = append(append(all, data...), '\n')
	}
	pool, err := parseTruststore(all, KeyCALocation)
	if err != nil {
		return nil, fmt.Errorf("%w (in directory %s)", err, c.CALocation)
	}
	return pool, nil
}
