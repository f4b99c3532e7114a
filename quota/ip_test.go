package quota

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// TestIPNames: ip entity names are literal addresses; anything else,
// host names included, is ErrInvalid with Kafka's message.
func TestIPNames(t *testing.T) {
	for _, ok := range []string{"1.2.3.4", "::1", "2001:db8::7", "::ffff:10.0.0.1"} {
		if err := CheckIPName(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "localhost", "1.2.3", "1.2.3.4.5", "256.0.0.1", "1.2.3.4/8", "fe80::1%eth0",
		" 1.2.3.4", "1.2.3.4\x00", "../x", "<default>", strings.Repeat("1", 100000)} {
		err := CheckIPName(bad)
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%.20q: %v, want ErrInvalid", bad, err)
		} else if bad == "localhost" && !strings.Contains(err.Error(), "localhost is not a valid IP or resolvable host.") {
			t.Errorf("message %q", err)
		}
	}
	a, err := ParseIPName("::ffff:10.0.0.1")
	if err != nil || a != netip.MustParseAddr("10.0.0.1") {
		t.Fatalf("mapped address parsed as %v, %v", a, err)
	}
	for _, tc := range []struct {
		key string
		v   float64
		ok  bool
	}{
		{IPKey, 10, true}, {IPKey, 2147483647, true}, {IPKey, 0, false}, {IPKey, -1, false},
		{IPKey, 1.5, false}, {IPKey, 2147483648, false}, {"producer_byte_rate", 10, false},
	} {
		if err := CheckIPValue(tc.key, tc.v); (err == nil) != tc.ok {
			t.Errorf("%s=%v: %v", tc.key, tc.v, err)
		}
	}
}

// TestIPRatesThrottle: Kafka's arithmetic for a connection rate of 1/s
// over 11 windows of 1 s: ten connections pass at once, the eleventh is
// throttled for at most a window and not counted; an address's own quota
// beats the default; removing the quotas ends the throttling; idle
// sensors are dropped.
func TestIPRatesThrottle(t *testing.T) {
	clk := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	r := NewIPRates(Config{Samples: 11, Window: time.Second, Now: clk.Now})
	a, b := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	if d := r.Throttle(a); d != 0 {
		t.Fatalf("throttled with no quota: %v", d)
	}
	r.Replace(map[string]float64{DefaultName: 1, "10.0.0.2": 1000})
	for i := 0; i < 10; i++ {
		if d := r.Throttle(a); d != 0 {
			t.Fatalf("connection %d throttled %v", i, d)
		}
	}
	d := r.Throttle(a)
	if d <= 0 || d > time.Second {
		t.Fatalf("11th connection: throttle %v, want (0, 1s]", d)
	}
	if d2 := r.Throttle(a); d2 <= 0 {
		t.Fatal("12th connection passed: the refused one was not taken back, or the rate fell")
	}
	for i := 0; i < 50; i++ {
		if d := r.Throttle(b); d != 0 {
			t.Fatalf("10.0.0.2 (own quota 1000/s) throttled at %d", i)
		}
	}
	if r.Quota(netip.MustParseAddr("::ffff:10.0.0.2")) != 1000 {
		t.Fatal("a mapped address does not find its quota")
	}
	// Two seconds on, the burst still counts over at least ten windows
	// (11/10 s > 1/s); once its window expired (11 s), it does not.
	clk.advance(2 * time.Second)
	if d := r.Throttle(a); d <= 0 {
		t.Fatal("after 2 s: not throttled")
	}
	clk.advance(9 * time.Second)
	if d := r.Throttle(a); d != 0 {
		t.Fatalf("after 11 s: throttled %v", d)
	}
	r.Set(DefaultName, 0)
	if d := r.Throttle(a); d != 0 {
		t.Fatalf("throttled after the default was removed: %v", d)
	}
	// Idle sensors go once their windows expired.
	r.Set(DefaultName, 1)
	clk.advance(12 * time.Second)
	r.Throttle(netip.MustParseAddr("10.0.0.3"))
	if n := r.Sensors(); n != 1 {
		t.Fatalf("%d sensors after the others idled, want 1", n)
	}
}
