package server

// The SASL state machine of a connection, with a PLAIN-only authenticator
// (the mechanisms themselves are package auth/sasl's): real franz-go
// clients, and raw connections for what clients never send.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/internal/kraw"
)

// plainAuth accepts PLAIN logins of users.
type plainAuth struct{ users map[string]string }

func (a plainAuth) Mechanisms() []string { return []string{"PLAIN"} }

func (a plainAuth) NewSession(string) (SASLSession, error) { return &plainSession{users: a.users}, nil }

type plainSession struct {
	users map[string]string
	user  string
}

func (s *plainSession) Step(msg []byte) ([]byte, bool, error) {
	parts := bytes.Split(msg, []byte{0})
	if len(parts) != 3 || s.users[string(parts[1])] != string(parts[2]) || len(parts[2]) == 0 {
		return nil, false, errors.New("bad credentials")
	}
	s.user = string(parts[1])
	return nil, true, nil
}

func (s *plainSession) Principal() string { return "User:" + s.user }

// startSASLServer serves a SASL_PLAINTEXT listener on 127.0.0.1.
func startSASLServer(t *testing.T, mod func(*config.Config)) (*Server, string) {
	t.Helper()
	cfg := config.Default()
	cfg.FailedAuthenticationDelay = 10 * time.Millisecond
	if mod != nil {
		mod(&cfg)
	}
	s := newTestServer(t, &cfg, Options{ClusterID: "sasl", AdvertisedHost: "127.0.0.1",
		Listeners: map[string]ListenerSecurity{"SASL_PLAINTEXT": {Protocol: "SASL_PLAINTEXT", SASL: plainAuth{users: map[string]string{"alice": "alice-secret"}}}}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.advPort = int32(ln.Addr().(*net.TCPAddr).Port)
	s.self.Port = s.advPort
	go s.ServeListener(ln, "SASL_PLAINTEXT")
	return s, ln.Addr().String()
}

func TestSASLPlainClient(t *testing.T) {
	_, addr := startSASLServer(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	good, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()),
		kgo.DefaultProduceTopic("t"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	if err := good.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("produce as alice: %v", err)
	}

	bad, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(plain.Auth{User: "alice", Pass: "guess"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	_, err = kmsg.NewPtrMetadataRequest().RequestWith(ctx, bad)
	if !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
}

func TestSASLBeforeAuthentication(t *testing.T) {
	_, addr := startSASLServer(t, nil)
	// Only ApiVersions and the SASL requests before authentication.
	rc := kraw.Dial(t, addr)
	v := kmsg.NewPtrApiVersionsRequest()
	v.SetVersion(3)
	v.ClientSoftwareName, v.ClientSoftwareVersion = "t", "1"
	if resp := rc.Do(v).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 {
		t.Fatalf("ApiVersions: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	rc.Send(kmsg.NewPtrMetadataRequest())
	rc.ExpectClosed()

	// A frame larger than sasl.server.max.receive.size before
	// authentication closes the connection, whatever it says.
	rc = kraw.Dial(t, addr)
	rc.WriteRaw(binary.BigEndian.AppendUint32(nil, 1<<20))
	rc.ExpectClosed()

	// SaslAuthenticate without a handshake: ILLEGAL_SASL_STATE.
	rc = kraw.Dial(t, addr)
	au := kmsg.NewPtrSASLAuthenticateRequest()
	au.SetVersion(1)
	if c := rc.Do(au).(*kmsg.SASLAuthenticateResponse).ErrorCode; c != kerr.IllegalSaslState.Code {
		t.Fatalf("authenticate without handshake: %v", kerr.ErrorForCode(c))
	}

	// An unknown mechanism: UNSUPPORTED_SASL_MECHANISM with the enabled ones.
	rc = kraw.Dial(t, addr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = "GSSAPI"
	resp := rc.Do(hs).(*kmsg.SASLHandshakeResponse)
	if resp.ErrorCode != kerr.UnsupportedSaslMechanism.Code || len(resp.SupportedMechanisms) != 1 {
		t.Fatalf("GSSAPI: %v %v", kerr.ErrorForCode(resp.ErrorCode), resp.SupportedMechanisms)
	}
}

// TestSASLHandshakeV0: the raw-token exchange of clients before Kafka 1.0.
func TestSASLHandshakeV0(t *testing.T) {
	_, addr := startSASLServer(t, nil)
	for _, tc := range []struct {
		pass string
		ok   bool
	}{{"alice-secret", true}, {"nope", false}} {
		rc := kraw.Dial(t, addr)
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.SetVersion(0)
		hs.Mechanism = "PLAIN"
		if c := rc.Do(hs).(*kmsg.SASLHandshakeResponse).ErrorCode; c != 0 {
			t.Fatalf("handshake v0: %v", kerr.ErrorForCode(c))
		}
		tok := []byte("\x00alice\x00" + tc.pass)
		rc.WriteRaw(append(binary.BigEndian.AppendUint32(nil, uint32(len(tok))), tok...))
		if !tc.ok {
			rc.ExpectClosed()
			continue
		}
		if b, err := rc.ReadFrame(5 * time.Second); err != nil || len(b) != 0 {
			t.Fatalf("raw answer: %q, %v", b, err)
		}
		// Authenticated: ordinary requests now.
		if resp := rc.Do(kmsg.NewPtrMetadataRequest()).(*kmsg.MetadataResponse); len(resp.Brokers) != 1 {
			t.Fatalf("metadata after v0 authentication: %+v", resp)
		}
	}
}

// TestSASLReauthentication: with connections.max.reauth.ms the session
// lifetime is announced, franz-go re-authenticates in band and keeps
// working, and a raw connection that does not is closed.
func TestSASLReauthentication(t *testing.T) {
	t.Parallel() // waits on session and request timers, not the CPU
	// franz-go re-authenticates at least a second before the session
	// ends, and Kafka refuses re-authentications less than a second
	// apart: 2.5 s makes one every 1.5 s.
	const lifetime = 2500 * time.Millisecond
	_, addr := startSASLServer(t, func(c *config.Config) { c.ConnectionsMaxReauth = lifetime })
	rc := kraw.Dial(t, addr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = "PLAIN"
	rc.Do(hs)
	au := kmsg.NewPtrSASLAuthenticateRequest()
	au.SetVersion(1)
	au.SASLAuthBytes = []byte("\x00alice\x00alice-secret")
	ar := rc.Do(au).(*kmsg.SASLAuthenticateResponse)
	if ar.ErrorCode != 0 || ar.SessionLifetimeMillis <= 0 || ar.SessionLifetimeMillis > lifetime.Milliseconds() {
		t.Fatalf("authenticate: %v, lifetime %d", kerr.ErrorForCode(ar.ErrorCode), ar.SessionLifetimeMillis)
	}
	rc.Do(kmsg.NewPtrMetadataRequest())
	time.Sleep(lifetime + 100*time.Millisecond) // let the session expire
	rc.Send(kmsg.NewPtrMetadataRequest())
	rc.ExpectClosed()

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for range 8 { // about three re-authentications
		if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl); err != nil {
			t.Fatalf("metadata across re-authentications: %v", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
