package sasl

// PLAIN (RFC 4616), as Kafka's PlainSaslServer runs it: one client message
//
//	[authzid] NUL authcid NUL passwd      (UTF-8, no length limit enforced)
//
// answered with an empty message. The password is compared in constant
// time against the listener's user_<name> JAAS option; authzid must be
// empty or equal to authcid (Kafka has no impersonation).

import (
	"bytes"
	"unicode/utf8"
)

// plainSession is the server side of one PLAIN exchange.
type plainSession struct {
	a         *Authenticator
	ended     bool
	principal string
}

// dummyPassword is compared against when the user is unknown, so an unknown
// user costs the same time as a wrong password.
const dummyPassword = "sluice: no such user"

func (s *plainSession) Step(msg []byte) ([]byte, bool, error) {
	if s.ended {
		return nil, false, failf("PLAIN: the exchange has already ended")
	}
	s.ended = true
	authzid, user, pass, err := parsePlain(msg)
	if err != nil {
		return nil, false, err
	}
	want, known := s.a.plain[user]
	if !known {
		want = dummyPassword
	}
	if ok := equalSecret(pass, want); !ok || !known {
		return nil, false, failf("PLAIN: invalid username or password")
	}
	if authzid != "" && authzid != user {
		return nil, false, failf("PLAIN: authorization id differs from the username")
	}
	s.principal = "User:" + user
	return []byte{}, true, nil
}

func (s *plainSession) Principal() string { return s.principal }

// parsePlain splits a PLAIN message into its three fields. Errors wrap
// ErrAuthenticationFailed and never quote the message.
func parsePlain(msg []byte) (authzid, user, pass string, err error) {
	if !utf8.Valid(msg) {
		return "", "", "", failf("PLAIN: message is not UTF-8")
	}
	parts := bytes.Split(msg, []byte{0})
	if len(parts) != 3 {
		return "", "", "", failf("PLAIN: message has %d NUL-separated fields, want 3", len(parts))
	}
	if len(parts[1]) == 0 {
		return "", "", "", failf("PLAIN: username not specified")
	}
	if len(parts[2]) == 0 {
		return "", "", "", failf("PLAIN: password not specified")
	}
	return string(parts[0]), string(parts[1]), string(parts[2]), nil
}

// plainMessage is the client's PLAIN message for user and password with an
// empty authzid, as Kafka's PlainSaslClient sends it.
func plainMessage(user, pass string) []byte {
	b := make([]byte, 0, 2+len(user)+len(pass))
	b = append(b, 0)
	b = append(b, user...)
	b = append(b, 0)
	return append(b, pass...)
}
