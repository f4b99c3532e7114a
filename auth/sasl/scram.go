package sasl

// SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), server side, as
// Kafka's ScramSaslServer runs them: two round trips,
//
//	client-first  n,[a=authzid],n=user,r=cnonce        -> server-first  r=cnonce+snonce,s=salt,i=iterations
//	client-final  c=biws,r=cnonce+snonce,p=proof       -> server-final  v=signature
//
// The message handling and the proof check are github.com/xdg-go/scram's;
// this file adds what Kafka adds around them: the credential lookup per
// mechanism, the minimum of 4096 iterations, an authorization id that must
// be empty or the user itself, no channel binding, no extensions.
//
// No user enumeration: for a user without a credential (or with one this
// server refuses) the session makes one up, a salt and keys derived from
// the Authenticator's random secret and the user name, so a repeated
// attempt sees the same salt, and fails the exchange at the proof with the
// same error as a wrong password. What can still differ is the iteration
// count (an existing user's may be above the 4096 of the made-up one) and
// the time of the credential lookup.

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"hash"
	"strings"

	"github.com/xdg-go/scram"
)

// scramSession is the server side of one SCRAM exchange.
type scramSession struct {
	a         *Authenticator
	mechanism string
	conv      *scram.ServerConversation
	// madeUp is set by the lookup when the user has no usable credential:
	// the exchange then fails at the proof whatever the client sends.
	madeUp    bool
	step      int // client messages consumed
	ended     bool
	principal string
	// cred is the credential the lookup found (or made up); clientFirst
	// and serverFirst are the first exchange, kept for the librdkafka
	// nonce quirk (finalQuirk).
	cred                     Credential
	clientFirst, serverFirst string
}

func newScramSession(a *Authenticator, mechanism string) *scramSession {
	s := &scramSession{a: a, mechanism: mechanism}
	srv, _ := hashFor(mechanism).NewServer(s.lookup) // never fails
	if a.nonce != nil {
		srv = srv.WithNonceGenerator(a.nonce)
	}
	s.conv = srv.NewConversation()
	return s
}

// lookup is xdg-go/scram's CredentialLookup: it never fails, so the
// exchange always reaches the proof check.
func (s *scramSession) lookup(user string) (scram.StoredCredentials, error) {
	c, ok, err := s.a.creds.Get(user, s.mechanism)
	switch {
	case err != nil:
		s.a.log.Warn("sasl: SCRAM credential lookup failed; the login fails", "mechanism", s.mechanism, "err", err)
		ok = false
	case ok && c.Iterations < MinIterations:
		s.a.log.Warn("sasl: stored SCRAM credential has too few iterations; the login fails",
			"mechanism", s.mechanism, "iterations", c.Iterations, "min", MinIterations)
		ok = false
	case ok && c.Mechanism != s.mechanism:
		s.a.log.Warn("sasl: credential store answered with another mechanism; the login fails",
			"mechanism", s.mechanism, "got", c.Mechanism)
		ok = false
	}
	if !ok {
		s.madeUp = true
		c = s.a.madeUpCredential(s.mechanism, user)
	}
	s.cred = c
	return scram.StoredCredentials{
		KeyFactors: scram.KeyFactors{Salt: string(c.Salt), Iters: c.Iterations},
		StoredKey:  c.StoredKey,
		ServerKey:  c.ServerKey,
	}, nil
}

func (s *scramSession) Step(msg []byte) ([]byte, bool, error) {
	if s.ended {
		return nil, false, failf("%s: the exchange has already ended", s.mechanism)
	}
	s.step++
	out, done, err := s.step1or2(msg)
	if err != nil || done {
		s.ended = true
	}
	return out, done, err
}

func (s *scramSession) step1or2(msg []byte) ([]byte, bool, error) {
	switch s.step {
	case 1:
		out, err := s.conv.Step(string(msg))
		if err != nil {
			// xdg's error text may quote the message; report its SCRAM
			// error code (e=...) instead, or a fixed phrase.
			return nil, false, failf("%s: bad client-first-message (%s)", s.mechanism, codeOr(out, "malformed"))
		}
		if az := s.conv.AuthzID(); az != "" && az != s.conv.Username() {
			return nil, false, failf("%s: authorization id differs from the username", s.mechanism)
		}
		s.clientFirst, s.serverFirst = string(msg), out
		return []byte(out), false, nil
	default:
		if out, ok, err := s.finalQuirk(msg); ok {
			return out, err == nil, err
		}
		out, err := s.conv.Step(string(msg))
		if err != nil || !s.conv.Valid() || s.madeUp {
			// A made-up credential fails here too, with the message of a
			// wrong password, whatever proof the client sent.
			code := codeOr(out, "malformed client-final-message")
			if s.madeUp && err == nil {
				code = scram.ErrInvalidProof
			}
			return nil, false, failf("%s: invalid credentials (%s)", s.mechanism, code)
		}
		s.principal = "User:" + s.conv.Username()
		return []byte(out), true, nil
	}
}

func (s *scramSession) Principal() string { return s.principal }

// codeOr returns xdg's server error message when it is one of the SCRAM
// error codes (they quote nothing the client sent), else fallback.
func codeOr(out, fallback string) string {
	if len(out) > 2 && out[:2] == "e=" {
		return out
	}
	return fallback
}

// madeUpCredential returns the credential a user without one appears to
// have: the same for the same (mechanism, user) during the Authenticator's
// life, different between them, and impossible to authenticate against
// (scramSession fails any proof when madeUp is set).
func (a *Authenticator) madeUpCredential(mechanism, user string) Credential {
	mac := hmac.New(sha256.New, a.secret[:])
	fmt.Fprintf(mac, "%s\x00%s", mechanism, user)
	salt := mac.Sum(nil)
	size := hashFor(mechanism)().Size()
	key := make([]byte, size) // zero keys: never the hash of a real ClientKey in practice
	return Credential{Mechanism: mechanism, Salt: salt, StoredKey: key, ServerKey: key, Iterations: DefaultIterations}
}

// hashFor returns the hash of a SCRAM mechanism.
// REQUIRES: mechanism is ScramSHA256 or ScramSHA512.
func hashFor(mechanism string) scram.HashGeneratorFcn {
	if mechanism == ScramSHA512 {
		return scram.SHA512
	}
	return scram.SHA256
}

// isScram reports whether mechanism is a SCRAM mechanism this package knows.
func isScram(mechanism string) bool { return mechanism == ScramSHA256 || mechanism == ScramSHA512 }

// finalQuirk verifies the client-final-message of librdkafka (before
// 2.x's fix; Debian's kcat uses 2.0.2), which sends its client nonce in
// front of the whole nonce of the server-first-message ("r=" c-nonce +
// c-nonce + s-nonce). Kafka accepts it, checking only that the nonce ends
// with the server's (ScramSaslServer), so Sluice does too; xdg-go/scram
// insists on equality, so this one case is verified here, with the same
// RFC 5802 computation over the messages exactly as exchanged:
// ClientKey = proof XOR HMAC(StoredKey, AuthMessage), H(ClientKey) must
// be StoredKey, and the server answers v=HMAC(ServerKey, AuthMessage).
// ok is false (xdg verifies) for every other message.
func (s *scramSession) finalQuirk(msg []byte) (out []byte, ok bool, err error) {
	full, _, found := strings.Cut(strings.TrimPrefix(s.serverFirst, "r="), ",")
	gs2, first, _ := strings.Cut(s.clientFirst, ",")
	_, bare, _ := strings.Cut(first, ",") // after the authzid field
	_, cnonce, _ := strings.Cut(bare, ",r=")
	cnonce, _, _ = strings.Cut(cnonce, ",")
	c2 := string(msg)
	withoutProof, proof64, hasProof := strings.Cut(c2, ",p=")
	if !found || gs2 != "n" || !hasProof || !strings.HasPrefix(withoutProof, "c=biws,r="+cnonce+full) {
		return nil, false, nil
	}
	if rest := strings.TrimPrefix(withoutProof, "c=biws,r="+cnonce+full); rest != "" && !strings.HasPrefix(rest, ",") {
		return nil, false, nil
	}
	fail := func() ([]byte, bool, error) {
		return nil, true, failf("%s: invalid credentials (%s)", s.mechanism, scram.ErrInvalidProof)
	}
	proof, perr := base64.StdEncoding.DecodeString(proof64)
	h := hashFor(s.mechanism)
	mac := func(key []byte, m string) []byte {
		m2 := hmac.New(func() hash.Hash { return h() }, key)
		m2.Write([]byte(m))
		return m2.Sum(nil)
	}
	authMessage := bare + "," + s.serverFirst + "," + withoutProof
	sig := mac(s.cred.StoredKey, authMessage)
	if perr != nil || len(proof) != len(sig) || s.madeUp {
		return fail()
	}
	for i := range proof {
		proof[i] ^= sig[i]
	}
	hh := h()
	hh.Write(proof)
	if !hmac.Equal(hh.Sum(nil), s.cred.StoredKey) {
		return fail()
	}
	s.principal = "User:" + s.conv.Username()
	return []byte("v=" + base64.StdEncoding.EncodeToString(mac(s.cred.ServerKey, authMessage))), true, nil
}
