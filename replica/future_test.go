package replica

import (
	"context"
	"math"
	"testing"
	"time"
)

// TestMoveHeldByZeroRate: replica.alter.log.dirs.io.max.bytes.per.second
// of 0 (Kafka accepts it, as kafka-reassign-partitions.sh's
// --replica-alter-log-dirs-throttle 0) holds a move back: its future log
// stays empty; a new rate (SetAlterLogDirsRate, the dynamic config's
// hook) lets the same move finish.
func TestMoveHeldByZeroRate(t *testing.T) {
	j := newJBOD(t, 2)
	m := j.manager(t)
	defer j.close(t, m)
	m.SetAlterLogDirsRate(0)
	m.create(t, "a", 1, nil) // in d0
	for range 10 {
		if _, err := m.Partition("a", 0).Append(context.Background(), batch(5, "x"), 1); err != nil {
			t.Fatal(err)
		}
	}
	m.Lock()
	err := m.AlterReplicaLogDirLocked("a", 0, j.paths[1])
	m.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	future := func() (size int64, ok bool) {
		for _, r := range m.LogDirs()[1].Replicas {
			if r.IsFuture {
				return r.Size, true
			}
		}
		return 0, false
	}
	// Held: however long we look, nothing is copied (no timing is
	// asserted: the copier takes no step at all at rate 0).
	time.Sleep(100 * time.Millisecond)
	if n, ok := future(); !ok || n != 0 || j.dirOfPartition(m, "a", 0) != 0 {
		t.Fatalf("at rate 0: future replica %v with %d bytes, a-0 in dir %d", ok, n, j.dirOfPartition(m, "a", 0))
	}
	m.SetAlterLogDirsRate(math.MaxInt64)
	waitFor(t, "the move to finish once the rate is raised", func() bool { return j.dirOfPartition(m, "a", 0) == 1 })
	if p := m.Partition("a", 0); p == nil || p.LogEndOffset() != 50 {
		t.Fatalf("a-0 after the move: %v", p)
	}
}
