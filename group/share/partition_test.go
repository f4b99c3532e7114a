package share

import (
	"errors"
	"math"
	"reflect"
	"slices"
	"testing"
	"time"
)

var t0 = time.Unix(1_700_000_000, 0)

func testConfig() Config {
	return Config{LockDuration: 30 * time.Second, DeliveryCountLimit: 3, MaxRecordLocks: 100, RenewEnabled: true}
}

func one(first, last int64, ty AckType) []AckBatch {
	return []AckBatch{{First: first, Last: last, Types: []AckType{ty}}}
}

func mustState(t *testing.T, p *Partition, off int64, want RecordState, wantDeliveries int16) {
	t.Helper()
	st, d, ok := p.Record(off)
	if !ok {
		t.Fatalf("offset %d not in flight (start %d next %d)", off, p.Start(), p.Next())
	}
	if st != want || d != wantDeliveries {
		t.Fatalf("offset %d: %v/%d deliveries, want %v/%d", off, st, d, want, wantDeliveries)
	}
}

func TestAcquireAcceptAdvancesStart(t *testing.T) {
	cfg := testConfig()
	p := New(10)
	got := p.Acquire("m1", t0, 5, 20, cfg)
	if len(got) != 1 || got[0] != (Range{10, 14, 1}) {
		t.Fatalf("acquired %v", got)
	}
	// Another member gets the next five.
	got = p.Acquire("m2", t0, 100, 20, cfg)
	if len(got) != 1 || got[0] != (Range{15, 19, 1}) {
		t.Fatalf("m2 acquired %v", got)
	}
	if err := p.Acknowledge("m1", t0, one(10, 14, AckAccept), false, cfg); err != nil {
		t.Fatal(err)
	}
	if p.Start() != 15 || p.Next() != 20 {
		t.Fatalf("start %d next %d, want 15 20", p.Start(), p.Next())
	}
	// m1 may not acknowledge m2's records.
	if err := p.Acknowledge("m1", t0, one(15, 15, AckAccept), false, cfg); !errors.Is(err, ErrInvalidRecordState) {
		t.Fatalf("foreign ack: %v", err)
	}
}

func TestReleaseRedeliversWithHigherCountThenArchivesAtLimit(t *testing.T) {
	cfg := testConfig() // limit 3
	p := New(0)
	for i := int16(1); i <= 3; i++ {
		got := p.Acquire("m", t0, 10, 1, cfg)
		if len(got) != 1 || got[0] != (Range{0, 0, i}) {
			t.Fatalf("delivery %d: acquired %v", i, got)
		}
		if err := p.Acknowledge("m", t0, one(0, 0, AckRelease), false, cfg); err != nil {
			t.Fatal(err)
		}
	}
	// The third release archived it: start moved past, nothing to acquire.
	if p.Start() != 1 || p.InFlight() != 0 {
		t.Fatalf("start %d in flight %d", p.Start(), p.InFlight())
	}
	if got := p.Acquire("m", t0, 10, 1, cfg); got != nil {
		t.Fatalf("acquired %v after archive", got)
	}
}

func TestLockExpiryReleasesToOthers(t *testing.T) {
	cfg := testConfig()
	p := New(0)
	p.Acquire("silent", t0, 3, 3, cfg)
	if got := p.Acquire("other", t0.Add(cfg.LockDuration-time.Nanosecond), 3, 3, cfg); got != nil {
		t.Fatalf("acquired %v before the lock expired", got)
	}
	got := p.Acquire("other", t0.Add(cfg.LockDuration), 3, 3, cfg)
	if len(got) != 1 || got[0] != (Range{0, 2, 2}) {
		t.Fatalf("acquired %v after expiry", got)
	}
	// The silent member's late ack is refused.
	if err := p.Acknowledge("silent", t0.Add(cfg.LockDuration), one(0, 2, AckAccept), false, cfg); !errors.Is(err, ErrInvalidRecordState) {
		t.Fatalf("late ack: %v", err)
	}
}

func TestRenew(t *testing.T) {
	cfg := testConfig()
	p := New(0)
	p.Acquire("m", t0, 1, 1, cfg)
	if err := p.Acknowledge("m", t0, one(0, 0, AckRenew), false, cfg); !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("renew without IsRenewAck: %v", err)
	}
	off := cfg
	off.RenewEnabled = false
	// A group that does not allow renewing: INVALID_RECORD_STATE, as
	// Kafka's SharePartition (KAFKA-20161).
	if err := p.Acknowledge("m", t0, one(0, 0, AckRenew), true, off); !errors.Is(err, ErrInvalidRecordState) {
		t.Fatalf("renew disabled: %v", err)
	}
	later := t0.Add(20 * time.Second)
	if err := p.Acknowledge("m", later, one(0, 0, AckRenew), true, cfg); err != nil {
		t.Fatal(err)
	}
	// Past the first lock, within the renewed one: still held.
	if n := p.ExpireLocks(t0.Add(40*time.Second), cfg); n != 0 {
		t.Fatalf("renewed lock expired: %d", n)
	}
	mustState(t, p, 0, Acquired, 1)
	if n := p.ExpireLocks(later.Add(cfg.LockDuration), cfg); n != 1 {
		t.Fatalf("renewed lock did not expire: %d", n)
	}
}

func TestRejectAndGapArchive(t *testing.T) {
	cfg := testConfig()
	p := New(0)
	p.Acquire("m", t0, 4, 4, cfg)
	batch := []AckBatch{{First: 0, Last: 3, Types: []AckType{AckAccept, AckGap, AckReject, AckRelease}}}
	if err := p.Acknowledge("m", t0, batch, false, cfg); err != nil {
		t.Fatal(err)
	}
	if p.Start() != 3 {
		t.Fatalf("start %d, want 3", p.Start())
	}
	mustState(t, p, 3, Available, 1)
}

func TestAcknowledgeIsAtomicAndBounded(t *testing.T) {
	cfg := testConfig()
	for _, tc := range []struct {
		name    string
		batches []AckBatch
		want    error
	}{
		{"first after last", []AckBatch{{First: 3, Last: 2, Types: []AckType{AckAccept}}}, ErrInvalidRequest},
		{"no types", []AckBatch{{First: 0, Last: 2}}, ErrInvalidRequest},
		{"types length mismatch", []AckBatch{{First: 0, Last: 2, Types: []AckType{1, 1}}}, ErrInvalidRequest},
		{"unknown type", one(0, 0, 9), ErrInvalidRequest},
		// Kafka's codes (KafkaApis.validateAcknowledgementBatches, then
		// SharePartition.acknowledge's cache lookup): a malformed request,
		// a batch before the previous one's end (the first: before -1) or
		// past what was acquired is INVALID_REQUEST; a batch wholly below
		// the start or an offset not acquired or named twice is
		// INVALID_RECORD_STATE.
		{"before -1", one(-5, 0, AckAccept), ErrInvalidRequest},
		{"wholly below start", one(-1, -1, AckAccept), ErrInvalidRecordState},
		{"past end", one(0, 10, AckAccept), ErrInvalidRequest},
		{"huge range", one(0, math.MaxInt64, AckAccept), ErrInvalidRequest},
		{"min to max", one(math.MinInt64, math.MaxInt64, AckAccept), ErrInvalidRequest},
		{"-1 to max, per-offset types", []AckBatch{{First: -1, Last: math.MaxInt64, Types: []AckType{1, 1}}}, ErrInvalidRequest},
		{"overlap", []AckBatch{{First: 0, Last: 2, Types: []AckType{AckAccept}}, {First: 1, Last: 3, Types: []AckType{AckAccept}}}, ErrInvalidRequest},
		{"out of order", []AckBatch{{First: 3, Last: 4, Types: []AckType{AckAccept}}, {First: 0, Last: 1, Types: []AckType{AckAccept}}}, ErrInvalidRequest},
		{"touching", []AckBatch{{First: 0, Last: 2, Types: []AckType{AckAccept}}, {First: 2, Last: 3, Types: []AckType{AckAccept}}}, ErrInvalidRecordState},
		{"second batch past end", []AckBatch{{First: 0, Last: 1, Types: []AckType{AckAccept}}, {First: 2, Last: 99, Types: []AckType{AckAccept}}}, ErrInvalidRequest},
		{"bad type after a batch past end", []AckBatch{{First: 0, Last: 99, Types: []AckType{AckAccept}}, {First: 100, Last: 100, Types: []AckType{9}}}, ErrInvalidRequest},
		{"not acquired yet", one(0, 5, AckAccept), ErrInvalidRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := New(0)
			p.Acquire("m", t0, 5, 5, cfg)
			if err := p.Acknowledge("m", t0, tc.batches, false, cfg); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			// Nothing applied.
			for off := int64(0); off < 5; off++ {
				mustState(t, p, off, Acquired, 1)
			}
		})
	}
}

func TestInFlightBound(t *testing.T) {
	cfg := testConfig()
	cfg.MaxRecordLocks = 4
	p := New(0)
	got := p.Acquire("a", t0, 10, 100, cfg)
	if len(got) != 1 || got[0] != (Range{0, 3, 1}) {
		t.Fatalf("acquired %v", got)
	}
	// Accepting the middle does not free room: start cannot move past 0.
	p.Acknowledge("a", t0, one(1, 3, AckAccept), false, cfg)
	if got := p.Acquire("b", t0, 10, 100, cfg); got != nil {
		t.Fatalf("acquired %v beyond the bound", got)
	}
	p.Acknowledge("a", t0, one(0, 0, AckAccept), false, cfg)
	got = p.Acquire("b", t0, 10, 100, cfg)
	if len(got) != 1 || got[0] != (Range{4, 7, 1}) {
		t.Fatalf("acquired %v after the start moved", got)
	}
}

func TestReleaseMember(t *testing.T) {
	cfg := testConfig()
	p := New(0)
	p.Acquire("a", t0, 2, 10, cfg)
	p.Acquire("b", t0, 2, 10, cfg)
	if n := p.ReleaseMember("a", t0, cfg); n != 2 {
		t.Fatalf("released %d", n)
	}
	mustState(t, p, 0, Available, 1)
	mustState(t, p, 2, Acquired, 1)
	got := p.Acquire("b", t0, 10, 4, cfg)
	if len(got) != 1 || got[0] != (Range{0, 1, 2}) {
		t.Fatalf("acquired %v", got)
	}
}

func TestRedeliveryBackoff(t *testing.T) {
	cfg := testConfig()
	cfg.DeliveryCountLimit = 10
	cfg.Backoff = Backoff{Initial: time.Second, Max: 5 * time.Second, Multiplier: 2}
	p := New(0)
	now := t0
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second} {
		got := p.Acquire("m", now, 1, 1, cfg)
		if len(got) != 1 || got[0].DeliveryCount != int16(i+1) {
			t.Fatalf("delivery %d: %v", i+1, got)
		}
		if err := p.Acknowledge("m", now, one(0, 0, AckRelease), false, cfg); err != nil {
			t.Fatal(err)
		}
		if got := p.Acquire("m", now.Add(want-time.Nanosecond), 1, 1, cfg); got != nil {
			t.Fatalf("after release %d: acquired %v before the backoff %v", i+1, got, want)
		}
		if d, ok := p.NextDeadline(); !ok || !d.Equal(now.Add(want)) {
			t.Fatalf("after release %d: deadline %v %v, want %v", i+1, d, ok, now.Add(want))
		}
		now = now.Add(want)
	}
	// A lock expiry backs off too (fixed backoff this time).
	cfg.Backoff = Backoff{Initial: 3 * time.Second}
	p.Acquire("m", now, 1, 1, cfg)
	now = now.Add(cfg.LockDuration)
	p.ExpireLocks(now, cfg)
	if got := p.Acquire("m", now.Add(3*time.Second-1), 1, 1, cfg); got != nil {
		t.Fatalf("acquired %v during the backoff after expiry", got)
	}
	if got := p.Acquire("m", now.Add(3*time.Second), 1, 1, cfg); len(got) != 1 {
		t.Fatalf("not acquired after the backoff: %v", got)
	}
}

func TestBackoffDelay(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    Backoff
		n    int16
		want time.Duration
	}{
		{"off", Backoff{}, 3, 0},
		{"fixed", Backoff{Initial: time.Second}, 7, time.Second},
		{"exp", Backoff{Initial: time.Second, Multiplier: 3}, 3, 9 * time.Second},
		{"capped", Backoff{Initial: time.Second, Multiplier: 3, Max: 2 * time.Second}, 3, 2 * time.Second},
		{"huge uncapped", Backoff{Initial: time.Hour, Multiplier: 1000}, math.MaxInt16, math.MaxInt64 / 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.b.delay(tc.n); got != tc.want {
				t.Fatalf("delay(%d) = %v, want %v", tc.n, got, tc.want)
			}
		})
	}
}

func TestArchiveAcquiredAndAdvanceStart(t *testing.T) {
	cfg := testConfig()
	p := New(0)
	p.Acquire("m", t0, 6, 6, cfg)
	p.ArchiveAcquired("m", 0, 2)
	if p.Start() != 3 {
		t.Fatalf("start %d", p.Start())
	}
	p.AdvanceStart(5)
	if p.Start() != 5 || p.Next() != 6 {
		t.Fatalf("start %d next %d", p.Start(), p.Next())
	}
	p.AdvanceStart(100)
	if p.Start() != 100 || p.InFlight() != 0 {
		t.Fatalf("start %d in flight %d", p.Start(), p.InFlight())
	}
}

func TestAcquireLimitBoundsRedeliveries(t *testing.T) {
	cfg := testConfig()
	p := New(0)
	p.Acquire("m", t0, 10, 10, cfg)
	p.Acknowledge("m", t0, one(0, 9, AckRelease), false, cfg)
	if off := p.FirstAcquirable(t0); off != 0 {
		t.Fatalf("first acquirable %d", off)
	}
	got := p.Acquire("m", t0, 100, 4, cfg)
	if len(got) != 1 || got[0] != (Range{0, 3, 2}) {
		t.Fatalf("acquired %v", got)
	}
	if off := p.FirstAcquirable(t0); off != 4 {
		t.Fatalf("first acquirable %d", off)
	}
}

// TestAcknowledgeManyOverlappingBatches: a request naming the same offsets
// in a million batches is refused after at most the in-flight window's work:
// batches that overlap are malformed (INVALID_REQUEST), batches that touch
// name their shared offset twice (INVALID_RECORD_STATE).
func TestAcknowledgeManyOverlappingBatches(t *testing.T) {
	cfg := testConfig()
	p := New(0)
	p.Acquire("m", t0, 10, 10, cfg)
	batches := make([]AckBatch, 1_000_000)
	for i := range batches {
		batches[i] = AckBatch{First: 0, Last: 9, Types: []AckType{AckAccept}}
	}
	if err := p.Acknowledge("m", t0, batches, false, cfg); !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("overlapping: got %v", err)
	}
	for i := range batches {
		batches[i] = AckBatch{First: 9, Last: 9, Types: []AckType{AckAccept}}
	}
	batches[0].First = 0
	if err := p.Acknowledge("m", t0, batches, false, cfg); !errors.Is(err, ErrInvalidRecordState) {
		t.Fatalf("touching: got %v", err)
	}
	mustState(t, p, 0, Acquired, 1)
}

// TestAcknowledgeSkipsBelowStart: when the log start moved past records in
// flight (retention), a batch that reaches above the new start acknowledges
// what is left and skips the rest, as Kafka's
// SharePartition.checkForStartOffsetWithinBatch.
func TestAcknowledgeSkipsBelowStart(t *testing.T) {
	cfg := testConfig()
	p := New(0)
	p.Acquire("m", t0, 5, 5, cfg)
	p.AdvanceStart(2)
	if err := p.Acknowledge("m", t0, one(0, 4, AckAccept), false, cfg); err != nil {
		t.Fatal(err)
	}
	if p.Start() != 5 || p.InFlight() != 0 {
		t.Fatalf("start %d in flight %d, want 5 0", p.Start(), p.InFlight())
	}
}

// FuzzAcknowledge drives a partition with arbitrary acquisitions and
// acknowledgement batches. Invariants: no panic; an acknowledgement that
// fails changes nothing; the start never passes an unfinished record; the
// in-flight window never exceeds the bound.
func FuzzAcknowledge(f *testing.F) {
	f.Add(int64(0), int64(3), int8(1), int64(2), int64(5), int8(2), uint8(10))
	f.Add(int64(-1), int64(1<<62), int8(4), int64(0), int64(0), int8(0), uint8(200))
	f.Fuzz(func(t *testing.T, f1, l1 int64, t1 int8, f2, l2 int64, t2 int8, n uint8) {
		cfg := testConfig()
		cfg.MaxRecordLocks = 64
		p := New(0)
		p.Acquire("m", t0, int(n), 100, cfg)
		before := p.Snapshot()
		inflight := p.InFlight()
		err := p.Acknowledge("m", t0, []AckBatch{
			{First: f1, Last: l1, Types: []AckType{AckType(t1)}},
			{First: f2, Last: l2, Types: []AckType{AckType(t2)}},
		}, true, cfg)
		if err != nil {
			after := p.Snapshot()
			if after.StartOffset != before.StartOffset || p.InFlight() != inflight || !slices.Equal(after.Batches, before.Batches) {
				t.Fatalf("failed ack changed the state: %+v -> %+v", before, after)
			}
			return
		}
		if p.InFlight() > cfg.MaxRecordLocks {
			t.Fatalf("in flight %d", p.InFlight())
		}
		if st, _, ok := p.Record(p.Start()); ok && (st == Acknowledged || st == Archived) {
			t.Fatalf("start %d at a finished record", p.Start())
		}
	})
}

// TestDeadLetters: a rejected record and one released at the delivery-count
// limit are reported once each, in order; accepted, released-below-limit
// and gap offsets never.
func TestDeadLetters(t *testing.T) {
	cfg := Config{LockDuration: time.Minute, DeliveryCountLimit: 2, MaxRecordLocks: 100}
	now := time.Unix(1000, 0)
	p := New(0)
	if r := p.Acquire("m", now, 4, 4, cfg); len(r) == 0 {
		t.Fatal("nothing acquired")
	}
	// 0 accepted, 1 rejected, 2 released (delivery 1 < limit), 3 gap.
	if err := p.Acknowledge("m", now, []AckBatch{{First: 0, Last: 3, Types: []AckType{AckAccept, AckReject, AckRelease, AckGap}}}, false, cfg); err != nil {
		t.Fatal(err)
	}
	got := p.TakeDeadLetters()
	if want := []DeadLetter{{Offset: 1, Deliveries: 1, Rejected: true}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("dead letters %+v, want %+v", got, want)
	}
	if d := p.TakeDeadLetters(); d != nil {
		t.Fatalf("second take %+v, want none", d)
	}
	// Offset 2's second delivery, then its lock expires: the limit.
	if r := p.Acquire("m", now, 1, 4, cfg); len(r) != 1 || r[0].First != 2 || r[0].DeliveryCount != 2 {
		t.Fatalf("redelivery %+v", r)
	}
	p.ExpireLocks(now.Add(2*time.Minute), cfg)
	got = p.TakeDeadLetters()
	if want := []DeadLetter{{Offset: 2, Deliveries: 2}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("dead letters %+v, want %+v", got, want)
	}
	if st, _, ok := p.Record(2); ok && st != Archived {
		t.Fatalf("offset 2 %v, want archived", st)
	}
}
