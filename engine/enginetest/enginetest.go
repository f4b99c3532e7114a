// Package enginetest is the conformance suite every storage backend passes.
// Run opens a fresh store of the named backend for each case (in
// t.TempDir(), with a controllable clock) and checks the engine.Log and
// engine.Store contracts as documented in package engine.
//
// Where the engine docs leave a choice open, the suite picks Apache Kafka's
// behaviour and says so next to the check ("Kafka:" comments), so that a
// backend author knows which rule failed and why it is the rule.
//
// The suite only uses the public engine interface, so a failure here is a
// contract break a broker would see, never a detail of one backend.
package enginetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/sluice/sluice/engine"
)

// Run runs every conformance case against the backend registered as name.
// The backend's package must be imported (usually blank) by the caller.
func Run(t *testing.T, name string) {
	t.Helper()
	if _, err := engine.Lookup(name); err != nil {
		t.Fatalf("backend %q: %v", name, err)
	}
	for _, c := range cases() {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, name)
			c.fn(t, h)
		})
	}
}

// testCase is one named conformance check.
type testCase struct {
	name string
	fn   func(t *testing.T, h *harness)
}

// cases lists the suite, grouped by the file that holds them.
func cases() []testCase {
	var all []testCase
	all = append(all, appendCases()...)
	all = append(all, readCases()...)
	all = append(all, timestampCases()...)
	all = append(all, truncateCases()...)
	all = append(all, retentionCases()...)
	all = append(all, lifecycleCases()...)
	all = append(all, concurrencyCases()...)
	all = append(all, optionalCases()...)
	all = append(all, compactionCases()...)
	all = append(all, txnIndexCases()...)
	all = append(all, snapshotCases()...)
	return all
}

// Clock is a controllable time source for engine.Options.Now. Safe for
// concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock stopped at start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// epoch0 is the clock's start; record timestamps in the suite are taken
// relative to it so that time-based rules (segment.ms, retention.ms) see
// plausible ages.
var epoch0 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// baseTs is epoch0 in Kafka milliseconds.
var baseTs = epoch0.UnixMilli()

// harness is one case's store: a backend, its directory and clock.
type harness struct {
	t       *testing.T
	backend string
	dir     string
	clock   *Clock
	store   engine.Store // nil while closed
}

func newHarness(t *testing.T, backend string) *harness {
	h := &harness{t: t, backend: backend, dir: t.TempDir(), clock: NewClock(epoch0)}
	h.open()
	t.Cleanup(func() {
		if h.store != nil {
			if err := h.store.Close(); err != nil {
				t.Errorf("store.Close at cleanup: %v", err)
			}
			h.store = nil
		}
	})
	return h
}

func (h *harness) open() {
	h.t.Helper()
	s, err := engine.Open(h.backend, engine.Options{Dir: h.dir, Now: h.clock.Now})
	if err != nil {
		h.t.Fatalf("engine.Open(%q): %v", h.backend, err)
	}
	h.store = s
}

// reopen closes the store cleanly and opens it again on the same directory.
func (h *harness) reopen() {
	h.t.Helper()
	if err := h.store.Close(); err != nil {
		h.t.Fatalf("store.Close: %v", err)
	}
	h.store = nil
	h.open()
}

// defaultID is the partition most cases use.
var defaultID = engine.PartitionID{Topic: "conformance", Partition: 0}

// create creates defaultID with cfg.
func (h *harness) create(cfg engine.LogConfig) engine.Log {
	h.t.Helper()
	return h.createID(defaultID, cfg)
}

func (h *harness) createID(id engine.PartitionID, cfg engine.LogConfig) engine.Log {
	h.t.Helper()
	l, err := h.store.CreateLog(id, cfg)
	if err != nil {
		h.t.Fatalf("CreateLog(%v): %v", id, err)
	}
	return l
}

func (h *harness) openID(id engine.PartitionID, cfg engine.LogConfig) engine.Log {
	h.t.Helper()
	l, err := h.store.OpenLog(id, cfg)
	if err != nil {
		h.t.Fatalf("OpenLog(%v): %v", id, err)
	}
	return l
}

// wantErr fails unless errors.Is(err, target).
func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want errors.Is %v", what, err, target)
	}
}

// noErr fails on a non-nil err.
func noErr(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}
