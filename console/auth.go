package console

// HTTP basic auth against the broker's users: the SASL PLAIN users of its
// JAAS configuration and its SCRAM credentials (either mechanism). A SCRAM
// credential keeps no password, so the password given is salted with the
// credential's salt and iterations (PBKDF2), turned into StoredKey =
// H(HMAC(SaltedPassword, "Client Key")) (RFC 5802 section 3) and compared
// with the stored one in constant time.

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"hash"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/auth/sasl"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Anonymous is the principal of every request when the broker has no
// authorizer.
const Anonymous = "User:ANONYMOUS"

// request is what a handler knows about who asks.
type request struct {
	principal string
	host      netip.Addr
	backend   *Backend // nil until Attach
}

// allowed reports whether the principal may do op on the resource.
func (q *request) allowed(op acl.Operation, rt acl.ResourceType, name string) bool {
	if q.backend == nil || q.backend.Authorizer == nil {
		return true
	}
	return q.backend.Authorizer.Authorize(q.principal, q.host, op, rt, name)
}

// require answers 403 with Kafka's error (code) unless the principal may
// do op on the resource; what names the refused action ("describe topic").
func (q *request) require(w http.ResponseWriter, op acl.Operation, rt acl.ResourceType, name, what string, code *kerr.Error) bool {
	if q.allowed(op, rt, name) {
		return true
	}
	writeError(w, http.StatusForbidden, "not authorized to "+what+" "+name, code.Message)
	return false
}

// authenticated wraps h: without AuthRequired every request is
// User:ANONYMOUS; with it a request needs a user of the broker (basic
// auth, else a client certificate TLSPrincipal maps), else 401 (after
// AuthFailureDelay for a wrong user or password). A basic-auth login from
// an address over its failed-login allowance (FailedLogins) is answered
// 429, after the same delay, without its password being checked.
func (s *Server) authenticated(h func(http.ResponseWriter, *http.Request, *request)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := &request{principal: Anonymous, host: remoteAddr(r), backend: s.backend.Load()}
		if !s.opts.AuthRequired {
			h(w, r, q)
			return
		}
		user, pass, ok := r.BasicAuth()
		if !ok && r.TLS != nil && len(r.TLS.PeerCertificates) > 0 && s.opts.TLSPrincipal != nil {
			// tls.Config verified the chain (ssl.client.auth requested or
			// required) before the request got here.
			p, err := s.opts.TLSPrincipal(*r.TLS)
			if err != nil || p == "" || p == Anonymous {
				s.log.Info("console: client certificate maps to no principal", "remote", r.RemoteAddr, "err", err)
				unauthorized(w, "the client certificate maps to no principal")
				return
			}
			q.principal = p
			if s.opts.OnAuthSuccess != nil {
				s.opts.OnAuthSuccess()
			}
			h(w, r, q)
			return
		}
		if !ok {
			unauthorized(w, "authentication required")
			return
		}
		limit := s.opts.FailedLogins
		if ok, retry := limit.Take(q.host); !ok {
			// Over max.failed.authentications.per.ip: refused without
			// looking at the password, so a storm of guesses from one
			// address costs no derivation.
			if s.opts.OnAuthFailure != nil {
				s.opts.OnAuthFailure()
			}
			limit.LogRefused(s.log, "http", r.RemoteAddr)
			s.authFailureDelay(r)
			secs := int64((retry + time.Second - 1) / time.Second)
			w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
			writeError(w, http.StatusTooManyRequests,
				"too many failed logins from this address (max.failed.authentications.per.ip); retry in "+strconv.FormatInt(secs, 10)+" s",
				"SASL_AUTHENTICATION_FAILED")
			return
		}
		switch s.checkUser(r.Context(), q.backend, user, pass) {
		case loginOK:
			limit.Succeeded(q.host)
			q.principal = "User:" + user
			if s.opts.OnAuthSuccess != nil {
				s.opts.OnAuthSuccess()
			}
			h(w, r, q)
		case loginUnavailable:
			limit.Release(q.host)
			writeError(w, http.StatusServiceUnavailable, "the broker is starting: its SCRAM users are not loaded yet", "")
		case loginStoreError:
			limit.Release(q.host)
			writeError(w, http.StatusServiceUnavailable, "the broker cannot read its SCRAM credentials; try again", "")
		case loginCanceled:
			// The client went away while waiting for a derivation slot.
			limit.Release(q.host)
		default:
			if s.opts.OnAuthFailure != nil {
				s.opts.OnAuthFailure()
			}
			s.log.Info("console: failed authentication", "user", user, "remote", r.RemoteAddr)
			s.authFailureDelay(r)
			unauthorized(w, "wrong user or password")
		}
	})
}

// authFailureDelay waits AuthFailureDelay before a failed or refused login
// is answered, or until the request ends.
func (s *Server) authFailureDelay(r *http.Request) {
	if d := s.opts.AuthFailureDelay; d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
		}
	}
}

func unauthorized(w http.ResponseWriter, msg string) {
	w.Header().Set("WWW-Authenticate", `Basic realm="sluice", charset="UTF-8"`)
	writeError(w, http.StatusUnauthorized, msg, "SASL_AUTHENTICATION_FAILED")
}

type loginResult int

const (
	loginFailed loginResult = iota
	loginOK
	loginUnavailable // not a PLAIN user, and SCRAM credentials not loaded yet
	loginStoreError  // the credential store could not answer
	loginCanceled    // the request ended while waiting to derive
)

// checkUser checks user and password against the PLAIN users, then the
// SCRAM credentials of b (nil: not attached yet).
//
// A failed login costs at least one PBKDF2 derivation whether or not the
// user exists (a wrong PLAIN password and an unknown user derive against
// dummyCredential), so the time of a 401 does not tell which user names
// exist. It cannot be exact: real credentials have their own iteration
// counts; the dummy has the usual 4096.
func (s *Server) checkUser(ctx context.Context, b *Backend, user, pass string) loginResult {
	if want, ok := s.opts.PlainUsers[user]; ok && user != "" {
		if equalSecret(want, pass) {
			return loginOK
		}
		return s.scram.fail(ctx, pass)
	}
	if b == nil {
		return loginUnavailable
	}
	if b.Credentials == nil || user == "" {
		return s.scram.fail(ctx, pass)
	}
	derived := false
	for _, mech := range []string{sasl.ScramSHA512, sasl.ScramSHA256} {
		c, ok, err := b.Credentials.Get(user, mech)
		if err != nil {
			s.log.Warn("console: SCRAM credential lookup failed", "user", user, "mechanism", mech, "err", err)
			return loginStoreError
		}
		if !ok {
			continue
		}
		match, err := s.scram.matches(ctx, user, pass, c)
		if err != nil {
			return loginCanceled
		}
		if match {
			return loginOK
		}
		derived = true
	}
	if !derived {
		return s.scram.fail(ctx, pass)
	}
	return loginFailed
}

// equalSecret compares two secrets in constant time (hashing first, so
// the time does not depend on their lengths either).
func equalSecret(a, b string) bool {
	ha, hb := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(ha[:], hb[:]) == 1
}

// scramLogins remembers recent successful SCRAM logins, so that a user
// of the console (which asks every second) costs one PBKDF2 derivation
// per credential and scramCacheTTL rather than one per request; and bounds
// the derivations running at once, so failed logins cannot take every
// core. An entry is keyed by a hash of the user, mechanism, password and
// salt, and holds the StoredKey it matched: a changed credential (new
// salt or key) misses.
type scramLogins struct {
	sem chan struct{} // a slot per derivation running
	mu  sync.Mutex
	ok  map[[sha256.Size]byte]scramLogin
	// derivations counts the PBKDF2 derivations done (tests).
	derivations atomic.Int64
}

type scramLogin struct {
	storedKey []byte
	expires   time.Time
}

const (
	scramCacheTTL    = 5 * time.Minute
	scramCacheMax    = 1024
	maxScramParallel = 2
)

// dummyCredential is what a failed login derives against when there is no
// real credential to (never matches: its StoredKey is no derivation's).
var dummyCredential = sasl.Credential{
	Mechanism: sasl.ScramSHA512, Iterations: 4096,
	Salt: []byte("sluice console dummy salt"), StoredKey: make([]byte, sha512.Size),
}

// fail spends one derivation against dummyCredential and answers
// loginFailed (loginCanceled if ctx ends first).
func (l *scramLogins) fail(ctx context.Context, password string) loginResult {
	if err := l.acquire(ctx); err != nil {
		return loginCanceled
	}
	l.derivations.Add(1)
	scramMatches(dummyCredential, password)
	<-l.sem
	return loginFailed
}

// acquire takes a derivation slot, or returns ctx's error if it ends
// first (a client gone while failed logins queue).
func (l *scramLogins) acquire(ctx context.Context) error {
	select {
	case l.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// matches reports whether password is c's; an error only when ctx ended
// while waiting for a derivation slot.
func (l *scramLogins) matches(ctx context.Context, user, password string, c sasl.Credential) (bool, error) {
	h := sha256.New()
	for _, part := range []string{user, c.Mechanism, password, string(c.Salt), strconv.Itoa(c.Iterations)} {
		h.Write([]byte(strconv.Itoa(len(part))))
		h.Write([]byte{0})
		h.Write([]byte(part))
	}
	var key [sha256.Size]byte
	h.Sum(key[:0])
	now := time.Now()
	l.mu.Lock()
	e, hit := l.ok[key]
	l.mu.Unlock()
	if hit && now.Before(e.expires) && subtle.ConstantTimeCompare(e.storedKey, c.StoredKey) == 1 {
		return true, nil
	}
	if err := l.acquire(ctx); err != nil {
		return false, err
	}
	l.derivations.Add(1)
	ok := scramMatches(c, password)
	<-l.sem
	if ok {
		l.mu.Lock()
		if len(l.ok) >= scramCacheMax {
			clear(l.ok)
		}
		l.ok[key] = scramLogin{storedKey: bytes.Clone(c.StoredKey), expires: now.Add(scramCacheTTL)}
		l.mu.Unlock()
	}
	return ok, nil
}

// scramMatches reports whether password derives c's StoredKey. A
// credential outside the iteration bounds (which no store accepts) never
// matches, so a login cannot be made to cost unbounded work.
func scramMatches(c sasl.Credential, password string) bool {
	var h func() hash.Hash
	switch c.Mechanism {
	case sasl.ScramSHA256:
		h = sha256.New
	case sasl.ScramSHA512:
		h = sha512.New
	default:
		return false
	}
	if c.Iterations < sasl.MinIterations || c.Iterations > sasl.MaxIterations || len(c.Salt) == 0 || len(c.StoredKey) == 0 {
		return false
	}
	salted, err := pbkdf2.Key(h, password, c.Salt, c.Iterations, h().Size())
	if err != nil {
		return false
	}
	m := hmac.New(h, salted)
	m.Write([]byte("Client Key"))
	stored := h()
	stored.Write(m.Sum(nil))
	return subtle.ConstantTimeCompare(stored.Sum(nil), c.StoredKey) == 1
}
