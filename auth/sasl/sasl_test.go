package sasl

import (
	"bytes"
	"encoding/base64"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// exchange drives a ClientSession against a server Session as a connection
// would and returns the server's error, or the client's.
func exchange(t *testing.T, srv Session, cs *ClientSession) (serverErr, clientErr error) {
	t.Helper()
	msg, done, err := cs.Step(nil)
	for i := 0; ; i++ {
		if err != nil {
			return nil, err
		}
		if done {
			return nil, nil
		}
		if i > 4 {
			t.Fatal("exchange does not end")
		}
		resp, _, serr := srv.Step(msg)
		if serr != nil {
			return serr, nil
		}
		msg, done, err = cs.Step(resp)
	}
}

func newTestAuth(t *testing.T, store CredentialLookup) *Authenticator {
	t.Helper()
	a, err := NewAuthenticator(Config{
		Mechanisms:  []string{Plain, ScramSHA256, ScramSHA512},
		PlainUsers:  map[string]string{"admin": "admin-secret", "alice": "alice-secret"},
		Credentials: store,
		Logger:      slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func mustCredential(t *testing.T, mech, password string, iterations int) Credential {
	t.Helper()
	c, err := NewCredential(mech, password, iterations)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestScramExchange(t *testing.T) {
	for _, mech := range []string{ScramSHA256, ScramSHA512} {
		t.Run("mechanism="+mech, func(t *testing.T) {
			store := &MemoryStore{}
			if err := store.Put("alice", mustCredential(t, mech, "alice-secret", 0)); err != nil {
				t.Fatal(err)
			}
			// A user=with,odd=chars exercises RFC 5802's name escaping.
			if err := store.Put("a=b,c", mustCredential(t, mech, "pw", 8192)); err != nil {
				t.Fatal(err)
			}
			a := newTestAuth(t, store)
			run := func(user, pass string) (Session, error) {
				srv, err := a.NewSession(mech)
				if err != nil {
					t.Fatal(err)
				}
				cs, err := NewClientSession(mech, user, pass)
				if err != nil {
					t.Fatal(err)
				}
				serr, cerr := exchange(t, srv, cs)
				if cerr != nil {
					t.Fatalf("client: %v", cerr)
				}
				return srv, serr
			}

			t.Run("right password", func(t *testing.T) {
				srv, err := run("alice", "alice-secret")
				if err != nil {
					t.Fatal(err)
				}
				if got := srv.Principal(); got != "User:alice" {
					t.Fatalf("principal %q", got)
				}
				srv, err = run("a=b,c", "pw")
				if err != nil || srv.Principal() != "User:a=b,c" {
					t.Fatalf("escaped name: %v, principal %q", err, srv.Principal())
				}
			})
			var wrongErr error
			t.Run("wrong password", func(t *testing.T) {
				srv, err := run("alice", "not-the-secret")
				if !errors.Is(err, ErrAuthenticationFailed) {
					t.Fatalf("err %v, want ErrAuthenticationFailed", err)
				}
				if srv.Principal() != "" {
					t.Fatalf("principal %q after failure", srv.Principal())
				}
				if strings.Contains(err.Error(), "not-the-secret") || strings.Contains(err.Error(), "alice") {
					t.Fatalf("error %q names the password or the user", err)
				}
				wrongErr = err
			})
			t.Run("unknown user", func(t *testing.T) {
				_, err := run("mallory", "not-the-secret")
				if !errors.Is(err, ErrAuthenticationFailed) {
					t.Fatalf("err %v, want ErrAuthenticationFailed", err)
				}
				if wrongErr == nil || err.Error() != wrongErr.Error() {
					t.Fatalf("unknown user fails with %q, wrong password with %q", err, wrongErr)
				}
			})
			t.Run("unknown user salt is stable", func(t *testing.T) {
				first := func() string {
					srv, _ := a.NewSession(mech)
					out, _, err := srv.Step([]byte("n,,n=mallory,r=abc"))
					if err != nil {
						t.Fatal(err)
					}
					_, rest, _ := strings.Cut(string(out), ",s=")
					return rest
				}
				if s1, s2 := first(), first(); s1 != s2 {
					t.Fatalf("made-up salt changes between attempts: %q vs %q", s1, s2)
				}
			})
			t.Run("nonce tampering", func(t *testing.T) {
				for _, tamper := range []func(string) string{
					func(m string) string { return strings.Replace(m, ",r=", ",r=x", 1) }, // not our nonce
					func(m string) string { // one character of the nonce
						i := strings.Index(m, ",r=") + 4
						c := byte('A')
						if m[i] == 'A' {
							c = 'B'
						}
						return m[:i] + string(c) + m[i+1:]
					},
				} {
					srv, _ := a.NewSession(mech)
					cs, _ := NewClientSession(mech, "alice", "alice-secret")
					c1, _, _ := cs.Step(nil)
					s1, _, err := srv.Step(c1)
					if err != nil {
						t.Fatal(err)
					}
					c2, _, err := cs.Step(s1)
					if err != nil {
						t.Fatal(err)
					}
					bad := tamper(string(c2))
					if bad == string(c2) {
						t.Fatal("tamper changed nothing")
					}
					if _, _, err := srv.Step([]byte(bad)); !errors.Is(err, ErrAuthenticationFailed) {
						t.Fatalf("tampered final message: err %v", err)
					}
					if _, _, err := srv.Step(c2); !errors.Is(err, ErrAuthenticationFailed) {
						t.Fatalf("step after failure: err %v", err)
					}
				}
			})
			t.Run("server nonce tampering", func(t *testing.T) {
				srv, _ := a.NewSession(mech)
				cs, _ := NewClientSession(mech, "alice", "alice-secret")
				c1, _, _ := cs.Step(nil)
				s1, _, _ := srv.Step(c1)
				// A server-first whose nonce does not extend the client's.
				bad := "r=other" + string(s1)[2+20:]
				if _, _, err := cs.Step([]byte(bad)); !errors.Is(err, ErrServerRejected) {
					t.Fatalf("client accepted a foreign nonce: %v", err)
				}
			})
			t.Run("forged server signature", func(t *testing.T) {
				srv, _ := a.NewSession(mech)
				cs, _ := NewClientSession(mech, "alice", "alice-secret")
				c1, _, _ := cs.Step(nil)
				s1, _, _ := srv.Step(c1)
				c2, _, _ := cs.Step(s1)
				s2, done, err := srv.Step(c2)
				if err != nil || !done {
					t.Fatalf("server: done %v err %v", done, err)
				}
				forged := append([]byte("v=AAAA"), s2[6:]...)
				if _, _, err := cs.Step(forged); !errors.Is(err, ErrServerRejected) {
					t.Fatalf("client accepted a forged signature: %v", err)
				}
			})
			t.Run("authzid differs", func(t *testing.T) {
				srv, _ := a.NewSession(mech)
				if _, _, err := srv.Step([]byte("n,a=admin,n=alice,r=abc")); !errors.Is(err, ErrAuthenticationFailed) {
					t.Fatalf("err %v", err)
				}
			})
			t.Run("channel binding refused", func(t *testing.T) {
				srv, _ := a.NewSession(mech)
				if _, _, err := srv.Step([]byte("p=tls-unique,,n=alice,r=abc")); !errors.Is(err, ErrAuthenticationFailed) {
					t.Fatalf("err %v", err)
				}
			})
			t.Run("garbage", func(t *testing.T) {
				for _, m := range []string{"", "x", "n,,n=alice", "\x00\xff"} {
					srv, _ := a.NewSession(mech)
					if _, _, err := srv.Step([]byte(m)); !errors.Is(err, ErrAuthenticationFailed) {
						t.Fatalf("%q: err %v", m, err)
					}
				}
			})
		})
	}
}

// TestScramRefusesWeakCredential: a stored credential below 4096
// iterations, and one of the other mechanism, fail like a wrong password.
func TestScramRefusesWeakCredential(t *testing.T) {
	weak := mustCredential(t, ScramSHA256, "pw", 0)
	weak.Iterations = 1000 // as if written by an older or foreign tool
	store := &MemoryStore{}
	if err := store.Put("weak", weak); err != nil {
		t.Fatal(err)
	}
	a := newTestAuth(t, store)
	srv, _ := a.NewSession(ScramSHA256)
	cs, _ := NewClientSession(ScramSHA256, "weak", "pw")
	c1, _, _ := cs.Step(nil)
	s1, _, err := srv.Step(c1)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(s1), "i=1000") {
		t.Fatalf("server offered the weak credential: %s", s1)
	}
	c2, _, err := cs.Step(s1)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := srv.Step(c2); !errors.Is(err, ErrAuthenticationFailed) {
		t.Fatalf("err %v", err)
	}
}

type failingStore struct{}

func (failingStore) Get(string, string) (Credential, bool, error) {
	return Credential{}, false, errors.New("store down")
}

func TestScramLookupError(t *testing.T) {
	a := newTestAuth(t, failingStore{})
	srv, _ := a.NewSession(ScramSHA512)
	cs, _ := NewClientSession(ScramSHA512, "alice", "pw")
	if serr, cerr := exchange(t, srv, cs); !errors.Is(serr, ErrAuthenticationFailed) || cerr != nil {
		t.Fatalf("server %v client %v", serr, cerr)
	}
}

// TestRFC7677 replays the SCRAM-SHA-256 exchange of RFC 7677 section 3
// against a credential made by this package from the RFC's password and
// salt, and checks the stored keys against values computed independently
// (Python hashlib: pbkdf2_hmac, hmac, sha256/sha512).
func TestRFC7677(t *testing.T) {
	salt, _ := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	known := map[string]struct{ salted, stored, server string }{
		ScramSHA256: {
			"xKSVEDI6tPlSysH6mUQZOeeOp01r6B3fcJbodRPcYV0=",
			"WG5d8oPm3OtcPnkdi4Uo7BkeZkBFzpcXkuLmtbsT4qY=",
			"wfPLwcE6nTWhTAmQ7tl2KeoiWGPlZqQxSrmfPwDl2dU=",
		},
		ScramSHA512: {
			"8W7+G+Z/HQlQLr1e2SYv3f+6Wjd6tPC2h+XtW6D1Boa4pK4WZHbairO5UdL6kji2OZj0VGG8M6RkgUlJzsljHQ==",
			"6AAub3065EYRmyFpM2RNwqK+eGnrkYuEWbXn19LsEmBqzu8QaCXNc1FwpnX9NhH2hK/60dzj9DoO5DvVkOHbvg==",
			"jZHbYjC1aHh0/hKbxyBuGFjDrgjgKTT1esA7awWiKcRZ0o/0b1yWEebBeSVkkCFewf91nLDfKF24mvD5nmE6rA==",
		},
	}
	creds := map[string]Credential{}
	for mech, k := range known {
		c, err := newCredential(mech, "pencil", salt, 4096)
		if err != nil {
			t.Fatal(err)
		}
		want := "salt=W22ZaJ0SNY7soEsUEjb6gQ==,stored_key=" + k.stored + ",server_key=" + k.server + ",iterations=4096"
		if got := EncodeCredential(c); got != want {
			t.Fatalf("%s credential\n got %s\nwant %s", mech, got, want)
		}
		salted, _ := base64.StdEncoding.DecodeString(k.salted)
		c2, err := CredentialFromSaltedPassword(mech, salt, salted, 4096)
		if err != nil || EncodeCredential(c2) != want {
			t.Fatalf("%s from salted password: %v %s", mech, err, EncodeCredential(c2))
		}
		creds[mech] = c
	}

	store := &MemoryStore{}
	if err := store.Put("user", creds[ScramSHA256]); err != nil {
		t.Fatal(err)
	}
	a := newTestAuth(t, store)
	a.nonce = func() string { return "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0" }
	srv, _ := a.NewSession(ScramSHA256)
	s1, done, err := srv.Step([]byte("n,,n=user,r=rOprNGfwEbeRWgbNEkqO"))
	if err != nil || done {
		t.Fatalf("first: %v %v", done, err)
	}
	if want := "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"; string(s1) != want {
		t.Fatalf("server-first %s, want %s", s1, want)
	}
	s2, done, err := srv.Step([]byte("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="))
	if err != nil || !done {
		t.Fatalf("final: %v %v", done, err)
	}
	if want := "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="; string(s2) != want {
		t.Fatalf("server-final %s, want %s", s2, want)
	}
	if srv.Principal() != "User:user" {
		t.Fatalf("principal %q", srv.Principal())
	}
}

func TestPlain(t *testing.T) {
	a := newTestAuth(t, &MemoryStore{})
	for _, tc := range []struct {
		name, msg, principal string
	}{
		{"ok", "\x00alice\x00alice-secret", "User:alice"},
		{"authzid equal", "alice\x00alice\x00alice-secret", "User:alice"},
		{"wrong password", "\x00alice\x00alice-secreT", ""},
		{"prefix of password", "\x00alice\x00alice-", ""},
		{"unknown user", "\x00bob\x00alice-secret", ""},
		{"authzid mismatch", "admin\x00alice\x00alice-secret", ""},
		{"no password", "\x00alice\x00", ""},
		{"no user", "\x00\x00alice-secret", ""},
		{"two fields", "alice\x00alice-secret", ""},
		{"four fields", "\x00alice\x00alice-secret\x00", ""},
		{"not utf8", "\x00alice\x00\xff", ""},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := a.NewSession(Plain)
			if err != nil {
				t.Fatal(err)
			}
			out, done, err := srv.Step([]byte(tc.msg))
			if tc.principal == "" {
				if !errors.Is(err, ErrAuthenticationFailed) || done {
					t.Fatalf("done %v err %v, want ErrAuthenticationFailed", done, err)
				}
				if strings.Contains(err.Error(), "secre") {
					t.Fatalf("error %q shows the password", err)
				}
				return
			}
			if err != nil || !done || len(out) != 0 || srv.Principal() != tc.principal {
				t.Fatalf("out %q done %v err %v principal %q", out, done, err, srv.Principal())
			}
			if _, _, err := srv.Step([]byte(tc.msg)); !errors.Is(err, ErrAuthenticationFailed) {
				t.Fatalf("second step: %v", err)
			}
		})
	}
	t.Run("client session", func(t *testing.T) {
		for pass, ok := range map[string]bool{"admin-secret": true, "nope": false} {
			srv, _ := a.NewSession(Plain)
			cs, _ := NewClientSession(Plain, "admin", pass)
			serr, cerr := exchange(t, srv, cs)
			if cerr != nil || (serr == nil) != ok {
				t.Fatalf("password %q: server %v client %v", pass, serr, cerr)
			}
		}
	})
}

func TestMechanisms(t *testing.T) {
	if _, err := NewAuthenticator(Config{Mechanisms: []string{"GSSAPI"}}); !errors.Is(err, ErrUnsupportedMechanism) {
		t.Fatalf("GSSAPI: %v", err)
	}
	if _, err := NewAuthenticator(Config{Mechanisms: []string{ScramSHA256}}); err == nil {
		t.Fatal("SCRAM without a credential store accepted")
	}
	a, err := NewAuthenticator(Config{Mechanisms: []string{ScramSHA512, Plain, ScramSHA512}, Credentials: &MemoryStore{}})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(a.Mechanisms(), ","); got != "SCRAM-SHA-512,PLAIN" {
		t.Fatalf("mechanisms %s", got)
	}
	for _, m := range []string{ScramSHA256, "plain", "OAUTHBEARER", ""} {
		if _, err := a.NewSession(m); !errors.Is(err, ErrUnsupportedMechanism) {
			t.Fatalf("%q: %v", m, err)
		}
	}
	if _, err := NewClientSession("GSSAPI", "u", "p"); !errors.Is(err, ErrUnsupportedMechanism) {
		t.Fatalf("client GSSAPI: %v", err)
	}
}

// TestConcurrentSessions runs exchanges of every mechanism on one
// Authenticator at once (meaningful under -race).
func TestConcurrentSessions(t *testing.T) {
	store := &MemoryStore{}
	for _, m := range []string{ScramSHA256, ScramSHA512} {
		if err := store.Put("alice", mustCredential(t, m, "alice-secret", 0)); err != nil {
			t.Fatal(err)
		}
	}
	a := newTestAuth(t, store)
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mech := []string{Plain, ScramSHA256, ScramSHA512}[i%3]
			srv, _ := a.NewSession(mech)
			cs, _ := NewClientSession(mech, "alice", "alice-secret")
			msg, done, err := cs.Step(nil)
			for err == nil && !done {
				var resp []byte
				if resp, _, err = srv.Step(msg); err == nil {
					msg, done, err = cs.Step(resp)
				}
			}
			if err != nil || srv.Principal() != "User:alice" {
				t.Errorf("%s: %v", mech, err)
			}
		}()
	}
	wg.Wait()
}

func TestCredentialString(t *testing.T) {
	c := mustCredential(t, ScramSHA256, "pw", 0)
	for _, s := range []string{c.String(), strings.TrimSpace(strings.ReplaceAll(c.GoString(), "\n", ""))} {
		if strings.Contains(s, base64.StdEncoding.EncodeToString(c.StoredKey)) || bytes.Contains([]byte(s), c.StoredKey) {
			t.Fatalf("%q shows the stored key", s)
		}
	}
}
