package share

import (
	"testing"
	"time"
)

// TestStatsCountTransitions: every way a record moves is counted once,
// lock expiries and delivery-limit archivals included (limit 3), and a
// reset keeping the counts continues them.
func TestStatsCountTransitions(t *testing.T) {
	cfg := testConfig()
	p := New(0)
	now := t0
	p.Acquire("a", now, 10, 10, cfg) // 0-9, delivery 1
	if err := p.Acknowledge("a", now, []AckBatch{
		{First: 0, Last: 1, Types: []AckType{AckAccept}},
		{First: 2, Last: 2, Types: []AckType{AckReject}},
		{First: 3, Last: 3, Types: []AckType{AckGap}},
		{First: 4, Last: 4, Types: []AckType{AckRelease}},
	}, false, cfg); err != nil {
		t.Fatal(err)
	}
	// 4-9 expire twice more: at the third delivery's expiry they reach
	// the limit and are archived.
	for range 2 {
		now = now.Add(cfg.LockDuration)
		p.Acquire("a", now, 10, 10, cfg)
	}
	now = now.Add(cfg.LockDuration)
	p.ExpireLocks(now, cfg)
	p.Acquire("b", now, 5, 15, cfg) // 10-14
	p.ReleaseMember("b", now, cfg)
	p.Acquire("b", now, 1, 15, cfg) // 10 again
	p.ArchiveAcquired("b", 10, 10)

	want := Stats{
		Acquired:          10 + 6 + 6 + 5 + 1,
		Accepted:          2,
		Released:          1 + 5,
		Rejected:          1,
		Archived:          2 + 6 + 1, // reject and gap, 4-9 at the limit, aborted 10
		LockExpiries:      5 + 6 + 6, // 5-9, then 4-9 twice
		DeliveryLimitHits: 6,
	}
	if got := p.Stats(); got != want {
		t.Fatalf("stats %+v, want %+v", got, want)
	}
	q := New(100)
	q.KeepStats(p.Stats())
	q.Acquire("c", now.Add(time.Second), 1, 101, cfg)
	if got := q.Stats().Acquired; got != want.Acquired+1 {
		t.Fatalf("after a reset: acquired %d, want %d", got, want.Acquired+1)
	}
}
