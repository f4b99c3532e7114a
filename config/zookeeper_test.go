package config

import (
	"crypto/tls"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestZooKeeperSecurityKeys: the zookeeper.* security keys parse as
// Kafka's (and Sluice's digest identity), bad values and combinations are
// refused naming the key, and the digest is never described.
func TestZooKeeperSecurityKeys(t *testing.T) {
	c, err := Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.ZooKeeperSetACL || c.ZooKeeperSSLClientEnable || c.ZooKeeperSSLEndpointIdentification != "HTTPS" {
		t.Errorf("defaults: set.acl %v ssl %v endpoint %q, want Kafka's false, false, HTTPS", c.ZooKeeperSetACL, c.ZooKeeperSSLClientEnable, c.ZooKeeperSSLEndpointIdentification)
	}
	c, err = Load("", []string{"zookeeper.set.acl=true", "zookeeper.auth.digest=sluice:pw:with:colons",
		"zookeeper.ssl.client.enable=true", "zookeeper.ssl.keystore.type=pem", "zookeeper.ssl.truststore.type=PEM",
		"zookeeper.ssl.endpoint.identification.algorithm=", "zookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty",
		"zookeeper.ssl.crl.enable=false", "zookeeper.ssl.ocsp.enable=false", "zookeeper.max.in.flight.requests=10"})
	if err != nil {
		t.Fatal(err)
	}
	if !c.ZooKeeperSetACL || c.ZooKeeperAuthDigest != "sluice:pw:with:colons" || c.ZooKeeperSSLKeystoreType != "PEM" || c.ZooKeeperSSLEndpointIdentification != "" {
		t.Errorf("parsed %+v", c)
	}
	k, _ := Lookup("zookeeper.auth.digest")
	if v, _ := c.Describe(k); v != nil || !k.Sensitive {
		t.Errorf("zookeeper.auth.digest described as %v (sensitive %v), want hidden", v, k.Sensitive)
	}

	for _, tc := range []struct {
		name string
		sets []string
		key  string // the key the error must name
	}{
		{"set.acl without identity", []string{"zookeeper.set.acl=true"}, "zookeeper.set.acl"},
		{"set.acl with a truststore only", []string{"zookeeper.set.acl=true", "zookeeper.ssl.client.enable=true", "zookeeper.ssl.truststore.location=/ca.pem"}, "zookeeper.set.acl"},
		{"JKS keystore", []string{"zookeeper.ssl.keystore.type=JKS"}, "zookeeper.ssl.keystore.type"},
		{"PKCS12 truststore", []string{"zookeeper.ssl.truststore.type=PKCS12"}, "zookeeper.ssl.truststore.type"},
		{"digest without colon", []string{"zookeeper.auth.digest=sluice"}, "zookeeper.auth.digest"},
		{"digest without user", []string{"zookeeper.auth.digest=:pw"}, "zookeeper.auth.digest"},
		{"digest and file", []string{"zookeeper.auth.digest=a:b", "zookeeper.auth.digest.file=/f"}, "zookeeper.auth.digest"},
		{"unknown endpoint algorithm", []string{"zookeeper.ssl.endpoint.identification.algorithm=none"}, "zookeeper.ssl.endpoint.identification.algorithm"},
		{"TLSv1.1", []string{"zookeeper.ssl.enabled.protocols=TLSv1.1"}, "zookeeper.ssl.enabled.protocols"},
		{"set.acl not boolean", []string{"zookeeper.set.acl=yes"}, "zookeeper.set.acl"},
		{"CRL checks", []string{"zookeeper.ssl.crl.enable=true"}, "zookeeper.ssl.crl.enable"},
		{"OCSP checks", []string{"zookeeper.ssl.ocsp.enable=true"}, "zookeeper.ssl.ocsp.enable"},
		{"SSLv3", []string{"zookeeper.ssl.protocol=SSLv3"}, "zookeeper.ssl.protocol"},
		{"unknown suite", []string{"zookeeper.ssl.cipher.suites=TLS_NOPE"}, "zookeeper.ssl.cipher.suites"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load("", tc.sets)
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.key+":") {
				t.Fatalf("err %v, want ErrConfig naming %s", err, tc.key)
			}
		})
	}
}

// TestZooKeeperDigestFile: the digest file's first line is the identity;
// a bad one is refused naming the key and the file.
func TestZooKeeperDigestFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	os.WriteFile(good, []byte("  sluice:s3cret \nignored\n"), 0o600)
	bad := filepath.Join(dir, "bad")
	os.WriteFile(bad, []byte("no-colon\n"), 0o600)
	c, err := Load("", []string{"zookeeper.auth.digest.file=" + good, "zookeeper.set.acl=true"})
	if err != nil {
		t.Fatal(err)
	}
	if d, err := c.ZooKeeperDigest(); err != nil || d != "sluice:s3cret" {
		t.Errorf("digest %q %v", d, err)
	}
	for _, f := range []string{bad, filepath.Join(dir, "missing")} {
		c.ZooKeeperAuthDigestFile = f
		if _, err := c.ZooKeeperDigest(); err == nil || !strings.Contains(err.Error(), "zookeeper.auth.digest.file") {
			t.Errorf("%s: err %v, want one naming zookeeper.auth.digest.file", f, err)
		}
	}
}

// TestZooKeeperTLSErrors: a keystore or truststore that cannot be read is
// reported under its zookeeper.ssl.* key, not the client keys tlsconf
// reads; without zookeeper.ssl.client.enable there is no TLS.
func TestZooKeeperTLSErrors(t *testing.T) {
	garbage := filepath.Join(t.TempDir(), "garbage.pem")
	os.WriteFile(garbage, []byte("not PEM\n"), 0o600)
	c := Default()
	if cfg, err := c.ZooKeeperTLS(); cfg != nil || err != nil {
		t.Fatalf("TLS off: %v %v", cfg, err)
	}
	c.ZooKeeperSSLClientEnable = true
	c.ZooKeeperSSLKeystoreLocation = garbage
	if _, err := c.ZooKeeperTLS(); err == nil || !strings.Contains(err.Error(), "zookeeper.ssl.keystore.location") {
		t.Errorf("garbage keystore: %v", err)
	}
	c.ZooKeeperSSLKeystoreLocation = ""
	c.ZooKeeperSSLTruststoreLocation = garbage
	if _, err := c.ZooKeeperTLS(); err == nil || !strings.Contains(err.Error(), "zookeeper.ssl.truststore.location") {
		t.Errorf("garbage truststore: %v", err)
	}
}

// TestZooKeeperTLSVersions: as Kafka, zookeeper.ssl.protocol (default
// TLSv1.2) alone is offered unless zookeeper.ssl.enabled.protocols is set.
func TestZooKeeperTLSVersions(t *testing.T) {
	for _, tc := range []struct {
		sets     []string
		min, max uint16
	}{
		{nil, tls.VersionTLS12, tls.VersionTLS12},
		{[]string{"zookeeper.ssl.protocol=TLS"}, tls.VersionTLS12, tls.VersionTLS13},
		{[]string{"zookeeper.ssl.protocol=TLSv1.3"}, tls.VersionTLS13, tls.VersionTLS13},
		{[]string{"zookeeper.ssl.enabled.protocols=TLSv1.2,TLSv1.3"}, tls.VersionTLS12, tls.VersionTLS13},
		{[]string{"zookeeper.ssl.protocol=TLS", "zookeeper.ssl.cipher.suites=TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"}, tls.VersionTLS12, tls.VersionTLS12},
	} {
		c, err := Load("", append([]string{"zookeeper.ssl.client.enable=true"}, tc.sets...))
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := c.ZooKeeperTLS()
		if err != nil {
			t.Fatalf("%v: %v", tc.sets, err)
		}
		if cfg.MinVersion != tc.min || cfg.MaxVersion != tc.max {
			t.Errorf("%v: versions %#x-%#x, want %#x-%#x", tc.sets, cfg.MinVersion, cfg.MaxVersion, tc.min, tc.max)
		}
	}
}
