// Package httpauth is HTTP basic auth against the broker's users, for
// every HTTP side of the broker (the console and its API, the schema
// registry): the SASL PLAIN users of its JAAS configuration and its SCRAM
// credentials (either mechanism). A SCRAM credential keeps no password,
// so the password given is salted with the credential's salt and
// iterations (PBKDF2), turned into StoredKey = H(HMAC(SaltedPassword,
// "Client Key")) (RFC 5802 section 3) and compared with the stored one in
// constant time.
//
// A failed login costs at least one PBKDF2 derivation whether or not the
// user exists, so the time of a 401 does not tell which user names exist;
// successful SCRAM logins are remembered for scramCacheTTL, so a client
// that logs in on every request costs one derivation per credential; at
// most maxScramParallel derivations run at once, so failed logins cannot
// take every core; and a client address over its failed-login allowance
// (auth/loginlimit) is refused without its password being looked at.
//
// What an answer looks like (status, body) is the caller's: Login only
// says what happened.
package httpauth

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"hash"
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice/sluice/auth/loginlimit"
	"github.com/sluice/sluice/auth/sasl"
)

// Result is what a login came to.
type Result int

const (
	Failed        Result = iota // wrong user or password
	OK                          // the user is Login's User
	Unavailable                 // not a PLAIN user, and SCRAM credentials not loaded yet
	StoreError                  // the credential store could not answer
	Canceled                    // the request ended while waiting to derive
	NoCredentials               // the request has no basic auth
	Refused                     // the address is over its failed-login allowance
)

// Authenticator checks HTTP basic auth against the broker's users. Its
// fields are set before the first Login and not changed after; Login is
// safe for concurrent use.
type Authenticator struct {
	// PlainUsers are the SASL PLAIN users (name to password).
	PlainUsers map[string]string
	// FailedLogins bounds the failed logins of each client address (nil:
	// no bound); the broker shares one with its Kafka listeners' SASL.
	FailedLogins *loginlimit.Limiter
	// FailureDelay delays the answer to a failed or refused login
	// (connection.failed.authentication.delay.ms).
	FailureDelay time.Duration
	// OnFailure and OnSuccess are called for each failed (or refused) and
	// successful login (metrics); either may be nil.
	OnFailure, OnSuccess func()
	// Logger: nil means slog.Default(). Name prefixes its messages
	// ("console", "schemareg") and names the listener kind in
	// loginlimit's log ("http").
	Logger *slog.Logger
	Name   string

	scram scramLogins
}

// Answer is Login's verdict.
type Answer struct {
	Result Result
	// User is the user's name (OK); the principal is "User:"+User.
	User string
	// RetryAfter (Refused) is when the address may try again.
	RetryAfter time.Duration
}

// Login checks q's basic auth from host against the PLAIN users, then the
// SCRAM credentials creds (attached false: the broker has not handed them
// over yet; creds nil: PLAIN users only). A Failed or Refused answer is
// returned after FailureDelay (or when q ends).
func (a *Authenticator) Login(q *http.Request, host netip.Addr, creds sasl.CredentialLookup, attached bool) Answer {
	user, pass, ok := q.BasicAuth()
	if !ok {
		return Answer{Result: NoCredentials}
	}
	limit := a.FailedLogins
	if ok, retry := limit.Take(host); !ok {
		// Over max.failed.authentications.per.ip: refused without
		// looking at the password, so a storm of guesses from one
		// address costs no derivation.
		if a.OnFailure != nil {
			a.OnFailure()
		}
		limit.LogRefused(a.logger(), "http", q.RemoteAddr)
		a.delay(q)
		return Answer{Result: Refused, RetryAfter: retry}
	}
	res := a.Check(q.Context(), creds, attached, user, pass)
	switch res {
	case OK:
		limit.Succeeded(host)
		if a.OnSuccess != nil {
			a.OnSuccess()
		}
		return Answer{Result: OK, User: user}
	case Unavailable, StoreError, Canceled:
		limit.Release(host)
	default:
		if a.OnFailure != nil {
			a.OnFailure()
		}
		a.logger().Info(a.Name+": failed authentication", "user", user, "remote", q.RemoteAddr)
		a.delay(q)
	}
	return Answer{Result: res}
}

func (a *Authenticator) logger() *slog.Logger {
	if a.Logger == nil {
		return slog.Default()
	}
	return a.Logger
}

// delay waits FailureDelay, or until q ends.
func (a *Authenticator) delay(q *http.Request) {
	if d := a.FailureDelay; d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-q.Context().Done():
			t.Stop()
		}
	}
}

// Check checks user and password against the PLAIN users, then the SCRAM
// credentials creds (attached: see Login). It answers OK, Failed,
// Unavailable, StoreError or Canceled.
//
// A failed login costs at least one PBKDF2 derivation whether or not the
// user exists (a wrong PLAIN password and an unknown user derive against
// dummyCredential), so the time of a 401 does not tell which user names
// exist. It cannot be exact: real credentials have their own iteration
// counts; the dummy has the usual 4096.
func (a *Authenticator) Check(ctx context.Context, creds sasl.CredentialLookup, attached bool, user, pass string) Result {
	if want, ok := a.PlainUsers[user]; ok && user != "" {
		if equalSecret(want, pass) {
			return OK
		}
		return a.scram.fail(ctx, pass)
	}
	if !attached {
		return Unavailable
	}
	if creds == nil || user == "" {
		return a.scram.fail(ctx, pass)
	}
	derived := false
	for _, mech := range []string{sasl.ScramSHA512, sasl.ScramSHA256} {
		c, ok, err := creds.Get(user, mech)
		if err != nil {
			a.logger().Warn(a.Name+": SCRAM credential lookup failed", "user", user, "mechanism", mech, "err", err)
			return StoreError
		}
		if !ok {
			continue
		}
		match, err := a.scram.matches(ctx, user, pass, c)
		if err != nil {
			return Canceled
		}
		if match {
			return OK
		}
		derived = true
	}
	if !derived {
		return a.scram.fail(ctx, pass)
	}
	return Failed
}

// Derivations is the number of PBKDF2 derivations done so far (tests,
// benchmarks).
func (a *Authenticator) Derivations() int64 { return a.scram.derivations.Load() }

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
// salt or key) misses. The zero value is ready to use.
type scramLogins struct {
	once sync.Once
	sem  chan struct{} // a slot per derivation running
	mu   sync.Mutex
	ok   map[[sha256.Size]byte]scramLogin
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

func (l *scramLogins) init() {
	l.once.Do(func() {
		l.sem = make(chan struct{}, maxScramParallel)
		l.ok = map[[sha256.Size]byte]scramLogin{}
	})
}

// dummyCredential is what a failed login derives against when there is no
// real credential to (never matches: its StoredKey is no derivation's).
var dummyCredential = sasl.Credential{
	Mechanism: sasl.ScramSHA512, Iterations: 4096,
	Salt: []byte("sluice console dummy salt"), StoredKey: make([]byte, sha512.Size),
}

// fail spends one derivation against dummyCredential and answers Failed
// (Canceled if ctx ends first).
func (l *scramLogins) fail(ctx context.Context, password string) Result {
	if err := l.acquire(ctx); err != nil {
		return Canceled
	}
	l.derivations.Add(1)
	scramMatches(dummyCredential, password)
	<-l.sem
	return Failed
}

// acquire takes a derivation slot, or returns ctx's error if it ends
// first (a client gone while failed logins queue).
func (l *scramLogins) acquire(ctx context.Context) error {
	l.init()
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
	l.init()
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
