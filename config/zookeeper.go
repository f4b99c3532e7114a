package config

// ZooKeeper security keys: zookeeper.set.acl, Sluice's digest identity
// (zookeeper.auth.digest, zookeeper.auth.digest.file) and Kafka's
// zookeeper.ssl.* client keys, checked together and turned into what the
// cluster package's ZkSecurity needs.

import (
	"cmp"
	"crypto/tls"
	"errors"
	"os"
	"strings"

	"github.com/sluice/sluice/auth/tlsconf"
)

// pemTypeKey is a keystore or truststore type: PEM (any case) or unset;
// JKS and PKCS12 are refused, as Go reads neither.
func pemTypeKey(f func(*Config) *string) codec {
	return codec{
		set: func(s *setter, key, v string) error {
			v = strings.TrimSpace(v)
			if v != "" && !strings.EqualFold(v, "PEM") {
				return keyError(key, "%q is not supported: only PEM stores can be read (convert a JKS or PKCS12 store with keytool and openssl)", v)
			}
			*f(s.c) = strings.ToUpper(v)
			return nil
		},
		get: func(c *Config) string { return *f(c) },
	}
}

// zkProtocol is the version range of zookeeper.ssl.protocol, a Java
// SSLContext protocol: TLSv1.2, TLSv1.3, or TLS for both.
func zkProtocol(v string) (minVersion, maxVersion uint16, err error) {
	switch v = strings.TrimSpace(v); v {
	case "TLS":
		return tls.VersionTLS12, tls.VersionTLS13, nil
	case "":
		return 0, 0, errors.New("empty")
	}
	return tlsconf.ParseProtocols(v)
}

// onlyFalseKey is a boolean key whose feature Sluice lacks: false is
// accepted, true refused rather than silently ignored.
func onlyFalseKey() codec {
	return codec{
		set: func(s *setter, key, v string) error {
			on, err := parseBool(key, v)
			if err == nil && on {
				return keyError(key, "true is not supported")
			}
			return err
		},
	}
}

// validateZooKeeper checks the ZooKeeper security keys together, as Kafka
// refuses zookeeper.set.acl=true without a way to authenticate.
func (c *Config) validateZooKeeper() error {
	if c.ZooKeeperAuthDigest != "" && c.ZooKeeperAuthDigestFile != "" {
		return keyError("zookeeper.auth.digest", "set either it or zookeeper.auth.digest.file, not both")
	}
	if c.ZooKeeperAuthDigest != "" {
		if err := checkDigest(c.ZooKeeperAuthDigest); err != nil {
			return keyError("zookeeper.auth.digest", "%v", err)
		}
	}
	clientCert := c.ZooKeeperSSLClientEnable && c.ZooKeeperSSLKeystoreLocation != ""
	if c.ZooKeeperSetACL && c.ZooKeeperAuthDigest == "" && c.ZooKeeperAuthDigestFile == "" && !clientCert {
		return keyError("zookeeper.set.acl", "true, but the broker has no ZooKeeper identity to own the znodes: set zookeeper.auth.digest (or zookeeper.auth.digest.file), or zookeeper.ssl.client.enable with zookeeper.ssl.keystore.location")
	}
	return nil
}

// checkDigest checks a digest identity: "user:password", user not empty.
func checkDigest(d string) error {
	user, pw, ok := strings.Cut(d, ":")
	switch {
	case !ok:
		return errors.New("want user:password")
	case user == "":
		return errors.New("empty user in user:password")
	case pw == "":
		return errors.New("empty password in user:password")
	}
	return nil
}

// ZooKeeperDigest returns the "user:password" the broker authenticates to
// ZooKeeper with (zookeeper.auth.digest, or the first line of
// zookeeper.auth.digest.file, read now), or "" for none.
func (c *Config) ZooKeeperDigest() (string, error) {
	if c.ZooKeeperAuthDigestFile == "" {
		return c.ZooKeeperAuthDigest, nil
	}
	b, err := os.ReadFile(c.ZooKeeperAuthDigestFile)
	if err != nil {
		return "", keyError("zookeeper.auth.digest.file", "%v", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	line = strings.TrimSpace(line)
	if err := checkDigest(line); err != nil {
		return "", keyError("zookeeper.auth.digest.file", "%s: %v", c.ZooKeeperAuthDigestFile, err)
	}
	return line, nil
}

// zkTLSKeys maps the librdkafka-style client keys tlsconf reads to the
// zookeeper.ssl.* keys they come from, so errors name the latter.
var zkTLSKeys = map[string]string{
	tlsconf.KeyCALocation:          "zookeeper.ssl.truststore.location",
	tlsconf.KeyCertificateLocation: "zookeeper.ssl.keystore.location",
	tlsconf.KeyKeyLocation:         "zookeeper.ssl.keystore.location",
	tlsconf.KeyKeyPassword:         "zookeeper.ssl.keystore.password",
}

// ZooKeeperTLS returns the TLS configuration for connections to
// ZooKeeper, reading the PEM files now, or nil when
// zookeeper.ssl.client.enable is false. It verifies ZooKeeper's
// certificate against the truststore (the system's CAs when unset) and,
// with zookeeper.ssl.endpoint.identification.algorithm=HTTPS, its host
// name; it presents the keystore's certificate when one is set. Errors
// name the zookeeper.ssl.* key at fault.
func (c *Config) ZooKeeperTLS() (*tls.Config, error) {
	if !c.ZooKeeperSSLClientEnable {
		return nil, nil
	}
	props := map[string]string{
		tlsconf.KeyCALocation:             c.ZooKeeperSSLTruststoreLocation,
		tlsconf.KeyCertificateLocation:    c.ZooKeeperSSLKeystoreLocation,
		tlsconf.KeyKeyLocation:            c.ZooKeeperSSLKeystoreLocation,
		tlsconf.KeyKeyPassword:            c.ZooKeeperSSLKeystorePassword,
		tlsconf.KeyEndpointIdentification: "none",
	}
	if c.ZooKeeperSSLEndpointIdentification == "HTTPS" {
		props[tlsconf.KeyEndpointIdentification] = "https"
	}
	rename := func(err error) error {
		var ce *tlsconf.ConfigError
		if errors.As(err, &ce) {
			if k, ok := zkTLSKeys[ce.Key]; ok {
				return keyError(k, "%v", ce.Err)
			}
		}
		return err
	}
	settings, err := tlsconf.ClientFromProperties(func(k string) (string, bool) {
		v, ok := props[k]
		return v, ok && v != ""
	})
	if err != nil {
		return nil, rename(err)
	}
	cfg, err := settings.Config()
	if err != nil {
		return nil, rename(err)
	}
	// As Kafka: without enabled.protocols, zookeeper.ssl.protocol alone.
	if c.ZooKeeperSSLEnabledProtocols != "" {
		cfg.MinVersion, cfg.MaxVersion, err = tlsconf.ParseProtocols(c.ZooKeeperSSLEnabledProtocols)
	} else {
		cfg.MinVersion, cfg.MaxVersion, err = zkProtocol(cmp.Or(c.ZooKeeperSSLProtocol, "TLSv1.2"))
	}
	if err != nil {
		return nil, keyError("zookeeper.ssl.enabled.protocols", "%v", err)
	}
	suites, tls13, err := tlsconf.ParseCipherSuites(c.ZooKeeperSSLCipherSuites)
	if err != nil {
		return nil, keyError("zookeeper.ssl.cipher.suites", "%v", err)
	}
	if suites != nil {
		cfg.CipherSuites = suites
		if !tls13 {
			// Java then enables no TLS 1.3 suite: no TLS 1.3.
			cfg.MaxVersion = min(cfg.MaxVersion, tls.VersionTLS12)
		}
		if len(suites) == 0 {
			cfg.MinVersion = max(cfg.MinVersion, tls.VersionTLS13)
		}
		if cfg.MinVersion > cfg.MaxVersion {
			return nil, keyError("zookeeper.ssl.cipher.suites", "leaves no TLS version of those enabled")
		}
	}
	return cfg, nil
}
