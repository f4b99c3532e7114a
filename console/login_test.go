package console

import (
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
