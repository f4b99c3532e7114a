package segment

import (
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/sluice/sluice/engine"
)

// TestEpochCheckpointSyncedByFlush: an append that starts a leader epoch
// does not write leader-epoch-checkpoint durably (the first append of each
// of 10,000 new partitions used to wait for two fsyncs); the next flush
// writes it durably before the recovery point passes that batch; a crash
// before that flush still reopens with the epoch, recovered from the
// batches above the recovery point; and a clean close leaves it written.
func TestEpochCheckpointSyncedByFlush(t *testing.T) {
	synced, resetSynced := watchEpochWrites(t)
	dir, st, l := openEpochLog(t)
	defer st.Close()
	fill(t, l, rand.New(rand.NewSource(1)), 3, 5)
	if synced() {
		t.Fatalf("the append wrote %s durably (fsync in the produce path)", leaderEpochFile)
	}
	want := []engine.EpochEntry{{Epoch: 5, StartOffset: 0}}

	// A crash before any flush: the checkpoint, if any, lacks the epoch.
	crash := copyDir(t, dir)
	if err := os.Remove(filepath.Join(crash, filepath.Base(l.dir), leaderEpochFile)); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	s2, l2 := reopen(t, crash)
	if e := l2.LeaderEpochs(); !slices.Equal(e, want) {
		t.Fatalf("epochs after a crash that lost the unsynced checkpoint: %v, want %v", e, want)
	}
	s2.Close()

	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if !synced() {
		t.Fatalf("Flush moved the recovery point to %d without writing %s durably", l.RecoveryPoint(), leaderEpochFile)
	}
	// A later epoch: unsynced again until the next flush.
	resetSynced()
	fill(t, l, rand.New(rand.NewSource(2)), 2, 6)
	if synced() {
		t.Fatalf("the append of epoch 6 wrote %s durably", leaderEpochFile)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if !synced() {
		t.Fatalf("the second flush did not write %s durably", leaderEpochFile)
	}
	// An epoch no flush covered, then a clean close: written.
	fill(t, l, rand.New(rand.NewSource(3)), 1, 7)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := readEpochCheckpoint(filepath.Join(l.dir, leaderEpochFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0] != want[0] || got[1].Epoch != 6 || got[2].Epoch != 7 {
		t.Fatalf("checkpoint after a clean close: %v, want epochs 5, 6, 7", got)
	}
}

// TestRetentionCutsEpochsWithoutFsync: deleting the start of a log cuts
// the epoch history at the new start and writes leader-epoch-checkpoint
// in place without fsyncs (they ran under appendMu and held the
// partition's appends); the next flush round writes it durably; and a
// crash that loses the cut reopens with the history cut at the start all
// the same.
func TestRetentionCutsEpochsWithoutFsync(t *testing.T) {
	synced, resetSynced := watchEpochWrites(t)
	dir, st, l := openEpochLog(t)
	defer st.Close()
	fill(t, l, rand.New(rand.NewSource(1)), 40, 5)
	sixFrom := l.EndOffset()
	fill(t, l, rand.New(rand.NewSource(2)), 40, 6)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(filepath.Join(l.dir, leaderEpochFile))
	if err != nil {
		t.Fatal(err)
	}
	resetSynced()

	start := sixFrom + (l.EndOffset()-sixFrom)/2
	if err := l.DeleteBefore(start); err != nil {
		t.Fatal(err)
	}
	want := []engine.EpochEntry{{Epoch: 6, StartOffset: start}}
	if e := l.LeaderEpochs(); !slices.Equal(e, want) {
		t.Fatalf("epochs after deleting below %d: %v, want %v", start, e, want)
	}
	if synced() {
		t.Fatalf("deleting the log's start wrote %s durably", leaderEpochFile)
	}
	if got, err := readEpochCheckpoint(filepath.Join(l.dir, leaderEpochFile)); err != nil || !slices.Equal(got, want) {
		t.Fatalf("checkpoint after the cut: %v (%v), want %v", got, err, want)
	}

	// A crash that lost the cut: the checkpoint still holds epoch 5.
	crash := copyDir(t, dir)
	if err := os.WriteFile(filepath.Join(crash, filepath.Base(l.dir), leaderEpochFile), before, 0o644); err != nil {
		t.Fatal(err)
	}
	s2, l2 := reopen(t, crash)
	if e := l2.LeaderEpochs(); !slices.Equal(e, want) {
		t.Fatalf("epochs after a crash that lost the cut: %v, want %v", e, want)
	}
	s2.Close()

	// The next flush round (of new bytes) writes it durably.
	fill(t, l, rand.New(rand.NewSource(3)), 1, 6)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if !synced() {
		t.Fatalf("the flush after the cut did not write %s durably", leaderEpochFile)
	}
}

// watchEpochWrites turns fsyncs off and reports whether leader-epoch-
// checkpoint was written durably since the last reset.
func watchEpochWrites(t *testing.T) (synced func() bool, reset func()) {
	noFsync(t)
	var mu sync.Mutex
	var durable []string
	testHookDurableWrite = func(path string) {
		mu.Lock()
		durable = append(durable, filepath.Base(path))
		mu.Unlock()
	}
	t.Cleanup(func() { testHookDurableWrite = nil })
	synced = func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(durable, leaderEpochFile)
	}
	reset = func() {
		mu.Lock()
		durable = nil
		mu.Unlock()
	}
	return synced, reset
}

// openEpochLog opens a store in a new directory with one log of testCfg.
func openEpochLog(t *testing.T) (string, *Store, *Log) {
	dir := t.TempDir()
	st := openStore(t, dir, nil)
	el, err := st.CreateLog(tp, testCfg())
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	return dir, st, el.(*Log)
}
