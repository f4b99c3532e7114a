package console

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sluice/sluice/auth/sasl"
)

// creds is a CredentialLookup with one SCRAM-SHA-256 user, or an error.
type creds struct {
	user string
	c    sasl.Credential
	err  error
}

func (s creds) Get(user, mech string) (sasl.Credential, bool, error) {
	if s.err != nil {
		return sasl.Credential{}, false, s.err
	}
	if user == s.user && mech == s.c.Mechanism {
		return s.c, true, nil
	}
	return sasl.Credential{}, false, nil
}

func newTestServer(t *testing.T, b Backend) *Server {
	t.Helper()
	s, err := Start(Options{AuthRequired: true, PlainUsers: map[string]string{"alice": "alice-secret"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	s.Attach(b)
	return s
}

// Every failed login costs a derivation, whether the user exists or not,
// so that the time of a 401 does not enumerate users.
func TestFailedLoginsCostADerivation(t *testing.T) {
	c, err := sasl.NewCredential(sasl.ScramSHA256, "carol-secret", 4096)
	if err != nil {
		t.Fatal(err)
	}
	s := newTestServer(t, Backend{Credentials: creds{user: "carol", c: c}})
	cases := []struct {
		name, user, pass string
		want             loginResult
		derivations      int64
	}{
		{"unknown user", "nobody", "x", loginFailed, 1},
		{"empty user", "", "", loginFailed, 1},
		{"PLAIN user, wrong password", "alice", "wrong", loginFailed, 1},
		{"PLAIN user", "alice", "alice-secret", loginOK, 0},
		{"SCRAM user, wrong password", "carol", "wrong", loginFailed, 1},
		{"SCRAM user", "carol", "carol-secret", loginOK, 1},
		{"SCRAM user, remembered", "carol", "carol-secret", loginOK, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := s.scram.derivations.Load()
			if got := s.checkUser(context.Background(), s.backend.Load(), tc.user, tc.pass); got != tc.want {
				t.Errorf("checkUser = %d, want %d", got, tc.want)
			}
			if d := s.scram.derivations.Load() - before; d != tc.derivations {
				t.Errorf("%d derivations, want %d", d, tc.derivations)
			}
		})
	}
}

// A login waiting for a derivation slot gives up when its request ends.
func TestLoginHonoursContext(t *testing.T) {
	s := newTestServer(t, Backend{Credentials: creds{}})
	for range cap(s.scram.sem) { // every slot taken
		s.scram.sem <- struct{}{}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got := s.checkUser(ctx, s.backend.Load(), "nobody", "x"); got != loginCanceled {
		t.Errorf("checkUser with every slot taken and the request gone = %d, want loginCanceled", got)
	}
}

// A credential store that cannot answer is 503, not a wrong password.
func TestLoginStoreError(t *testing.T) {
	s := newTestServer(t, Backend{Credentials: creds{err: errors.New("zookeeper: connection lost")}})
	req := httptest.NewRequest("GET", "/api/whoami", nil)
	req.SetBasicAuth("carol", "carol-secret")
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("credential store error: %d %s, want 503", rec.Code, rec.Body)
	}
}
