package console_test

import (
	"context"
	"crypto/tls"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/sluice/sluice/broker"
	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/internal/testpki"
)

// SASL listeners without an authorizer: Kafka needs a password, so the
// HTTP API needs one too; once logged in a user sees and writes
// everything (no authorizer: every authenticated principal is allowed).
func TestAuthSASLWithoutAuthorizer(t *testing.T) {
	b := securedBroker(t, func(c *config.Config) { c.AuthorizerClassName = "" })
	createTopicAs(t, b, "secret")
	anon := newAPI(t, b)
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/api/topics/secret/records", ""},
		{"POST", "/api/topics/secret/records", `{"value":"written without a password"}`},
		{"GET", "/api/topics", ""},
		{"GET", "/readyz", ""},
	} {
		var body *strings.Reader
		ctype := ""
		if c.body != "" {
			body, ctype = strings.NewReader(c.body), "application/json"
		}
		var code int
		if body != nil {
			code, _ = anon.do(c.method, c.path, ctype, body)
		} else {
			code, _ = anon.do(c.method, c.path, "", nil)
		}
		if code != 401 {
			t.Errorf("%s %s without a user: %d, want 401", c.method, c.path, code)
		}
	}
	bob := anon.as("bob", "bob-secret")
	bob.post("/api/topics/secret/records", map[string]string{"value": "v"}, 201, nil)
	bob.get("/api/topics/secret/records", 200, nil)
	bob.get("/api/topics/secret", 200, nil)
}

// createTopicAs creates a one-partition topic as securedBroker's admin.
func createTopicAs(t *testing.T, b *broker.Broker, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if r, err := adminClient(t, b).CreateTopic(ctx, 1, 1, nil, name); err != nil || r.Err != nil {
		t.Fatalf("create %s: %v %v", name, err, r.Err)
	}
}

// A JAAS user_<name> logs in over HTTP only where PLAIN is enabled, as on
// the Kafka listeners.
func TestAuthPlainNeedsPlainMechanism(t *testing.T) {
	b := securedBroker(t, func(c *config.Config) { c.SASLEnabledMechanisms = []string{"SCRAM-SHA-512"} })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl := kclient(t, b.Addr(), kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()))
	if err := cl.Ping(ctx); err == nil {
		t.Fatal("Kafka accepted PLAIN on a SCRAM-only listener")
	}
	if code, body := newAPI(t, b).as("alice", "alice-secret").do("GET", "/api/whoami", "", nil); code != 401 {
		t.Errorf("alice's JAAS password over HTTP with PLAIN disabled: %d %s, want 401", code, body)
	}
}

// An mTLS-only cluster: the Kafka listener requires client certificates,
// so the API needs a user; on an https listener a client certificate is
// one, mapped to its principal as the SSL listeners map it.
func TestAuthClientCertificate(t *testing.T) {
	pki := testpki.New(t, "alice")
	b := brokertest.Start(t, "memory", func(c *config.Config) {
		c.Listeners = []string{"SSL://127.0.0.1:0"}
		c.HTTPListeners = []string{"https://127.0.0.1:0"}
		c.SecurityProperties = map[string]string{
			"ssl.keystore.location":             pki.Broker.Keystore,
			"ssl.truststore.location":           pki.Broker.CA,
			"ssl.client.auth":                   "requested", // the https listener
			"listener.name.ssl.ssl.client.auth": "required",
			"ssl.principal.mapping.rules":       "RULE:^CN=([^,]*)$/$1/,DEFAULT",
		}
	})
	base := "https://" + b.HTTPAddr()
	get := func(tcfg *tls.Config, path string) int {
		t.Helper()
		cl := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tcfg}}
		resp, err := cl.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(pki.TLS, "/api/whoami"); code != 401 {
		t.Errorf("no certificate: %d, want 401", code)
	}
	cert, err := tls.LoadX509KeyPair(pki.Clients["alice"].Keystore, pki.Clients["alice"].Keystore)
	if err != nil {
		t.Fatal(err)
	}
	withCert := pki.TLS.Clone()
	withCert.Certificates = []tls.Certificate{cert}
	a := &api{t: t, base: base, client: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: withCert}}}
	var who struct {
		Principal string `json:"principal"`
	}
	a.get("/api/whoami", 200, &who)
	if who.Principal != "User:alice" {
		t.Errorf("principal %q, want User:alice", who.Principal)
	}
}
