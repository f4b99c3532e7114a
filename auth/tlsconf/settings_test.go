package tlsconf

import (
	"crypto/tls"
	"errors"
	"slices"
	"testing"
)

// props returns a lookup over m for FromProperties.
func props(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestFromProperties(t *testing.T) {
	base := func(extra ...string) map[string]string {
		m := map[string]string{KeyKeystoreLocation: "/k.pem"}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i]] = extra[i+1]
		}
		return m
	}
	t.Run("defaults", func(t *testing.T) {
		s, err := FromProperties(props(base()))
		if err != nil {
			t.Fatal(err)
		}
		if s.ClientAuth != tls.NoClientCert || s.MinVersion != tls.VersionTLS12 || s.MaxVersion != tls.VersionTLS13 || s.CipherSuites != nil {
			t.Errorf("defaults: %+v", s)
		}
		if s.PrincipalMapper.String() != "[DEFAULT]" {
			t.Errorf("rules %s", s.PrincipalMapper)
		}
	})
	t.Run("values", func(t *testing.T) {
		s, err := FromProperties(props(base(
			KeyKeystoreType, "PEM", KeyTruststoreType, "pem", KeyTruststoreLocation, "/ca.pem",
			KeyClientAuth, "Required", KeyEnabledProtocols, "TLSv1.3",
			KeyPrincipalMappingRules, "RULE:^CN=(.*?),.*$/$1/L,DEFAULT")))
		if err != nil {
			t.Fatal(err)
		}
		if s.ClientAuth != tls.RequireAndVerifyClientCert || s.MinVersion != tls.VersionTLS13 || s.TruststoreLocation != "/ca.pem" {
			t.Errorf("%+v", s)
		}
	})
	t.Run("TLS 1.2 suites only cap the version", func(t *testing.T) {
		s, err := FromProperties(props(base(KeyCipherSuites, "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384")))
		if err != nil {
			t.Fatal(err)
		}
		want := []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384}
		if !slices.Equal(s.CipherSuites, want) || s.MaxVersion != tls.VersionTLS12 {
			t.Errorf("suites %x max %x", s.CipherSuites, s.MaxVersion)
		}
	})
	t.Run("TLS 1.3 suites only raise the version", func(t *testing.T) {
		s, err := FromProperties(props(base(KeyCipherSuites, "TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384,TLS_CHACHA20_POLY1305_SHA256")))
		if err != nil {
			t.Fatal(err)
		}
		if s.MinVersion != tls.VersionTLS13 {
			t.Errorf("min %x", s.MinVersion)
		}
	})

	for _, tc := range []struct {
		name    string
		props   map[string]string
		wantKey string
	}{
		{"no keystore", map[string]string{}, KeyKeystoreLocation},
		{"JKS keystore", base(KeyKeystoreType, "JKS"), KeyKeystoreType},
		{"PKCS12 truststore", base(KeyTruststoreType, "PKCS12"), KeyTruststoreType},
		{"keystore password", base(KeyKeystorePassword, "x"), KeyKeystorePassword},
		{"truststore password", base(KeyTruststorePassword, "x"), KeyTruststorePassword},
		{"location and inline", base(KeyKeystoreKey, "k", KeyKeystoreCertificateChain, "c"), KeyKeystoreLocation},
		{"inline key without chain", map[string]string{KeyKeystoreKey: "k"}, KeyKeystoreCertificateChain},
		{"inline chain without key", map[string]string{KeyKeystoreCertificateChain: "c"}, KeyKeystoreKey},
		{"two truststores", base(KeyTruststoreLocation, "/a", KeyTruststoreCertificates, "b"), KeyTruststoreLocation},
		{"unknown client auth", base(KeyClientAuth, "always"), KeyClientAuth},
		{"client auth without truststore", base(KeyClientAuth, "requested"), KeyTruststoreLocation},
		{"TLSv1.1", base(KeyEnabledProtocols, "TLSv1.2,TLSv1.1"), KeyEnabledProtocols},
		{"TLSv1", base(KeyEnabledProtocols, "TLSv1"), KeyEnabledProtocols},
		{"unknown protocol", base(KeyEnabledProtocols, "TLSv1.4"), KeyEnabledProtocols},
		{"empty protocol list", base(KeyEnabledProtocols, " , "), KeyEnabledProtocols},
		{"unknown suite", base(KeyCipherSuites, "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_DHE_RSA_WITH_AES_128_GCM_SHA256"), KeyCipherSuites},
		{"insecure suite", base(KeyCipherSuites, "TLS_RSA_WITH_AES_128_GCM_SHA256"), KeyCipherSuites},
		{"some TLS 1.3 suites", base(KeyCipherSuites, "TLS_AES_128_GCM_SHA256"), KeyCipherSuites},
		{"TLS 1.2 suites with TLSv1.3 only", base(KeyCipherSuites, "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", KeyEnabledProtocols, "TLSv1.3"), KeyCipherSuites},
		{"TLS 1.3 suites with TLSv1.2 only", base(KeyCipherSuites, "TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384,TLS_CHACHA20_POLY1305_SHA256", KeyEnabledProtocols, "TLSv1.2"), KeyCipherSuites},
		{"bad rule", base(KeyPrincipalMappingRules, "RULE:^CN=(.*)$/$1/X"), KeyPrincipalMappingRules},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := FromProperties(props(tc.props))
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Key != tc.wantKey {
				t.Fatalf("err = %v, want a ConfigError for %s", err, tc.wantKey)
			}
			t.Log(err)
		})
	}
}
