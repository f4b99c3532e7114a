package server

// Authentication of connections: each listener has a security protocol
// (listener.security.protocol.map). PLAINTEXT and SSL connections are
// authenticated when they are accepted (SSL by their client certificate, if
// any); SASL_PLAINTEXT and SASL_SSL connections must complete a SASL
// exchange (17_sasl_handshake.go, 36_sasl_authenticate.go) before anything
// but ApiVersions, SaslHandshake and SaslAuthenticate is served, and their
// frames are bounded by sasl.server.max.receive.size until then. Any other
// request closes such a connection as soon as its api key is read, before
// its body is read or memory reserved for it (refuseBeforeAuth).
//
// SaslHandshake v0 (clients before Kafka 1.0, such as kafka-python pinned
// to 0.11) is followed by raw SASL tokens, each a size-prefixed frame
// without a request header, until the exchange ends. The reader, which
// runs ahead of the handler, switches to raw frames when it reads a v0
// handshake and asks the handler, after each raw token, whether the
// exchange goes on (conn.rawMore).
//
// A connection must finish its TLS handshake and, on a SASL listener, its
// first SASL exchange within connections.authentication.timeout.ms of being
// accepted, or it is closed (authTimer): the handshake reads before any
// other deadline applies, and a connection that never sends a byte would
// otherwise hold one of max.connections for good. One timer per
// connection, set at accept and stopped when it authenticates or closes;
// requests never touch it. Such closes are counted as failed
// authentications and logged at Info once a minute at most (authTimeoutLog).
//
// Re-authentication (KIP-368), as Kafka's SaslServerAuthenticator and
// SocketServer run it: with connections.max.reauth.ms set, a SASL session
// lasts that long (SaslAuthenticate v1+ tells the client) and the client
// re-authenticates in band, starting with a SaslHandshake, with the same
// mechanism and principal; a connection whose session expired is closed at
// its next request other than that SaslHandshake. Without
// connections.max.reauth.ms, or within a second of the last
// re-authentication, a SaslHandshake on an authenticated connection is
// answered ILLEGAL_SASL_STATE and begins nothing (KafkaApis). Another
// enabled mechanism is accepted by the handshake and refused at the next
// token, without an answer, and the connection closes ("SASL mechanism 'X'
// requested by client is not supported for re-authentication of mechanism
// 'Y'"); a different principal fails the re-authentication ("Cannot
// change principals during re-authentication from User.a: User.b").
// Stricter than Kafka, which would run it: a re-authentication with
// SaslHandshake v0 is answered ILLEGAL_SASL_STATE. A v0 exchange never
// tells the client a session lifetime, so no client re-authenticates that
// way, and an authenticated connection never switches back to raw frames.
//
// Failed logins are bounded per client address (auth/loginlimit,
// max.failed.authentications.per.ip): an exchange takes a token from its
// address's bucket before its first token is checked and gives it back
// if it succeeds. An address with none left is answered
// SASL_AUTHENTICATION_FAILED ("too many failed authentications from this
// address") at its first SaslAuthenticate, after
// connection.failed.authentication.delay.ms, without its credentials
// being looked at, and the connection closes.

import (
	"bufio"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/internal/logevery"
)

// SASLSession is one server-side SASL exchange (package auth/sasl).
type SASLSession interface {
	// Step consumes the client's next message and returns the server's
	// answer; done when the exchange succeeded. An error means the
	// authentication failed; it never contains a password.
	Step(clientMsg []byte) (serverMsg []byte, done bool, err error)
	// Principal is the authenticated principal ("User:alice") once done.
	Principal() string
}

// SASLAuthenticator makes SASL sessions for one listener.
type SASLAuthenticator interface {
	// Mechanisms are the enabled mechanisms (sasl.enabled.mechanisms).
	Mechanisms() []string
	// NewSession starts an exchange of mechanism (one of Mechanisms).
	NewSession(mechanism string) (SASLSession, error)
}

// ListenerSecurity says how a listener's connections authenticate.
type ListenerSecurity struct {
	// Protocol is PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL.
	Protocol string
	// SASL authenticates SASL_* listeners.
	SASL SASLAuthenticator
	// Host and Port are the listener's advertised address: Metadata,
	// DescribeCluster and FindCoordinator answer a client with the
	// address of the listener it came in on, as Kafka does.
	Host string
	Port int32
	// TLSPrincipal maps an SSL connection's client certificate to its
	// principal (nil: User:ANONYMOUS); an error (no
	// ssl.principal.mapping.rules rule matches) closes the connection.
	TLSPrincipal func(tls.ConnectionState) (string, error)
}

// sasl reports whether the protocol needs a SASL exchange.
func (ls ListenerSecurity) sasl() bool {
	return ls.Protocol == "SASL_PLAINTEXT" || ls.Protocol == "SASL_SSL"
}

// anonymous is Kafka's principal of an unauthenticated connection.
const anonymous = "User:ANONYMOUS"

var (
	// errSASLState: a SASL request out of order (ILLEGAL_SASL_STATE).
	errSASLState = errors.New("server: illegal SASL state")
	// errSASLMechanism: a mechanism not enabled on the listener
	// (UNSUPPORTED_SASL_MECHANISM).
	errSASLMechanism = errors.New("server: unsupported SASL mechanism")
	// errSASLFailed: the exchange failed (SASL_AUTHENTICATION_FAILED).
	errSASLFailed = errors.New("server: SASL authentication failed")
)

// connAuth is a connection's authentication state. Only the handler
// goroutine writes it; authenticated is also read by the reader.
type connAuth struct {
	sec ListenerSecurity
	// authenticated: requests other than the SASL ones may be served.
	authenticated atomic.Bool
	principal     string
	// session is the exchange in progress (after SaslHandshake), raw when
	// it is a v0 exchange of raw tokens.
	session SASLSession
	mech    string
	raw     bool
	// expires is when a SASL session must have re-authenticated (zero:
	// never).
	expires time.Time
	// reauthStarted is when the last re-authentication began (zero:
	// none); reauthRefused, when set, fails the re-authentication in
	// progress at its next token (another mechanism than the first).
	reauthStarted time.Time
	reauthRefused string
	// charged: the exchange in progress has taken a token of its
	// address's failed-login allowance (chargeLogin).
	charged bool
	// timer closes the connection if it has not authenticated in time
	// (nil: no bound applies). Set before the connection's goroutines
	// start, read-only after.
	timer *time.Timer
	// timerState is authPending while timer may still close the
	// connection; whoever moves it away from authPending decides
	// (authenticated, closed or timed out).
	timerState atomic.Int32
}

// timerState values.
const (
	authPending  = 1 + iota // the timer runs
	authDone                // authenticated or closed first: the timer was stopped
	authTimedOut            // the timer closed the connection
)

// authTimeoutLogEvery is how often, at most, connections closed by
// connections.authentication.timeout.ms are logged: a flood of silent
// connections makes one line a minute, not one per connection.
const authTimeoutLogEvery = time.Minute

// initAuth sets up c's authentication for its listener's security.
func (c *conn) initAuth(sec ListenerSecurity) {
	c.auth.sec = sec
	c.auth.principal = anonymous
	if sec.sasl() {
		return
	}
	c.auth.authenticated.Store(true)
	if sec.Protocol != "SSL" {
		c.lst.Authenticated() // PLAINTEXT: authenticated at accept (SSL: after the handshake)
	}
}

// startAuthTimer bounds, by connections.authentication.timeout.ms, the
// time c may take to finish its TLS handshake (a TLS connection) and its
// SASL authentication (a SASL listener). It runs at accept, after initAuth
// and before c's goroutines start.
func (c *conn) startAuthTimer() {
	d := c.s.cfg.ConnectionsAuthenticationTimeout
	_, isTLS := c.nc.(*tls.Conn)
	if d <= 0 || !isTLS && !c.auth.sec.sasl() {
		return
	}
	c.auth.timerState.Store(authPending)
	c.auth.timer = time.AfterFunc(d, c.authTimeout)
}

// stopAuthTimer stops c's authentication timer, if it still runs: c has
// authenticated or is closing. Safe to call more than once and from any
// goroutine.
func (c *conn) stopAuthTimer() {
	if c.auth.timerState.CompareAndSwap(authPending, authDone) {
		c.auth.timer.Stop()
	}
}

// authTimeout closes c, which has not authenticated in time. It closes the
// socket under a TLS connection so that nothing waits on a close_notify;
// the reader then fails and the connection is torn down as for any read
// error.
func (c *conn) authTimeout() {
	if !c.auth.timerState.CompareAndSwap(authPending, authTimedOut) {
		return
	}
	c.lst.AuthenticationFailed()
	c.s.authTimeouts.closed(c.s.log, c.nc.RemoteAddr().String(), c.s.cfg.ConnectionsAuthenticationTimeout)
	nc := c.nc
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	nc.Close()
}

// authTimedOut reports whether c was closed by its authentication timer.
func (c *conn) authTimedOut() bool {
	return c.auth.timerState.Load() == authTimedOut
}

// authTimeoutLog aggregates the log of connections closed by
// connections.authentication.timeout.ms: the first one is logged at once,
// later ones are counted into the next line, at most one per
// authTimeoutLogEvery. Safe for concurrent use; the zero value is ready.
type authTimeoutLog struct{ every logevery.Counter }

// closed notes one connection closed by the timeout, from remote.
func (l *authTimeoutLog) closed(log *slog.Logger, remote string, timeout time.Duration) {
	l.closedAt(time.Now(), log, remote, timeout)
}

func (l *authTimeoutLog) closedAt(now time.Time, log *slog.Logger, remote string, timeout time.Duration) {
	n, due := l.every.Note(now, authTimeoutLogEvery)
	if !due {
		return
	}
	log.Info("server: closed connections that did not authenticate in time",
		"connections", n, "last.remote", remote,
		"connections.authentication.timeout.ms", timeout.Milliseconds())
}

// tlsPrincipal completes the TLS handshake of an SSL connection and takes
// its principal from the client certificate. It runs on the reader before
// the first frame, so a failed handshake closes the connection.
func (c *conn) tlsPrincipal() error {
	tc, ok := c.nc.(*tls.Conn)
	if !ok {
		return nil
	}
	if err := tc.Handshake(); err != nil {
		return fmt.Errorf("server: TLS handshake: %w", err)
	}
	if c.auth.sec.Protocol == "SSL" && c.auth.sec.TLSPrincipal != nil {
		p, err := c.auth.sec.TLSPrincipal(tc.ConnectionState())
		if err != nil {
			return fmt.Errorf("server: TLS principal: %w", err)
		}
		c.auth.principal = p
	}
	if !c.auth.sec.sasl() {
		c.stopAuthTimer()
		c.lst.Authenticated()
	}
	return nil
}

// preAuthAllowed reports whether key may be served before authentication.
func preAuthAllowed(key int16) bool {
	return key == apiKeyApiVersions || key == apiKeySASLHandshake || key == apiKeySASLAuthenticate
}

// checkAuth decides whether request key may be served now: nil, or why the
// connection must close (a request before authentication, or after the
// session expired: anything but the SaslHandshake that begins a
// re-authentication, and the rest of that exchange, as Kafka's
// SocketServer does).
func (c *conn) checkAuth(key int16) error {
	a := &c.auth
	if !a.authenticated.Load() {
		if preAuthAllowed(key) {
			return nil
		}
		return fmt.Errorf("server: %s before SASL authentication", kmsg.NameForKey(key))
	}
	if !a.expires.IsZero() && a.session == nil && key != apiKeySASLHandshake && time.Now().After(a.expires) {
		return fmt.Errorf("server: SASL session of %s expired (connections.max.reauth.ms) without re-authentication", a.principal)
	}
	return nil
}

// maxFrame is the largest frame the reader accepts, authenticated or not.
func (c *conn) maxFrame(authenticated bool) int32 {
	if authenticated {
		return c.s.cfg.SocketRequestMaxBytes
	}
	return min(c.s.cfg.SASLServerMaxReceiveSize, c.s.cfg.SocketRequestMaxBytes)
}

// refuseBeforeAuth peeks at the api key of the frame whose size prefix was
// just read, on a connection that has not authenticated: nil when the
// request may be read (ApiVersions and the SASL requests), else why the
// connection must close. It reads nothing beyond the key and reserves no
// request memory, so a client cannot make the broker wait for, buffer or
// decode a body it would refuse anyway. Errors of the read itself (EOF,
// deadline) are returned as they are.
//
// It decides exactly as checkAuth would when the request is handled: the
// reader waits for the handler after every step of an exchange that can
// authenticate the connection (a raw token, SaslAuthenticate), so
// authenticated is up to date here.
func (c *conn) refuseBeforeAuth(rd *bufio.Reader) (closeErr, readErr error) {
	b, err := rd.Peek(2)
	if err != nil {
		return nil, err
	}
	return c.checkAuth(int16(binary.BigEndian.Uint16(b))), nil
}

// failAuth waits connection.failed.authentication.delay.ms (Kafka delays
// the answer so that guessing passwords is slow) and logs the failure
// with the client's address, never its password.
func (c *conn) failAuth(err error) {
	c.log.Warn("server: SASL authentication failed", "mechanism", c.auth.mech, "err", err)
	c.authFailed()
}

// authFailed counts a failed authentication and waits
// connection.failed.authentication.delay.ms (or until the connection
// closes) on the handler goroutine, which the connection has anyway.
func (c *conn) authFailed() {
	c.auth.session, c.auth.charged = nil, false
	c.lst.AuthenticationFailed()
	if d := c.s.cfg.FailedAuthenticationDelay; d > 0 {
		select {
		case <-time.After(d):
		case <-c.ctx.Done():
		}
	}
}

// chargeLogin takes, before the first token of an exchange is checked, a
// token of the failed-login allowance of the connection's address. Not ok:
// the address is over max.failed.authentications.per.ip, and retry is
// when it may try again; the caller refuses the attempt unchecked.
func (c *conn) chargeLogin() (ok bool, retry time.Duration) {
	if c.auth.charged {
		return true, 0
	}
	ok, retry = c.s.failedLogins.Take(remoteIP(c.nc))
	c.auth.charged = ok
	return ok, retry
}

// refuseLogin ends an exchange from an address over its failed-login
// allowance: counted and delayed as a failure, logged once a minute at
// most, and its message for SaslAuthenticate's error_message.
func (c *conn) refuseLogin(retry time.Duration) string {
	c.s.failedLogins.LogRefused(c.s.log, "kafka", c.nc.RemoteAddr().String())
	c.authFailed()
	return fmt.Sprintf("Authentication failed: too many failed authentications from this address (max.failed.authentications.per.ip); retry in %d ms",
		max(retry.Milliseconds(), 1))
}

// errPrincipalChanged: a re-authentication as another principal.
type errPrincipalChanged struct{ from, to string }

func (e errPrincipalChanged) Error() string {
	// Kafka's text, with its "Type.name" spelling of principals.
	dot := func(p string) string { t, n, _ := strings.Cut(p, ":"); return t + "." + n }
	return fmt.Sprintf("Cannot change principals during re-authentication from %s: %s", dot(e.from), dot(e.to))
}

func (e errPrincipalChanged) Unwrap() error { return errSASLFailed }

// reauthenticating reports whether the exchange in progress is a
// re-authentication.
func (c *conn) reauthenticating() bool { return c.auth.authenticated.Load() }

// saslDone completes a successful exchange: the principal (the same one on
// re-authentication) and the session's lifetime.
func (c *conn) saslDone() error {
	a := &c.auth
	p := a.session.Principal()
	if a.authenticated.Load() && p != a.principal {
		return errPrincipalChanged{from: a.principal, to: p}
	}
	if a.charged {
		c.s.failedLogins.Succeeded(remoteIP(c.nc))
		a.charged = false
	}
	a.principal, a.session, a.raw = p, nil, false
	a.expires = time.Time{}
	if d := c.s.cfg.ConnectionsMaxReauth; d > 0 {
		a.expires = time.Now().Add(d)
	}
	a.authenticated.Store(true)
	c.stopAuthTimer()
	c.lst.Authenticated()
	return nil
}

// sessionLifetimeMs is SaslAuthenticate's session_lifetime_ms: 0 without
// re-authentication.
func (c *conn) sessionLifetimeMs() int64 {
	if c.auth.expires.IsZero() {
		return 0
	}
	return max(time.Until(c.auth.expires).Milliseconds(), 1)
}
