// Package sasl is the broker's SASL layer: the server side of the PLAIN and
// SCRAM-SHA-256/512 mechanisms as state machines a connection drives with
// the bytes of SaslAuthenticate requests (or raw frames after a
// SaslHandshake v0), the client side of the same mechanisms for
// inter-broker connections and the CLI, SCRAM credentials in Kafka's stored
// forms, and a parser for Kafka's sasl.jaas.config option text.
//
// The package knows nothing of the wire protocol or of where credentials
// live: the server maps ErrAuthenticationFailed to SASL_AUTHENTICATION_FAILED
// (58) and ErrUnsupportedMechanism to UNSUPPORTED_SASL_MECHANISM (33), and
// SCRAM credentials come from a CredentialLookup (the metastore on a single
// node, ZooKeeper in cluster mode; see CredentialStore).
//
// Secrets: no error, log line or String method of this package contains a
// password, a salted password, a stored key or a client proof. The errors
// of a Session may contain mechanism names and SCRAM error codes
// (e=invalid-proof), never the attempted user name, so a failed login for
// an unknown user and one with a wrong password read the same.
//
// Passwords are used as their UTF-8 bytes, without SASLprep, as Kafka's
// ScramFormatter, librdkafka and franz-go do; a credential created here
// authenticates a Kafka client and the other way round.
package sasl

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"slices"
)

// Mechanism names as clients send them in SaslHandshake (case-sensitive, as
// in Kafka).
const (
	Plain       = "PLAIN"
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
)

var (
	// ErrAuthenticationFailed marks every failed authentication: wrong
	// password, unknown user, malformed or tampered message, authorization
	// id not equal to the user. The error wrapping it says which in words
	// safe to log and to send to the client.
	ErrAuthenticationFailed = errors.New("sasl: authentication failed")
	// ErrUnsupportedMechanism marks a mechanism this package does not
	// implement or the Authenticator does not enable.
	ErrUnsupportedMechanism = errors.New("sasl: unsupported mechanism")
)

// Session is the server side of one authentication exchange on one
// connection. A Session is not safe for concurrent use; a connection drives
// it from one goroutine.
type Session interface {
	// Step consumes the client's next message and returns the message to
	// send back. done is true when the exchange has ended successfully:
	// send serverMsg (it may be empty) and the connection is authenticated
	// as Principal. A non-nil error wraps ErrAuthenticationFailed and ends
	// the exchange: the connection answers SASL_AUTHENTICATION_FAILED and
	// every later Step fails. clientMsg is not retained; serverMsg is owned
	// by the caller.
	Step(clientMsg []byte) (serverMsg []byte, done bool, err error)
	// Principal is "User:<name>" once Step returned done, "" before and
	// after a failure.
	Principal() string
}

// Config configures an Authenticator.
type Config struct {
	// Mechanisms is sasl.enabled.mechanisms: any of Plain, ScramSHA256 and
	// ScramSHA512. Empty enables nothing (every NewSession fails).
	Mechanisms []string
	// PlainUsers maps user name to password for PLAIN: the user_<name>
	// options of the listener's PlainLoginModule JAAS entry
	// (JAASConfig.PlainUsers). The Authenticator copies it.
	PlainUsers map[string]string
	// Credentials finds SCRAM credentials; required when a SCRAM mechanism
	// is enabled. It is called once per exchange, from the goroutine that
	// calls Step.
	Credentials CredentialLookup
	// Logger receives what an operator must know but a client must not: a
	// failing credential lookup, a stored credential with too few
	// iterations. nil: slog.Default(). Never given a password.
	Logger *slog.Logger
}

// Authenticator makes server Sessions. It is immutable after
// NewAuthenticator and safe for concurrent use.
type Authenticator struct {
	mechs  []string
	plain  map[string]string
	creds  CredentialLookup
	log    *slog.Logger
	secret [32]byte // keys the made-up SCRAM credentials of unknown users

	// nonce, when set (tests only), replaces the SCRAM server nonce generator.
	nonce func() string
}

// NewAuthenticator checks cfg and returns an Authenticator. Errors: a
// mechanism this package does not implement (wraps ErrUnsupportedMechanism),
// a SCRAM mechanism without Credentials.
func NewAuthenticator(cfg Config) (*Authenticator, error) {
	a := &Authenticator{log: cfg.Logger, creds: cfg.Credentials, plain: make(map[string]string, len(cfg.PlainUsers))}
	if a.log == nil {
		a.log = slog.Default()
	}
	for _, m := range cfg.Mechanisms {
		switch m {
		case Plain:
		case ScramSHA256, ScramSHA512:
			if cfg.Credentials == nil {
				return nil, fmt.Errorf("sasl: %s enabled without a credential store", m)
			}
		default:
			return nil, fmt.Errorf("%w: %q in sasl.enabled.mechanisms (supported: %s, %s, %s)",
				ErrUnsupportedMechanism, m, Plain, ScramSHA256, ScramSHA512)
		}
		if !slices.Contains(a.mechs, m) {
			a.mechs = append(a.mechs, m)
		}
	}
	for u, p := range cfg.PlainUsers {
		a.plain[u] = p
	}
	if _, err := rand.Read(a.secret[:]); err != nil {
		return nil, fmt.Errorf("sasl: %w", err)
	}
	return a, nil
}

// Mechanisms returns the enabled mechanisms in configuration order, for the
// SaslHandshake answer. The caller owns the slice.
func (a *Authenticator) Mechanisms() []string { return slices.Clone(a.mechs) }

// Enabled reports whether mechanism is enabled.
func (a *Authenticator) Enabled(mechanism string) bool { return slices.Contains(a.mechs, mechanism) }

// NewSession starts the server side of one exchange with mechanism, the name
// the client sent in SaslHandshake. Errors: ErrUnsupportedMechanism when it
// is not enabled.
func (a *Authenticator) NewSession(mechanism string) (Session, error) {
	if !a.Enabled(mechanism) {
		return nil, fmt.Errorf("%w: %q (enabled: %v)", ErrUnsupportedMechanism, mechanism, a.mechs)
	}
	switch mechanism {
	case Plain:
		return &plainSession{a: a}, nil
	default:
		return newScramSession(a, mechanism), nil
	}
}

// failf returns an error wrapping ErrAuthenticationFailed with a detail.
// The detail must never hold a password, a proof or the user name.
func failf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrAuthenticationFailed, fmt.Sprintf(format, args...))
}

// equalSecret compares two secrets in time that depends on neither their
// contents nor their lengths (subtle.ConstantTimeCompare returns early on a
// length mismatch, so both sides are hashed to one length first).
func equalSecret(a, b string) bool {
	ha, hb := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return hmac.Equal(ha[:], hb[:])
}
