package console_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/sluice/sluice/config"
)

// TestFailedLoginsSharedAcrossSides: one broker's failed-login allowance
// per address covers its HTTP side and its Kafka listeners together
// (max.failed.authentications.per.ip=3): three wrong passwords over HTTP
// from 127.0.0.1 leave that address no SASL login, its correct password
// refused unchecked with SASL_AUTHENTICATION_FAILED, and HTTP answers it
// 429 with Retry-After; 127.0.0.2 logs in on both sides.
func TestFailedLoginsSharedAcrossSides(t *testing.T) {
	b := securedBroker(t, func(c *config.Config) { c.MaxFailedAuthenticationsPerIP = 3 })
	url := "http://" + b.HTTPAddr() + "/api/whoami"
	get := func(from, user, pass string) *http.Response {
		t.Helper()
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
		cl := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}
		req, _ := http.NewRequest("GET", url, nil)
		req.SetBasicAuth(user, pass)
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for i := range 3 {
		if r := get("127.0.0.1", "alice", "guess"); r.StatusCode != http.StatusUnauthorized {
			t.Fatalf("wrong password %d: %d, want 401", i+1, r.StatusCode)
		}
	}
	if r := get("127.0.0.1", "alice", "alice-secret"); r.StatusCode != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" {
		t.Fatalf("correct password from an address over its allowance: %d (Retry-After %q), want 429 with Retry-After", r.StatusCode, r.Header.Get("Retry-After"))
	}
	if r := get("127.0.0.2", "alice", "alice-secret"); r.StatusCode != http.StatusOK {
		t.Fatalf("correct password from another address: %d", r.StatusCode)
	}

	saslLogin := func(from string) error {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
		cl := kclient(t, b.Addr(), kgo.Dialer(d.DialContext),
			kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		return err
	}
	err := saslLogin("127.0.0.1")
	if !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), "too many failed authentications") {
		t.Fatalf("SASL login from an address whose HTTP logins used its allowance: %v, want SASL_AUTHENTICATION_FAILED, too many failed authentications", err)
	}
	if err := saslLogin("127.0.0.2"); err != nil {
		t.Fatalf("SASL login from another address: %v", err)
	}

	// /metrics counts the refusals of both sides: at least the 429 and
	// the SASL login above.
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
	cl := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}
	req, _ := http.NewRequest("GET", "http://"+b.HTTPAddr()+"/metrics", nil)
	req.SetBasicAuth("admin", "admin-secret")
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d %v", resp.StatusCode, err)
	}
	refused := -1.0
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "sluice_failed_authentication_refused_total "); ok {
			refused, _ = strconv.ParseFloat(v, 64)
		}
	}
	if refused < 2 {
		t.Errorf("sluice_failed_authentication_refused_total = %v, want at least 2 (an HTTP and a SASL refusal)", refused)
	}
}
