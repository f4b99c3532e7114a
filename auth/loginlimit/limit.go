// Package loginlimit bounds the failed logins of each client address, for
// the Kafka listeners' SASL exchanges and the HTTP side's basic auth alike
// (max.failed.authentications.per.ip, failed.authentications.per.ip.window.ms).
//
// Why: a login costs the broker real work (the HTTP side derives a SCRAM
// password with PBKDF2, 4096 rounds or more, on every attempt it cannot
// answer from its cache of recent successes), and nothing else stops one
// client from guessing passwords as fast as it can send them. Measured
// before this package: 500 wrong passwords from 20 clients on one address
// cost the HTTP side 2.7 CPU-seconds (BENCHMARKS.md, security).
//
// How: each address has a token bucket of max tokens, refilled at one
// token per window/max. A login attempt takes a token before the
// credentials are checked (Take) and gives it back if the login succeeds
// (Succeeded), so only failures spend them, and concurrent attempts cannot
// overdraw the bucket. An address with no token left is refused at once,
// without the password being looked at, until the bucket refills: over any
// span t an address gets at most max + t*max/window checked failures. A
// refused attempt costs a map lookup.
//
// The bucket is a virtual scheduling time (GCRA, as server/connlimit.go's
// rateLimit): tat moves one interval on per token taken; an address may
// take a token while tat is at most (max-1) intervals ahead of now, and
// an entry whose tat has passed is the same as no entry. IPv4 addresses
// count one by one; IPv6 addresses by their /64, which one host can
// usually rotate through at will.
//
// Memory is bounded: at most MaxAddresses entries (about 120 bytes each),
// the one whose last attempt is oldest evicted first. An attacker who controls more
// addresses than that can wear the eviction down to no limit for himself,
// but never grow the table, and an evicted address starts afresh with a
// full bucket, which is what a new address gets anyway.
package loginlimit

import (
	"container/list"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice/sluice/internal/logevery"
)

// MaxAddresses bounds the addresses (IPv6: /64 prefixes) a Limiter tracks.
const MaxAddresses = 16384

// refusedLogEvery is how often, at most, refused logins are logged: a
// storm makes one line a minute, not one per attempt.
const refusedLogEvery = time.Minute

// Limiter bounds the failed logins of each client address. A nil
// *Limiter allows everything. Safe for concurrent use.
type Limiter struct {
	max      int
	interval time.Duration // window/max: one token back per interval
	now      func() time.Time

	mu      sync.Mutex
	entries map[netip.Prefix]*list.Element // of *entry
	lru     list.List                      // oldest last attempt at the front

	refused atomic.Int64 // attempts refused, for metrics and tests
	logged  logevery.Counter
}

type entry struct {
	key netip.Prefix
	tat time.Time // when the bucket is full again
}

// New returns a Limiter that lets an address fail max logins at once and
// max per window over time; nil (no limit) when max <= 0 or window <= 0.
func New(max int, window time.Duration) *Limiter {
	if max <= 0 || window <= 0 {
		return nil
	}
	return &Limiter{max: max, interval: max1(window / time.Duration(max)), now: time.Now,
		entries: map[netip.Prefix]*list.Element{}}
}

func max1(d time.Duration) time.Duration {
	if d <= 0 {
		return 1
	}
	return d
}

// key is the bucket an address counts in: the address itself for IPv4,
// its /64 for IPv6. ok is false for the zero Addr (not a TCP peer), which
// is never limited.
func key(a netip.Addr) (netip.Prefix, bool) {
	if !a.IsValid() {
		return netip.Prefix{}, false
	}
	a = a.Unmap()
	bits := 32
	if a.Is6() {
		bits = 64
	}
	p, err := a.Prefix(bits)
	return p, err == nil
}

// Take charges one login attempt from addr before its credentials are
// checked. ok: go on, and call Succeeded if the login succeeds (or
// Release if it ended without an answer, such as a credential store
// error). Not ok: refuse the attempt without checking it; retryAfter is
// when addr may try again.
func (l *Limiter) Take(addr netip.Addr) (ok bool, retryAfter time.Duration) {
	if l == nil {
		return true, 0
	}
	k, limited := key(addr)
	if !limited {
		return true, 0
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	el := l.entries[k]
	var e *entry
	if el != nil {
		e = el.Value.(*entry)
	} else {
		l.pruneLocked(now)
		if len(l.entries) >= MaxAddresses {
			front := l.lru.Front()
			delete(l.entries, front.Value.(*entry).key)
			l.lru.Remove(front)
		}
		e = &entry{key: k, tat: now}
		el = l.lru.PushBack(e)
		l.entries[k] = el
	}
	if e.tat.Before(now) {
		e.tat = now
	}
	l.lru.MoveToBack(el)
	ahead := time.Duration(l.max-1) * l.interval
	if over := e.tat.Sub(now) - ahead; over > 0 {
		l.refused.Add(1)
		return false, over
	}
	e.tat = e.tat.Add(l.interval)
	return true, 0
}

// Succeeded gives back the token Take charged for a login from addr that
// succeeded: only failures spend an address's allowance.
func (l *Limiter) Succeeded(addr netip.Addr) { l.Release(addr) }

// Release gives back the token of an attempt that was neither a success
// nor a failure (the client went away, the credential store could not
// answer).
func (l *Limiter) Release(addr netip.Addr) {
	if l == nil {
		return
	}
	k, limited := key(addr)
	if !limited {
		return
	}
	l.mu.Lock()
	if el := l.entries[k]; el != nil {
		e := el.Value.(*entry)
		e.tat = e.tat.Add(-l.interval)
	}
	l.mu.Unlock()
}

// pruneLocked drops a few entries from the front whose bucket is full
// again: they mean nothing. A few per call keeps Take's cost bounded.
// REQUIRES: l.mu held.
func (l *Limiter) pruneLocked(now time.Time) {
	for range 4 {
		front := l.lru.Front()
		if front == nil {
			return
		}
		e := front.Value.(*entry)
		if e.tat.After(now) {
			return
		}
		delete(l.entries, e.key)
		l.lru.Remove(front)
	}
}

// Len is the number of addresses tracked.
func (l *Limiter) Len() int {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries)
}

// RefusedTotal is the number of attempts refused since New.
func (l *Limiter) RefusedTotal() int64 {
	if l == nil {
		return 0
	}
	return l.refused.Load()
}

// LogRefused logs a refused attempt from remote at Info, aggregated: the
// first at once, later ones counted into the next line, one a minute at
// most. side names who refused ("kafka", "http").
func (l *Limiter) LogRefused(log *slog.Logger, side, remote string) {
	if l == nil || log == nil {
		return
	}
	n, due := l.logged.Note(time.Now(), refusedLogEvery)
	if !due {
		return
	}
	log.Info("refused logins from addresses over max.failed.authentications.per.ip",
		"side", side, "refused", n, "last.remote", remote)
}
