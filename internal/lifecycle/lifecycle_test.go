package lifecycle

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestCloseUnwindsInReverse(t *testing.T) {
	var st Stack
	var order []string
	for _, n := range []string{"a", "b", "c"} {
		if err := st.Push(n, func() error { order = append(order, n); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if got := st.Names(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("Names = %v", got)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(order, []string{"c", "b", "a"}) {
		t.Fatalf("closed in order %v, want c b a", order)
	}
	if err := st.Close(); err != nil || len(order) != 3 {
		t.Fatalf("second Close: err %v, closers run %d times", err, len(order))
	}
}

func TestCloseRunsEveryCloserAndJoinsErrors(t *testing.T) {
	var st Stack
	errB, errC := errors.New("b failed"), errors.New("c failed")
	ran := map[string]bool{}
	st.Push("a", func() error { ran["a"] = true; return nil })
	st.Push("b", func() error { ran["b"] = true; return errB })
	st.Push("none", nil)
	st.Push("c", func() error { ran["c"] = true; return errC })
	err := st.Close()
	if !ran["a"] || !ran["b"] || !ran["c"] {
		t.Fatalf("not every closer ran: %v", ran)
	}
	if !errors.Is(err, errB) || !errors.Is(err, errC) {
		t.Fatalf("Close = %v, want both errors", err)
	}
	if !strings.Contains(err.Error(), "close b: b failed") || !strings.Contains(err.Error(), "close c: c failed") {
		t.Fatalf("Close = %q, want each error to name its component", err)
	}
	if again := st.Close(); again == nil || again.Error() != err.Error() {
		t.Fatalf("second Close = %v, want the first result %v", again, err)
	}
}

func TestStartRecordsOnlyWhatStarted(t *testing.T) {
	var st Stack
	closed := 0
	if err := st.Start("ok", func() (func() error, error) { return func() error { closed++; return nil }, nil }); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := st.Start("bad", func() (func() error, error) { return func() error { closed += 100; return nil }, boom })
	if !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), "bad: ") {
		t.Fatalf("Start = %v, want boom naming the component", err)
	}
	if got := st.Names(); !slices.Equal(got, []string{"ok"}) {
		t.Fatalf("Names = %v, want only the component that started", got)
	}
	st.Close()
	if closed != 1 {
		t.Fatalf("closers ran %d, want only ok's once", closed)
	}
}

func TestPushAfterCloseClosesAtOnce(t *testing.T) {
	var st Stack
	st.Close()
	closed := false
	err := st.Push("late", func() error { closed = true; return nil })
	if !errors.Is(err, ErrClosed) || !closed {
		t.Fatalf("Push after Close: err %v, closed %v", err, closed)
	}
	if got := st.Names(); len(got) != 0 {
		t.Fatalf("Names after Close = %v", got)
	}
}

func TestGoStopsLoopOnClose(t *testing.T) {
	var st Stack
	var order []string
	var mu sync.Mutex
	st.Push("store", func() error { mu.Lock(); order = append(order, "store"); mu.Unlock(); return nil })
	started := make(chan struct{})
	st.Go("loop", func(stop <-chan struct{}) {
		close(started)
		<-stop
		mu.Lock()
		order = append(order, "loop")
		mu.Unlock()
	})
	<-started
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(order, []string{"loop", "store"}) {
		t.Fatalf("order %v: the loop must have returned before the store closed", order)
	}
}

func TestConcurrentCloseWaitsForTheFirst(t *testing.T) {
	var st Stack
	n := 0
	boom := errors.New("boom")
	release := make(chan struct{})
	entered := make(chan struct{})
	st.Push("x", func() error { n++; close(entered); <-release; return boom })
	first := make(chan error)
	go func() { first <- st.Close() }()
	<-entered
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = st.Close() }()
	}
	close(release)
	wg.Wait()
	if err := <-first; !errors.Is(err, boom) {
		t.Fatalf("first Close = %v", err)
	}
	for i, err := range errs {
		if !errors.Is(err, boom) {
			t.Fatalf("concurrent Close %d = %v, want the first's result (it must wait for it)", i, err)
		}
	}
	if n != 1 {
		t.Fatalf("closer ran %d times", n)
	}
}
