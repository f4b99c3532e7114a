package loginlimit

import (
	"net/netip"
	"testing"
	"time"
)

// clock is a Limiter's time, moved by the test.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newTest(max int, window time.Duration) (*Limiter, *clock) {
	c := &clock{t: time.Unix(1000, 0)}
	l := New(max, window)
	l.now = c.now
	return l, c
}

// TestTakeBucket: an address may fail max times at once, then one more
// per window/max; successes give their token back; other addresses are
// untouched.
func TestTakeBucket(t *testing.T) {
	l, c := newTest(5, 10*time.Second) // a token back every 2 s
	a := netip.MustParseAddr("192.0.2.1")
	b := netip.MustParseAddr("192.0.2.2")
	for i := range 5 {
		if ok, _ := l.Take(a); !ok {
			t.Fatalf("failure %d of 5 refused", i+1)
		}
	}
	ok, retry := l.Take(a)
	if ok || retry != 2*time.Second {
		t.Fatalf("6th attempt: ok=%v retry=%v, want refused, retry 2s", ok, retry)
	}
	if ok, _ := l.Take(b); !ok {
		t.Fatal("another address refused")
	}
	c.t = c.t.Add(2 * time.Second)
	if ok, _ := l.Take(a); !ok {
		t.Fatal("refused after a token refilled")
	}
	if ok, _ := l.Take(a); ok {
		t.Fatal("a second attempt passed on one refilled token")
	}
	// A success costs nothing: take and give back, many times over.
	c.t = c.t.Add(2 * time.Second)
	for range 20 {
		if ok, _ := l.Take(a); !ok {
			t.Fatal("successful logins used up the allowance")
		}
		l.Succeeded(a)
	}
	if got := l.RefusedTotal(); got != 2 {
		t.Fatalf("RefusedTotal = %d, want 2", got)
	}
}

// TestKeys: IPv4-mapped and plain IPv4 share a bucket; an IPv6 /64
// shares one; the zero address is never limited.
func TestKeys(t *testing.T) {
	l, _ := newTest(1, time.Minute)
	if ok, _ := l.Take(netip.MustParseAddr("::ffff:192.0.2.1")); !ok {
		t.Fatal("first")
	}
	if ok, _ := l.Take(netip.MustParseAddr("192.0.2.1")); ok {
		t.Fatal("mapped and unmapped spellings counted apart")
	}
	if ok, _ := l.Take(netip.MustParseAddr("2001:db8::1")); !ok {
		t.Fatal("first v6")
	}
	if ok, _ := l.Take(netip.MustParseAddr("2001:db8::ffff:2")); ok {
		t.Fatal("two addresses of one /64 counted apart")
	}
	if ok, _ := l.Take(netip.MustParseAddr("2001:db8:0:1::1")); !ok {
		t.Fatal("another /64 refused")
	}
	for range 3 {
		if ok, _ := l.Take(netip.Addr{}); !ok {
			t.Fatal("the zero address limited")
		}
	}
	var nilL *Limiter
	if ok, _ := nilL.Take(netip.MustParseAddr("192.0.2.9")); !ok {
		t.Fatal("nil Limiter refused")
	}
	if New(0, time.Minute) != nil {
		t.Fatal("max 0 is not 'no limit'")
	}
}

// TestBounded: however many addresses fail, the table never holds more
// than MaxAddresses, and the address whose last attempt is oldest is
// evicted first.
func TestBounded(t *testing.T) {
	l, c := newTest(1, time.Hour)
	first := netip.MustParseAddr("10.0.0.1")
	l.Take(first)
	for i := range 3 * MaxAddresses {
		a := netip.AddrFrom4([4]byte{11, byte(i >> 16), byte(i >> 8), byte(i)})
		l.Take(a)
		if n := l.Len(); n > MaxAddresses {
			t.Fatalf("%d addresses tracked after %d, want at most %d", n, i+2, MaxAddresses)
		}
	}
	if ok, _ := l.Take(first); !ok {
		t.Fatal("the address with the oldest attempt was not the one evicted")
	}
	// Entries whose bucket refilled are pruned as new ones come.
	c.t = c.t.Add(2 * time.Hour)
	for i := range 100 {
		l.Take(netip.AddrFrom4([4]byte{12, 0, 0, byte(i)}))
	}
	if n := l.Len(); n > MaxAddresses-300 {
		t.Fatalf("%d entries after every bucket refilled and 100 new ones, want expired ones pruned", n)
	}
}
