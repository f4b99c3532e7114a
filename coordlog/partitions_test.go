package coordlog

import (
	"errors"
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

func (l *loads) load(i int32) error {
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

func newTestPartitions(l *loads, backoff time.Duration) *Partitions {
	return New(Options{Topic: "__internal", Load: l.load, Unload: l.unload, RetryBackoff: backoff})
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
	<-l.started
	l.answer(0) <- nil                         // the stale load succeeds
	l.answer(1) <- errors.New("current fails") // the current one waits an hour to retry
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
		Load: func(int32) error {
			calls++
			if calls == 1 {
				panic("replay bug")
			}
			return nil
		},
		Unload: func(int32) {},
	})
	defer ps.Close()
	ps.OnRole(0, true)
	waitLoaded(t, ps, 0)
	if calls != 2 {
		t.Fatalf("%d load attempts, want 2", calls)
	}
}
