// Package sched sets the Linux scheduling policy of the whole process.
//
// Why: a broker pinned to one core appends one request while its reader
// reads the next, two threads copying on one core. Under the default
// policy (SCHED_OTHER) every wake-up of one preempts the other: on a
// one-core broker producing 4 partitions of 1 MB batches with acks=all,
// 2,000-2,500 involuntary context switches per 1.2 GB against 600-800
// with acks=1, each one trading the L2 between two copies. SCHED_BATCH
// is the same fair scheduler without wake-up preemption (sched(7)): a
// woken broker thread waits for the running one to block or for the
// tick. Alternating builds on a loaded host, the broker's CPU per GB fell
// 17-18% at acks=all (BENCHMARKS.md, "Scheduling policy"); a thread of
// another process still preempts the broker as before.
package sched

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Policy is a scheduling policy SetProcess can set.
type Policy int

const (
	Normal Policy = unix.SCHED_NORMAL // SCHED_OTHER: the kernel's default
	Batch  Policy = unix.SCHED_BATCH
)

// Parse reads a policy's name as the config key process.scheduling.policy
// spells it: "batch" or "normal".
func Parse(s string) (Policy, error) {
	switch s {
	case "batch":
		return Batch, nil
	case "normal":
		return Normal, nil
	}
	return 0, fmt.Errorf("scheduling policy %q: use batch or normal", s)
}

func (p Policy) String() string {
	switch p {
	case Batch:
		return "batch"
	case Normal:
		return "normal"
	}
	return "policy " + strconv.Itoa(int(p))
}

// SetProcess gives every thread of the process policy p, keeping each
// one's nice value; threads created later inherit it from their creator
// (clone(2)), so the Go runtime's future threads have it too. Only
// threads running SCHED_OTHER or SCHED_BATCH are changed: a process an
// operator started under a real-time or idle policy keeps it, and
// SetProcess reports how many threads it left alone. Switching between
// the two needs no privilege.
func SetProcess(p Policy) (kept int, err error) {
	if p != Normal && p != Batch {
		return 0, fmt.Errorf("sched: %v cannot be set", p)
	}
	done := map[int]bool{}
	// A thread created while the list is read may have been cloned from
	// one not yet changed: list again until a pass finds no new thread.
	for {
		tids, err := threads()
		if err != nil {
			return kept, err
		}
		fresh := 0
		for _, tid := range tids {
			if done[tid] {
				continue
			}
			done[tid] = true
			fresh++
			changed, err := setThread(tid, p)
			if errors.Is(err, unix.ESRCH) { // the thread exited meanwhile
				continue
			}
			if err != nil {
				return kept, fmt.Errorf("sched: thread %d: %w", tid, err)
			}
			if !changed {
				kept++
			}
		}
		if fresh == 0 {
			return kept, nil
		}
	}
}

// setThread sets thread tid's policy to p unless it runs a policy other
// than SCHED_OTHER and SCHED_BATCH (changed false).
func setThread(tid int, p Policy) (changed bool, err error) {
	attr, err := unix.SchedGetAttr(tid, 0)
	if err != nil {
		return false, err
	}
	if attr.Policy != unix.SCHED_NORMAL && attr.Policy != unix.SCHED_BATCH {
		return false, nil
	}
	if attr.Policy == uint32(p) {
		return true, nil
	}
	return true, unix.SchedSetAttr(tid, &unix.SchedAttr{Policy: uint32(p), Nice: attr.Nice}, 0)
}

// threads lists the process's thread ids.
func threads() ([]int, error) {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, fmt.Errorf("sched: %w", err)
	}
	tids := make([]int, 0, len(ents))
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids, nil
}
