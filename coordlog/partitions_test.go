package coordlog

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// loads is a scripted Options.Load and Unload: each Load call takes the
// next answer from its own channel (created on demand), so a test decides
// when each attempt returns and with what.
type loads struct {
	mu      sync.Mutex
	answers []chan error
	calls   int
	unloads []int32
	started chan int // the number of each Load call, as it starts
}

func newLoads() *loads { return &loads{started: make(chan int, 100)} }

func (l *loads) answer(n int) chan error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.answers) <= n {
		l.answers = append(l.answers, make(chan error, 1))
	}
	return l.answers[n]
}

// load ignores current: a scripted answer stands for the whole load.
func (l *loads) load(i int32, current func() bool) error {
	l.mu.Lock()
	n := l.calls
	l.calls++
	l.mu.Unlock()
	l.started <- n
	return <-l.answer(n)
}

func (l *loads) unload(i int32) {
	l.mu.Lock()
	l.unloads = append(l.unloads, i)
	l.mu.Unlock()
}

func (l *loads) counts() (calls, unloads int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls, len(l.unloads)
}

// noStats adapts a load that reports nothing to Options.Load.
func noStats(load func(int32, func() bool) error) func(int32, func() bool) (Loaded, error) {
	return func(i int32, current func() bool) (Loaded, error) { return Loaded{}, load(i, current) }
}

func newTestPartitions(l *loads, backoff time.Duration) *Partitions {
	return New(Options{Topic: "__internal", Load: noStats(l.load), Unload: l.unload, RetryBackoff: backoff})
}

// waitLoaded waits until partition i is owned and loaded.
func waitLoaded(t *testing.T, ps *Partitions, i int32) {
	t.Helper()
	for {
		owned, loading := ps.State(i)
		if !owned {
			t.Fatalf("partition %d not owned while waiting for its load", i)
		}
		if !loading {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

func TestPartitionsLoadThenUnload(t *testing.T) {
	l := newLoads()
	ps := newTestPartitions(l, time.Hour)
	defer ps.Close()
	if owned, _ := ps.State(3); owned {
		t.Fatal("owned before OnRole")
	}
	ps.OnRole(3, true)
	<-l.started
	if owned, loading := ps.State(3); !owned || !loading {
		t.Fatalf("State during load = %v, %v; want owned, loading", owned, loading)
	}
	ps.OnRole(3, true) // restated: no second load
	l.answer(0) <- nil
	waitLoaded(t, ps, 3)
	if owned, _ := ps.State(4); owned {
		t.Error("partition 4 owned")
	}
	ps.OnRole(3, false)
	if owned, _ := ps.State(3); owned {
		t.Error("owned after losing leadership")
	}
	ps.OnRole(3, false) // restated: no second unload
	ps.OnRole(4, false) // never led: no unload
	if calls, unloads := l.counts(); calls != 1 || unloads != 1 {
		t.Errorf("%d loads, %d unloads; want 1 each", calls, unloads)
	}
}

func TestPartitionsRetry(t *testing.T) {
	l := newLoads()
	ps := newTestPartitions(l, time.Millisecond)
	defer ps.Close()
	l.answer(0) <- errors.New("attempt 0 fails")
	l.answer(1) <- errors.New("attempt 1 fails")
	l.answer(2) <- nil
	ps.OnRole(0, true)
	waitLoaded(t, ps, 0)
	if calls, _ := l.counts(); calls != 3 {
		t.Errorf("%d load attempts, want 3", calls)
	}
}

// TestPartitionsStaleLoad: a load that lost its leadership while it ran
// never marks the partition loaded, even once this broker leads it again
// (that leadership has a load of its own).
func TestPartitionsStaleLoad(t *testing.T) {
	l := newLoads()
	ps := newTestPartitions(l, time.Hour)
	ps.OnRole(0, true)
	<-l.started
	ps.OnRole(0, false)
	if _, unloads := l.counts(); unloads != 1 {
		t.Fatalf("%d unloads on losing leadership, want 1 at once", unloads)
	}
	ps.OnRole(0, true)
	l.answer(0) <- nil                         // the stale load succeeds
	<-l.started                                // the current one starts once the stale one returned
	l.answer(1) <- errors.New("current fails") // and waits an hour to retry
	ps.Close()                                 // ends the wait; both loads have returned
	if owned, loading := ps.State(0); !owned || !loading {
		t.Errorf("State = %v, %v; want owned and still loading", owned, loading)
	}
	if calls, _ := l.counts(); calls != 2 {
		t.Errorf("%d load attempts, want 2", calls)
	}
}

// TestPartitionsCloseStopsRetries: Close ends the backoff of a failing load
// and waits for it; after Close, leadership starts no load.
func TestPartitionsCloseStopsRetries(t *testing.T) {
	l := newLoads()
	ps := newTestPartitions(l, time.Hour)
	ps.OnRole(0, true)
	l.answer(0) <- errors.New("fails")
	<-l.started
	ps.Close()
	ps.Close() // idempotent
	ps.OnRole(1, true)
	if owned, loading := ps.State(1); !owned || !loading {
		t.Errorf("State after Close = %v, %v; want owned, loading", owned, loading)
	}
	if calls, _ := l.counts(); calls != 1 {
		t.Errorf("%d load attempts, want 1", calls)
	}
}

// TestPartitionsLoadPanics: a load that panics (a bug in a state machine's
// replay) is retried like a failed one; the broker goes on.
func TestPartitionsLoadPanics(t *testing.T) {
	calls := 0
	ps := New(Options{Topic: "__internal", RetryBackoff: time.Millisecond,
		Load: noStats(func(int32, func() bool) error {
			calls++
			if calls == 1 {
				panic("replay bug")
			}
			return nil
		}),
		Unload: func(int32) {},
	})
	defer ps.Close()
	ps.OnRole(0, true)
	waitLoaded(t, ps, 0)
	if calls != 2 {
		t.Fatalf("%d load attempts, want 2", calls)
	}
}

// TestPartitionsLaterGenerationInstallsLast: generation 1's load is slow;
// meanwhile this broker loses and regains the leadership (generation 2).
// Whether generation 1 is slow before it checks current (it then returns
// ErrStale: done, no warning, no retry) or while it installs (it had
// checked current in time), generation 2's load runs after it and its view
// is the one left installed.
func TestPartitionsLaterGenerationInstallsLast(t *testing.T) {
	for _, tc := range []struct {
		name           string
		slowInstall    bool // generation 1 blocks after current, not before
		wantGen1Result error
	}{
		{name: "slow replay", slowInstall: false, wantGen1Result: ErrStale},
		{name: "slow install", slowInstall: true, wantGen1Result: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var (
				mu    sync.Mutex
				calls int
				view  int // the generation whose state is installed
			)
			blocked := make(chan struct{})     // generation 1 reached its blocking point
			release := make(chan struct{})     // lets generation 1 go on
			gen1Done := make(chan error, 1)    // generation 1's result
			laterStarted := make(chan int, 10) // later loads, as they start
			install := func(n int) {
				mu.Lock()
				view = n
				mu.Unlock()
			}
			warns := &countHandler{}
			ps := New(Options{Topic: "__internal", RetryBackoff: time.Hour, Logger: slog.New(warns),
				Load: noStats(func(_ int32, current func() bool) (err error) {
					mu.Lock()
					calls++
					n := calls
					mu.Unlock()
					if n != 1 {
						laterStarted <- n
						if !current() {
							return ErrStale
						}
						install(n)
						return nil
					}
					defer func() { gen1Done <- err }()
					if !tc.slowInstall {
						close(blocked)
						<-release
					}
					if !current() {
						return ErrStale
					}
					if tc.slowInstall {
						close(blocked)
						<-release
					}
					install(n)
					return nil
				}),
				Unload: func(int32) {},
			})
			defer ps.Close()
			ps.OnRole(0, true)
			<-blocked
			ps.OnRole(0, false)
			ps.OnRole(0, true)
			// Generation 2's load must wait for generation 1's. If it does
			// not, let it install first, the order that loses its view. The
			// wait only gives a broken Partitions the chance to show; a
			// correct one passes however long it is.
			select {
			case <-laterStarted:
				t.Error("generation 2's load started while generation 1's was running")
				waitLoaded(t, ps, 0)
			case <-time.After(20 * time.Millisecond):
			}
			close(release)
			if err := <-gen1Done; !errors.Is(err, tc.wantGen1Result) {
				t.Errorf("generation 1's load returned %v, want %v", err, tc.wantGen1Result)
			}
			waitLoaded(t, ps, 0)
			mu.Lock()
			defer mu.Unlock()
			if view != 2 {
				t.Errorf("installed view is generation %d's, want 2", view)
			}
			if calls != 2 {
				t.Errorf("%d load attempts, want 2", calls)
			}
			if n := warns.count(); n != 0 {
				t.Errorf("%d warnings logged, want none", n)
			}
		})
	}
}

// countHandler is a slog.Handler that counts the records at Warn or above.
type countHandler struct {
	mu sync.Mutex
	n  int
}

func (h *countHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		h.mu.Lock()
		h.n++
		h.mu.Unlock()
	}
	return nil
}
func (h *countHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countHandler) WithGroup(string) slog.Handler      { return h }

func (h *countHandler) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

// TestPartitionsLoadedLogLine: the "loaded partition" line carries what the
// successful attempt reported (its replay stats and the state machine's
// summary) and how many attempts the load took.
func TestPartitionsLoadedLogLine(t *testing.T) {
	var buf syncBuffer
	calls := 0
	ps := New(Options{Topic: "__internal", RetryBackoff: time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&buf, nil)),
		Load: func(int32, func() bool) (Loaded, error) {
			calls++
			if calls == 1 {
				return Loaded{Replay: ReplayStats{Records: 99}}, errors.New("fails")
			}
			return Loaded{Replay: ReplayStats{Batches: 2, Records: 7, Bytes: 300}, State: []any{"groups", 1, "offsets", 5}}, nil
		},
		Unload: func(int32) {},
	})
	defer ps.Close()
	ps.OnRole(4, true)
	waitLoaded(t, ps, 4)
	var line string
	for _, l := range strings.Split(buf.String(), "\n") {
		if strings.Contains(l, "coordlog: loaded partition") {
			line = l
		}
	}
	for _, want := range []string{"topic=__internal", "partition=4", "took=", "attempts=2", "records=7", "batches=2", "bytes=300", "groups=1", "offsets=5"} {
		if !strings.Contains(line, want) {
			t.Errorf("load line %q lacks %q", line, want)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a logger.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestWaitLoaded: WaitLoaded returns nil once the load installed its state,
// ErrNotOwned for a partition not led here or whose leadership ended while
// it waited, and ctx's error when ctx ends first.
func TestWaitLoaded(t *testing.T) {
	release := make(chan struct{})
	ps := New(Options{
		Topic: "t",
		Load: func(i int32, current func() bool) (Loaded, error) {
			if i == 1 {
				<-release
			}
			return Loaded{}, nil
		},
		Unload: func(int32) {},
	})
	defer ps.Close()
	ctx := context.Background()
	if err := ps.WaitLoaded(ctx, 0); !errors.Is(err, ErrNotOwned) {
		t.Fatalf("WaitLoaded of an unowned partition: %v, want ErrNotOwned", err)
	}
	ps.OnRole(0, true)
	if err := ps.WaitLoaded(ctx, 0); err != nil {
		t.Fatalf("WaitLoaded(0): %v", err)
	}
	if owned, loading := ps.State(0); !owned || loading {
		t.Fatalf("after WaitLoaded: owned %v loading %v", owned, loading)
	}

	if ps.Loading() {
		t.Fatal("Loading with every partition loaded")
	}
	ps.OnRole(1, true) // its load blocks until release
	if !ps.Loading() {
		t.Fatal("not Loading while partition 1 loads")
	}
	short, cancel := context.WithCancel(ctx)
	cancel()
	if err := ps.WaitLoaded(short, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitLoaded with a done ctx: %v, want context.Canceled", err)
	}
	done := make(chan error, 1)
	go func() { done <- ps.WaitLoaded(ctx, 1) }()
	ps.OnRole(1, false)
	if err := <-done; !errors.Is(err, ErrNotOwned) {
		t.Fatalf("WaitLoaded across a lost leadership: %v, want ErrNotOwned", err)
	}
	if ps.Loading() {
		t.Fatal("Loading after the loading partition was lost")
	}
	close(release)
}
