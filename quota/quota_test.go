package quota

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time         { return c.t }
func (c *clock) add(d time.Duration)    { c.t = c.t.Add(d) }
func newClock() *clock                  { return &clock{time.UnixMilli(1_000_000_000)} }
func vals(t Type, x float64) (v Values) { v[t] = x; return v }
func pair(u, c Component) Entity        { return Entity{u, c} }

// TestPrecedence checks Kafka's order of the eight entity levels
// (ClientQuotaManager's doc, DefaultQuotaCallback.quotaLimit): each case
// adds one more specific level and expects it to win.
func TestPrecedence(t *testing.T) {
	levels := []Entity{
		{ClientID: Default},
		{ClientID: Named("c")},
		{User: Default},
		pair(Default, Default),
		pair(Default, Named("c")),
		{User: Named("u")},
		pair(Named("u"), Default),
		pair(Named("u"), Named("c")),
	}
	m := New(Config{})
	for i, e := range levels {
		m.Set(e, vals(Produce, float64(100+i)))
		if got := m.Quota(Produce, "u", "c"); got != float64(100+i) {
			t.Fatalf("after setting %v: quota %v, want %v", e, got, 100+i)
		}
	}
	// Another user of client c falls back to <default> user levels.
	if got := m.Quota(Produce, "v", "c"); got != 104 {
		t.Errorf("user v client c: %v, want 104 (users/<default>/clients/c)", got)
	}
	// Removing from the most specific end walks back down the list.
	for i := len(levels) - 1; i > 0; i-- {
		m.Set(levels[i], Values{})
		if got := m.Quota(Produce, "u", "c"); got != float64(100+i-1) {
			t.Fatalf("after removing %v: quota %v, want %v", levels[i], got, 100+i-1)
		}
	}
	m.Set(levels[0], Values{})
	if m.Enabled() {
		t.Error("enabled with no quota left")
	}
}

// TestPrecedencePerType: each quota type has its own precedence, as
// Kafka keeps one ClientQuotaManager per type: an entity that sets only
// consumer_byte_rate takes no part in produce's, so a client-id default
// producer_byte_rate still holds a user whose own entity sets only a fetch
// rate.
func TestPrecedencePerType(t *testing.T) {
	m := New(Config{})
	m.Set(Entity{User: Named("alice")}, vals(Fetch, 1000))
	m.Set(Entity{ClientID: Default}, vals(Produce, 500))
	if got := m.Quota(Produce, "alice", "c"); got != 500 {
		t.Errorf("alice's produce quota: %v, want 500 (clients/<default>)", got)
	}
	if got := m.Quota(Fetch, "alice", "c"); got != 1000 {
		t.Errorf("alice's fetch quota: %v, want 1000 (users/alice)", got)
	}
	if got := m.Quota(Fetch, "bob", "c"); got != 0 {
		t.Errorf("bob's fetch quota: %v, want none", got)
	}
	// Produce at pair level, fetch at user level: each type resolves
	// within its own levels.
	m.Set(pair(Named("alice"), Named("c")), vals(Produce, 700))
	if got, want := [2]float64{m.Quota(Produce, "alice", "c"), m.Quota(Fetch, "alice", "c")}, [2]float64{700, 1000}; got != want {
		t.Errorf("alice produce/fetch: %v, want %v", got, want)
	}
	m.Set(pair(Named("alice"), Named("c")), Values{})
	m.Set(Entity{ClientID: Default}, Values{})
	if got := m.Quota(Produce, "alice", "c"); got != 0 {
		t.Errorf("alice's produce quota after removal: %v, want none", got)
	}
	if !m.Enabled() {
		t.Error("the fetch quota is still set: enabled")
	}
}

// TestUserQuotaSharedByClients: a user quota is one rate for all of the
// user's client ids (tags (user, "")), so two clients together are held
// to it.
func TestUserQuotaSharedByClients(t *testing.T) {
	c := newClock()
	m := New(Config{Now: c.now})
	m.Set(Entity{User: Named("u")}, vals(Produce, 1000))
	// 10 samples' span (11 windows, at least 10 full): 10,000 bytes are
	// exactly the quota.
	if ms := m.Record(Produce, "u", "a", 5000); ms != 0 {
		t.Fatalf("first half throttled %d", ms)
	}
	if ms := m.Record(Produce, "u", "b", 5000); ms != 0 {
		t.Fatalf("second half throttled %d", ms)
	}
	// 1,000 more: rate 11,000/10 s = 1100/s over 1000; throttle
	// (1100-1000)/1000 × 10,000 ms = 1000 ms (QuotaUtils.throttleTime).
	if ms := m.Record(Produce, "u", "c", 1000); ms != 1000 {
		t.Fatalf("over quota: throttle %d ms, want 1000", ms)
	}
	// Another user is not affected.
	if ms := m.Record(Produce, "w", "a", 1e9); ms != 0 {
		t.Fatalf("user without quota throttled %d", ms)
	}
}

// TestRateWindowsExpire: after quota.window.num windows the old usage no
// longer counts.
func TestRateWindowsExpire(t *testing.T) {
	c := newClock()
	m := New(Config{Now: c.now})
	m.Set(Entity{ClientID: Named("a")}, vals(Fetch, 100))
	if ms := m.Record(Fetch, "", "a", 5000); ms == 0 {
		t.Fatal("not throttled at 5x the window's allowance")
	}
	c.add(12 * time.Second)
	if ms := m.Record(Fetch, "", "a", 100); ms != 0 {
		t.Fatalf("throttled %d ms after the windows expired", ms)
	}
}

// TestRequestThrottleBounded: request_percentage throttles are at most
// one window (ClientRequestQuotaManager.maxThrottleTimeMs).
func TestRequestThrottleBounded(t *testing.T) {
	c := newClock()
	m := New(Config{Now: c.now})
	m.Set(Entity{ClientID: Default}, vals(Request, 1))
	if ms := m.Record(Request, "", "x", 1e6); ms != 1000 {
		t.Fatalf("throttle %d, want 1000 (one window)", ms)
	}
}

// TestMutationStrictAndPermissive follows KIP-599: a strict quota
// accepts a request that takes the bucket below zero, refuses the next
// until it refills, and reports -tokens/rate as the throttle time.
func TestMutationStrictAndPermissive(t *testing.T) {
	c := newClock()
	m := New(Config{Now: c.now})
	m.Set(Entity{User: Named("u")}, vals(ControllerMutation, 2)) // burst 20
	q := m.NewMutation("u", "c", true)
	if err := q.Record(30); err != nil { // 20 - 30 = -10
		t.Fatalf("first mutation refused: %v", err)
	}
	if err := q.Record(1); !errors.Is(err, ErrThrottled) {
		t.Fatalf("mutation below zero: %v, want ErrThrottled", err)
	}
	if ms := q.ThrottleMs(); ms != 5000 {
		t.Fatalf("throttle %d, want 5000 (10 tokens at 2/s)", ms)
	}
	c.add(5 * time.Second)
	if err := m.NewMutation("u", "c", true).Record(1); err != nil {
		t.Fatalf("refilled bucket refused: %v", err)
	}
	p := m.NewMutation("u", "c", false)
	if err := p.Record(100); err != nil {
		t.Fatalf("permissive refused: %v", err)
	}
	if p.ThrottleMs() <= 0 {
		t.Fatal("permissive over quota not throttled")
	}
	if q := m.NewMutation("other", "c", true); q.Record(1e6) != nil || q.ThrottleMs() != 0 {
		t.Fatal("user without quota limited")
	}
}

func TestCheckValue(t *testing.T) {
	for _, tc := range []struct {
		key string
		v   float64
		ok  bool
	}{
		{"producer_byte_rate", 1024, true},
		{"producer_byte_rate", 1.5, false},
		{"producer_byte_rate", -1, false},
		{"producer_byte_rate", 0, false},
		{"consumer_byte_rate", 1e30, false},
		{"request_percentage", 0.5, true},
		{"controller_mutation_rate", 0.1, true},
		{"SCRAM-SHA-256", 1, false},
		{"nope", 1, false},
	} {
		if err := CheckValue(tc.key, tc.v); (err == nil) != tc.ok {
			t.Errorf("CheckValue(%s, %v) = %v, want ok %v", tc.key, tc.v, err, tc.ok)
		}
	}
}

// TestRecordNoQuotaAllocs: with no quota set, Record is an atomic load.
func TestRecordNoQuotaAllocs(t *testing.T) {
	m := New(Config{})
	if n := testing.AllocsPerRun(100, func() { m.Record(Produce, "u", "c", 100) }); n != 0 {
		t.Fatalf("%v allocs with no quota", n)
	}
	m.Set(Entity{User: Named("u")}, vals(Produce, 1e9))
	m.Record(Produce, "u", "c", 100)
	if n := testing.AllocsPerRun(100, func() { m.Record(Produce, "u", "c", 100) }); n != 0 {
		t.Fatalf("%v allocs with a quota and its sensor", n)
	}
}

// TestConcurrentUse: records, quota changes, resyncs and metric reads at
// once (run with -race); every record of a client over a tiny quota
// ends throttled once the quota is in place.
func TestConcurrentUse(t *testing.T) {
	m := New(Config{})
	done := make(chan struct{})
	var wg, writer sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				m.Record(Type(i%3), "u", fmt.Sprint("c", i%7), 100)
				if q := m.NewMutation("u", "c", g%2 == 0); q != nil {
					q.Record(1)
					q.ThrottleMs()
				}
			}
		}(g)
	}
	writer.Add(1)
	go func() {
		defer writer.Done()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			switch i % 3 {
			case 0:
				m.Set(Entity{User: Named("u")}, vals(Produce, 1))
			case 1:
				m.Replace(map[Entity]Values{{ClientID: Default}: vals(Fetch, 1)})
			default:
				m.Each(func(Usage) {})
			}
		}
	}()
	wg.Wait()
	close(done)
	writer.Wait()
	m.Replace(map[Entity]Values{{User: Named("u")}: vals(Produce, 1)})
	if ms := m.Record(Produce, "u", "any", 1e6); ms <= 0 {
		t.Fatalf("not throttled over a quota of 1 B/s: %d", ms)
	}
}
