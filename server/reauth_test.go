package server

// Re-authentication (KIP-368) as Kafka's SaslServerAuthenticator and
// SocketServer run it, on raw connections (no client sends these on
// purpose).

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/internal/kraw"
)

// twoMechAuth offers PLAIN and a second mechanism, OTHER, that reads the
// same PLAIN message.
type twoMechAuth struct{ plainAuth }

func (a twoMechAuth) Mechanisms() []string { return []string{"PLAIN", "OTHER"} }

// startReauthServer serves a SASL_PLAINTEXT listener with PLAIN and OTHER
// for alice and bob, with connections.max.reauth.ms = reauth.
func startReauthServer(t *testing.T, reauth time.Duration) string {
	t.Helper()
	cfg := config.Default()
	cfg.FailedAuthenticationDelay = 10 * time.Millisecond
	cfg.ConnectionsMaxReauth = reauth
	users := map[string]string{"alice": "alice-secret", "bob": "bob-secret"}
	s := newTestServer(t, &cfg, Options{ClusterID: "reauth", AdvertisedHost: "127.0.0.1",
		Listeners: map[string]ListenerSecurity{"SASL_PLAINTEXT": {Protocol: "SASL_PLAINTEXT", SASL: twoMechAuth{plainAuth{users: users}}}}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.ServeListener(ln, "SASL_PLAINTEXT")
	return ln.Addr().String()
}

func handshake(rc *kraw.Conn, version int16, mech string) *kmsg.SASLHandshakeResponse {
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(version)
	hs.Mechanism = mech
	return rc.Do(hs).(*kmsg.SASLHandshakeResponse)
}

func authenticate(rc *kraw.Conn, user, pass string) *kmsg.SASLAuthenticateResponse {
	au := kmsg.NewPtrSASLAuthenticateRequest()
	au.SetVersion(1)
	au.SASLAuthBytes = []byte("\x00" + user + "\x00" + pass)
	return rc.Do(au).(*kmsg.SASLAuthenticateResponse)
}

// login authenticates a new raw connection as alice with mech.
func login(t *testing.T, addr, mech string) *kraw.Conn {
	t.Helper()
	rc := kraw.Dial(t, addr)
	if c := handshake(rc, 1, mech).ErrorCode; c != 0 {
		t.Fatalf("handshake %s: %v", mech, kerr.ErrorForCode(c))
	}
	if r := authenticate(rc, "alice", "alice-secret"); r.ErrorCode != 0 {
		t.Fatalf("authenticate: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	return rc
}

// usable checks that rc is still open and authenticated.
func usable(t *testing.T, rc *kraw.Conn) {
	t.Helper()
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(1)
	rc.Do(md)
}

func TestSASLReauthenticationRules(t *testing.T) {
	t.Parallel()
	t.Run("another mechanism", func(t *testing.T) {
		// Kafka's REAUTH_BAD_MECHANISM: the handshake is accepted, the
		// next token closes the connection without an answer.
		addr := startReauthServer(t, time.Hour)
		rc := login(t, addr, "PLAIN")
		if c := handshake(rc, 1, "OTHER").ErrorCode; c != 0 {
			t.Fatalf("re-authentication handshake with another mechanism: %v, want accepted as Kafka does", kerr.ErrorForCode(c))
		}
		au := kmsg.NewPtrSASLAuthenticateRequest()
		au.SetVersion(1)
		au.SASLAuthBytes = []byte("\x00alice\x00alice-secret")
		rc.Send(au)
		rc.ExpectClosed()
	})
	t.Run("handshake v0", func(t *testing.T) {
		addr := startReauthServer(t, time.Hour)
		rc := login(t, addr, "PLAIN")
		if c := handshake(rc, 0, "PLAIN").ErrorCode; c != kerr.IllegalSaslState.Code {
			t.Fatalf("re-authentication with SaslHandshake v0: %v, want ILLEGAL_SASL_STATE", kerr.ErrorForCode(c))
		}
		usable(t, rc)
	})
	t.Run("no connections.max.reauth.ms", func(t *testing.T) {
		// KafkaApis answers a handshake that begins no re-authentication.
		addr := startReauthServer(t, 0)
		rc := login(t, addr, "PLAIN")
		if c := handshake(rc, 1, "PLAIN").ErrorCode; c != kerr.IllegalSaslState.Code {
			t.Fatalf("handshake on an authenticated connection without connections.max.reauth.ms: %v, want ILLEGAL_SASL_STATE", kerr.ErrorForCode(c))
		}
		usable(t, rc)
	})
	t.Run("twice within a second", func(t *testing.T) {
		addr := startReauthServer(t, time.Hour)
		rc := login(t, addr, "PLAIN")
		if c := handshake(rc, 1, "PLAIN").ErrorCode; c != 0 {
			t.Fatalf("first re-authentication: %v", kerr.ErrorForCode(c))
		}
		if r := authenticate(rc, "alice", "alice-secret"); r.ErrorCode != 0 {
			t.Fatalf("first re-authentication: %v", kerr.ErrorForCode(r.ErrorCode))
		}
		// Refused if it comes within Kafka's one second of the first;
		// the test cannot tell how long the first took, so it only
		// checks when it is sure to be within it.
		start := time.Now()
		c := handshake(rc, 1, "PLAIN").ErrorCode
		if time.Since(start) < 900*time.Millisecond && c != kerr.IllegalSaslState.Code {
			t.Fatalf("second re-authentication within a second: %v, want ILLEGAL_SASL_STATE", kerr.ErrorForCode(c))
		}
	})
	t.Run("another principal", func(t *testing.T) {
		addr := startReauthServer(t, time.Hour)
		rc := login(t, addr, "PLAIN")
		if c := handshake(rc, 1, "PLAIN").ErrorCode; c != 0 {
			t.Fatalf("re-authentication handshake: %v", kerr.ErrorForCode(c))
		}
		r := authenticate(rc, "bob", "bob-secret")
		want := "Cannot change principals during re-authentication from User.alice: User.bob"
		if r.ErrorCode != kerr.SaslAuthenticationFailed.Code || r.ErrorMessage == nil || *r.ErrorMessage != want {
			t.Fatalf("re-authentication as bob: %v %v, want SASL_AUTHENTICATION_FAILED %q", kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage, want)
		}
		rc.ExpectClosed()
	})
	t.Run("wrong password", func(t *testing.T) {
		addr := startReauthServer(t, time.Hour)
		rc := login(t, addr, "PLAIN")
		handshake(rc, 1, "PLAIN")
		r := authenticate(rc, "alice", "guess")
		if r.ErrorCode != kerr.SaslAuthenticationFailed.Code || r.ErrorMessage == nil ||
			!strings.Contains(*r.ErrorMessage, "during re-authentication due to invalid credentials with SASL mechanism PLAIN") {
			t.Fatalf("re-authentication with a wrong password: %v %v", kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
		}
		rc.ExpectClosed()
	})
	t.Run("expired session", func(t *testing.T) {
		// After expiry only the SaslHandshake that begins a
		// re-authentication is served; ApiVersions closes the connection.
		addr := startReauthServer(t, 200*time.Millisecond)
		rc := login(t, addr, "PLAIN")
		time.Sleep(300 * time.Millisecond)
		v := kmsg.NewPtrApiVersionsRequest()
		v.SetVersion(3)
		rc.Send(v)
		rc.ExpectClosed()

		rc = login(t, addr, "PLAIN")
		time.Sleep(300 * time.Millisecond)
		if c := handshake(rc, 1, "PLAIN").ErrorCode; c != 0 {
			t.Fatalf("re-authentication of an expired session: %v", kerr.ErrorForCode(c))
		}
		if r := authenticate(rc, "alice", "alice-secret"); r.ErrorCode != 0 {
			t.Fatalf("re-authentication of an expired session: %v", kerr.ErrorForCode(r.ErrorCode))
		}
		usable(t, rc)

		// A refused re-authentication (v0 here) of an expired session
		// closes the connection, as any other request would.
		rc = login(t, addr, "PLAIN")
		time.Sleep(300 * time.Millisecond)
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Mechanism = "PLAIN"
		rc.Send(hs)
		rc.ExpectClosed()
	})
	t.Run("unsupported mechanism closes", func(t *testing.T) {
		addr := startReauthServer(t, time.Hour)
		rc := kraw.Dial(t, addr)
		if c := handshake(rc, 1, "GSSAPI").ErrorCode; c != kerr.UnsupportedSaslMechanism.Code {
			t.Fatalf("GSSAPI: %v", kerr.ErrorForCode(c))
		}
		rc.ExpectClosed()
	})
}
