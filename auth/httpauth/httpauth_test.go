package httpauth

import (
	"context"
	"errors"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/sluice/sluice/auth/loginlimit"
	"github.com/sluice/sluice/auth/sasl"
)

// creds is a CredentialLookup with one SCRAM user, or an error.
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

// Every failed login costs a derivation, whether the user exists or not,
// so that the time of a 401 does not enumerate users; a SCRAM login is
// remembered.
func TestFailedLoginsCostADerivation(t *testing.T) {
	c, err := sasl.NewCredential(sasl.ScramSHA256, "carol-secret", 4096)
	if err != nil {
		t.Fatal(err)
	}
	a := &Authenticator{PlainUsers: map[string]string{"alice": "alice-secret"}}
	cr := creds{user: "carol", c: c}
	cases := []struct {
		name, user, pass string
		want             Result
		derivations      int64
	}{
		{"unknown user", "nobody", "x", Failed, 1},
		{"empty user", "", "", Failed, 1},
		{"PLAIN user, wrong password", "alice", "wrong", Failed, 1},
		{"PLAIN user", "alice", "alice-secret", OK, 0},
		{"SCRAM user, wrong password", "carol", "wrong", Failed, 1},
		{"SCRAM user", "carol", "carol-secret", OK, 1},
		{"SCRAM user, remembered", "carol", "carol-secret", OK, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := a.Derivations()
			if got := a.Check(context.Background(), cr, true, tc.user, tc.pass); got != tc.want {
				t.Errorf("Check = %d, want %d", got, tc.want)
			}
			if d := a.Derivations() - before; d != tc.derivations {
				t.Errorf("%d derivations, want %d", d, tc.derivations)
			}
		})
	}
}

// A login waiting for a derivation slot gives up when its request ends.
func TestLoginHonoursContext(t *testing.T) {
	a := &Authenticator{}
	a.scram.init()
	for range cap(a.scram.sem) { // every slot taken
		a.scram.sem <- struct{}{}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got := a.Check(ctx, creds{}, true, "nobody", "x"); got != Canceled {
		t.Errorf("Check with every slot taken and the request gone = %d, want Canceled", got)
	}
}

// Login's answers: no credentials, a SCRAM user before the credentials
// are attached, a store error, and an address over its allowance refused
// without its password being checked.
func TestLogin(t *testing.T) {
	c, err := sasl.NewCredential(sasl.ScramSHA512, "carol-secret", 4096)
	if err != nil {
		t.Fatal(err)
	}
	var failures, successes int
	a := &Authenticator{FailedLogins: loginlimit.New(2, time.Hour),
		OnFailure: func() { failures++ }, OnSuccess: func() { successes++ }}
	host := netip.MustParseAddr("192.0.2.1")
	login := func(user, pass string, cr sasl.CredentialLookup, attached bool) Answer {
		q := httptest.NewRequest("GET", "/", nil)
		if user != "" {
			q.SetBasicAuth(user, pass)
		}
		return a.Login(q, host, cr, attached)
	}
	if got := login("", "", nil, true); got.Result != NoCredentials {
		t.Errorf("no basic auth: %+v", got)
	}
	if got := login("carol", "carol-secret", nil, false); got.Result != Unavailable {
		t.Errorf("before attach: %+v, want Unavailable", got)
	}
	if got := login("carol", "carol-secret", creds{err: errors.New("zookeeper: connection lost")}, true); got.Result != StoreError {
		t.Errorf("store error: %+v, want StoreError", got)
	}
	cr := creds{user: "carol", c: c}
	if got := login("carol", "carol-secret", cr, true); got.Result != OK || got.User != "carol" {
		t.Errorf("good login: %+v", got)
	}
	for i := range 2 {
		if got := login("carol", "wrong", cr, true); got.Result != Failed {
			t.Errorf("wrong password %d: %+v", i, got)
		}
	}
	d := a.Derivations()
	got := login("carol", "carol-secret", cr, true)
	if got.Result != Refused || got.RetryAfter <= 0 {
		t.Errorf("over the allowance: %+v, want Refused with a RetryAfter", got)
	}
	if a.Derivations() != d {
		t.Errorf("a refused login derived")
	}
	if failures != 3 || successes != 1 {
		t.Errorf("%d failures and %d successes counted, want 3 and 1", failures, successes)
	}
}
