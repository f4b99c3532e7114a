package server

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/metrics"
)

// TestMetricsAuthentication: a SASL listener counts a good exchange as a
// successful authentication and a wrong password as a failed one, and its
// connections are counted under the listener's name until they close.
func TestMetricsAuthentication(t *testing.T) {
	cfg := config.Default()
	cfg.FailedAuthenticationDelay = 10 * time.Millisecond
	m := metrics.New()
	s := newTestServer(t, &cfg, Options{ClusterID: "sasl", AdvertisedHost: "127.0.0.1", Metrics: m,
		Listeners: map[string]ListenerSecurity{"SASL_PLAINTEXT": {Protocol: "SASL_PLAINTEXT", SASL: plainAuth{users: map[string]string{"alice": "alice-secret"}}}}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.advPort = int32(ln.Addr().(*net.TCPAddr).Port)
	s.self.Port = s.advPort
	go s.ServeListener(ln, "SASL_PLAINTEXT")
	addr := ln.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	good, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, good); err != nil {
		t.Fatalf("metadata as alice: %v", err)
	}
	bad, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(plain.Auth{User: "alice", Pass: "guess"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, bad); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	l := m.Listener("SASL_PLAINTEXT")
	if ok, failed := l.Counts().Authenticated, l.Counts().AuthenticationFailed; ok < 1 || failed < 1 {
		t.Fatalf("authentications: %d successful, %d failed; want >= 1 each", ok, failed)
	}
	if open := l.Counts().Open; open < 1 {
		t.Fatalf("%d open connections with a client connected", open)
	}
	good.Close()
	bad.Close()
	for deadline := time.Now().Add(10 * time.Second); l.Counts().Open != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("counts after the clients closed: %+v", l.Counts())
		}
	}
	if c := l.Counts(); c.Created != c.Closed || c.Created < 2 {
		t.Fatalf("counts after the clients closed: %+v", c)
	}
}
