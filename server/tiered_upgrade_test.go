package server

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestTieredUpgradeFromLocalStartCheckpoint: a log dir of a build before
// log start offsets below the local start existed holds a tiered
// partition's local start in log-start-offset-checkpoint (and no
// .sluice_log_start_offsets marker). After the upgrade ListOffsets -2
// still answers 0, and remote retention deletes no remote segment.
func TestTieredUpgradeFromLocalStartCheckpoint(t *testing.T) {
	dir := t.TempDir()
	const topic = "upgraded"
	b, cl := tieredWithRemote(t, dir, topic, 200)
	local, _ := listOffset(t, cl, topic, -4)
	before, _ := b.remoteLogStarts(t)
	cl.Close()
	b.close()
	if local <= 0 || len(before) == 0 {
		t.Fatalf("local start %d, %d remote segments: want local retention past remote segments", local, len(before))
	}
	old := fmt.Sprintf("0\n1\n%s 0 %d\n", topic, local)
	if err := os.WriteFile(filepath.Join(dir, "logs", "log-start-offset-checkpoint"), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "logs", ".sluice_log_start_offsets")); err != nil {
		t.Fatal(err) // this build wrote it
	}
	b = startTiered(t, dir)
	defer b.close()
	cl = mustClient(t, b.addr)
	defer cl.Close()
	e, _ := listOffset(t, cl, topic, -2)
	b.s.tiered.RunOnce()
	after, _ := b.remoteLogStarts(t)
	t.Logf("local start %d; after upgrade earliest %d; remote segments %d before, %d after the task", local, e, len(before), len(after))
	if e != 0 || len(after) != len(before) {
		t.Errorf("upgrade lost the remote-only records: earliest %d, want 0; remote segments %d, want %d", e, len(after), len(before))
	}
}
