package sasl

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"encoding/base64"
	"errors"
	"hash"
	"strconv"
	"strings"
	"testing"
)

// quirkyFinal plays librdkafka before 2.x (Debian's kcat) against srv: it
// sends client-first "n,,n=user,r=cnonce" and answers the server-first
// with the doubled nonce "r=" cnonce + cnonce + snonce, the proof computed
// independently of the package (RFC 5802 section 3) over the messages as
// exchanged. It returns the client-final message and the server signature
// the client expects.
func quirkyFinal(t *testing.T, srv Session, mech, user, password string) (final, wantSig string) {
	t.Helper()
	const cnonce = "fyko+d2lbbFgONRv9qkxdawL"
	bare := "n=" + user + ",r=" + cnonce
	s1, done, err := srv.Step([]byte("n,," + bare))
	if err != nil || done {
		t.Fatalf("client-first: done %v err %v", done, err)
	}
	var full, salt64, iters string
	for f := range strings.SplitSeq(string(s1), ",") {
		switch k, v, _ := strings.Cut(f, "="); k {
		case "r":
			full = v
		case "s":
			salt64 = v
		case "i":
			iters = v
		}
	}
	if !strings.HasPrefix(full, cnonce) {
		t.Fatalf("server-first %q does not extend the client nonce", s1)
	}
	salt, err := base64.StdEncoding.DecodeString(salt64)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(iters)
	if err != nil {
		t.Fatal(err)
	}
	h := hashFor(mech)
	newHash := func() hash.Hash { return h() }
	salted, err := pbkdf2.Key(newHash, password, salt, n, h().Size())
	if err != nil {
		t.Fatal(err)
	}
	mac := func(key []byte, m string) []byte {
		m2 := hmac.New(newHash, key)
		m2.Write([]byte(m))
		return m2.Sum(nil)
	}
	clientKey := mac(salted, "Client Key")
	hh := h()
	hh.Write(clientKey)
	storedKey := hh.Sum(nil)
	withoutProof := "c=biws,r=" + cnonce + full // the quirk: cnonce twice
	authMessage := bare + "," + string(s1) + "," + withoutProof
	proof := mac(storedKey, authMessage)
	for i := range proof {
		proof[i] ^= clientKey[i]
	}
	sig := mac(mac(salted, "Server Key"), authMessage)
	return withoutProof + ",p=" + base64.StdEncoding.EncodeToString(proof),
		"v=" + base64.StdEncoding.EncodeToString(sig)
}

// TestScramLibrdkafkaNonceQuirk: the doubled-nonce client-final-message
// of old librdkafka (finalQuirk) authenticates with the right password,
// and fails like any wrong password otherwise: a wrong proof, an unknown
// user, text after the proof.
func TestScramLibrdkafkaNonceQuirk(t *testing.T) {
	for _, mech := range []string{ScramSHA256, ScramSHA512} {
		t.Run("mechanism="+mech, func(t *testing.T) {
			store := &MemoryStore{}
			if err := store.Put("alice", mustCredential(t, mech, "alice-secret", 8192)); err != nil {
				t.Fatal(err)
			}
			a := newTestAuth(t, store)
			session := func() Session {
				srv, err := a.NewSession(mech)
				if err != nil {
					t.Fatal(err)
				}
				return srv
			}
			// mustFail checks that srv refuses final as it refuses a
			// wrong password, and that the exchange has ended.
			mustFail := func(t *testing.T, srv Session, final string) {
				t.Helper()
				out, done, err := srv.Step([]byte(final))
				if !errors.Is(err, ErrAuthenticationFailed) || done || out != nil {
					t.Fatalf("out %q done %v err %v, want ErrAuthenticationFailed", out, done, err)
				}
				if !strings.Contains(err.Error(), "invalid credentials (e=invalid-proof)") {
					t.Fatalf("err %q, want the error of a wrong password", err)
				}
				if srv.Principal() != "" {
					t.Fatalf("principal %q after failure", srv.Principal())
				}
				if _, _, err := srv.Step([]byte(final)); !errors.Is(err, ErrAuthenticationFailed) {
					t.Fatalf("step after failure: %v", err)
				}
			}

			t.Run("valid", func(t *testing.T) {
				srv := session()
				final, wantSig := quirkyFinal(t, srv, mech, "alice", "alice-secret")
				out, done, err := srv.Step([]byte(final))
				if err != nil || !done {
					t.Fatalf("done %v err %v", done, err)
				}
				if string(out) != wantSig {
					t.Fatalf("server-final %q, want %q", out, wantSig)
				}
				if srv.Principal() != "User:alice" {
					t.Fatalf("principal %q", srv.Principal())
				}
			})
			t.Run("wrong proof", func(t *testing.T) {
				srv := session()
				final, _ := quirkyFinal(t, srv, mech, "alice", "not-the-secret")
				mustFail(t, srv, final)
			})
			t.Run("flipped proof bit", func(t *testing.T) {
				srv := session()
				final, _ := quirkyFinal(t, srv, mech, "alice", "alice-secret")
				head, p64, _ := strings.Cut(final, ",p=")
				p, _ := base64.StdEncoding.DecodeString(p64)
				p[0] ^= 1
				mustFail(t, srv, head+",p="+base64.StdEncoding.EncodeToString(p))
			})
			t.Run("unknown user", func(t *testing.T) {
				// The made-up credential fails whatever the proof: the
				// password given here is irrelevant.
				srv := session()
				final, _ := quirkyFinal(t, srv, mech, "mallory", "alice-secret")
				mustFail(t, srv, final)
			})
			for _, trail := range []string{",x=y", "AAAA", " ", "\x00"} {
				t.Run("trailing text="+strconv.Quote(trail), func(t *testing.T) {
					srv := session()
					final, _ := quirkyFinal(t, srv, mech, "alice", "alice-secret")
					mustFail(t, srv, final+trail)
				})
			}
		})
	}
}
