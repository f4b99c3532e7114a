package sched

import (
	"errors"
	"runtime"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSetProcess: every thread gets the policy, threads the runtime
// creates afterwards inherit it, and it can be set back.
func TestSetProcess(t *testing.T) {
	defer SetProcess(Normal)
	for _, p := range []Policy{Batch, Normal, Batch} {
		if kept, err := SetProcess(p); err != nil || kept != 0 {
			t.Fatalf("SetProcess(%v): kept %d, %v", p, kept, err)
		}
		checkAll(t, p)
	}
	// New threads: goroutines locked to their threads and blocked force
	// the runtime to start more.
	before, _ := ThreadPolicies()
	var started, release sync.WaitGroup
	release.Add(1)
	for i := 0; i < 4; i++ {
		started.Add(1)
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			started.Done()
			release.Wait()
		}()
	}
	started.Wait()
	after := checkAll(t, Batch)
	release.Done()
	if len(after) <= len(before) {
		t.Logf("no new thread was started (%d -> %d)", len(before), len(after))
	}
}

// TestSetProcessKeepsOtherPolicies: a thread an operator put under another
// policy (here SCHED_IDLE) keeps it.
func TestSetProcessKeepsOtherPolicies(t *testing.T) {
	defer SetProcess(Normal)
	tid := make(chan int, 1)
	done := make(chan struct{})
	go func() {
		// Locked and never unlocked: the thread exits with the
		// goroutine instead of going back to the runtime's pool.
		runtime.LockOSThread()
		tid <- unix.Gettid()
		<-done
	}()
	idle := <-tid
	if err := unix.SchedSetAttr(idle, &unix.SchedAttr{Policy: unix.SCHED_IDLE}, 0); err != nil {
		close(done)
		t.Skipf("cannot set SCHED_IDLE here: %v", err)
	}
	defer func() {
		// Put back from here: on a busy machine a SCHED_IDLE thread may
		// not get the CPU to run its own way out.
		if err := unix.SchedSetAttr(idle, &unix.SchedAttr{Policy: unix.SCHED_NORMAL}, 0); err != nil {
			t.Errorf("restoring thread %d: %v", idle, err)
		}
		close(done)
	}()
	kept, err := SetProcess(Batch)
	if err != nil || kept != 1 {
		t.Errorf("SetProcess: kept %d, %v", kept, err)
	}
	pol, _ := ThreadPolicies()
	if pol[idle] != unix.SCHED_IDLE {
		t.Errorf("the idle thread has %v", pol[idle])
	}
}

func TestParse(t *testing.T) {
	for s, want := range map[string]Policy{"batch": Batch, "normal": Normal} {
		if p, err := Parse(s); err != nil || p != want || p.String() != s {
			t.Errorf("%q: %v %v", s, p, err)
		}
	}
	for _, bad := range []string{"", "BATCH", "fifo", "idle", "other"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// checkAll fails unless every thread of the process has policy p.
func checkAll(t *testing.T, p Policy) map[int]Policy {
	t.Helper()
	pol, err := ThreadPolicies()
	if err != nil {
		t.Fatal(err)
	}
	for tid, q := range pol {
		if q != p {
			t.Fatalf("thread %d has %v, want %v", tid, q, p)
		}
	}
	return pol
}

// ThreadPolicies returns the policy of every thread of the process.
func ThreadPolicies() (map[int]Policy, error) {
	tids, err := threads()
	if err != nil {
		return nil, err
	}
	out := make(map[int]Policy, len(tids))
	for _, tid := range tids {
		attr, err := unix.SchedGetAttr(tid, 0)
		if errors.Is(err, unix.ESRCH) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[tid] = Policy(attr.Policy)
	}
	return out, nil
}
