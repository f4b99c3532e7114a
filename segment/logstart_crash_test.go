package segment

import (
	"os"
	"path/filepath"
	"testing"
)

// Retention removes a log's first segments and the process dies before
// log-start-offset-checkpoint is rewritten: the entry is below the first
// base on restart. As Kafka's LogLoader, only a tiered log takes it as its
// log start; any other log starts at its first base, as before tiered
// log starts existed. A tiered log whose topic then turns tiering off
// moves its log start to its local start, checkpointed.
func TestLogStartCrashBetweenDeleteAndCheckpoint(t *testing.T) {
	noFsync(t)
	for _, tiered := range []bool{false, true} {
		cfg := testCfg()
		cfg.RemoteStorage = tiered
		dir := t.TempDir()
		s, l := filledLog(t, dir, cfg, 1)
		mustDo(t, s.checkpointStartOffsets())
		old, err := os.ReadFile(filepath.Join(dir, logStartOffsetFile))
		mustDo(t, err)
		base := l.segs[2].base
		mustDo(t, l.DeleteBefore(base))
		crashed := copyDir(t, dir)
		// The crash hit before the checkpoint write.
		mustDo(t, os.WriteFile(filepath.Join(crashed, logStartOffsetFile), old, 0o644))
		mustDo(t, s.Close())

		s2, l2 := reopenCfg(t, crashed, cfg)
		want := base
		if tiered {
			want = 0
		}
		if l2.StartOffset() != base || l2.LogStartOffset() != want || l2.LogStartUnknown() {
			t.Errorf("tiered %v: local start %d, log start %d (unknown %v); want %d, %d",
				tiered, l2.StartOffset(), l2.LogStartOffset(), l2.LogStartUnknown(), base, want)
		}
		if tiered {
			cfg.RemoteStorage = false // tiering turned off
			mustDo(t, l2.SetConfig(cfg))
			if l2.LogStartOffset() != base {
				t.Errorf("tiering off: log start %d; want the local start %d", l2.LogStartOffset(), base)
			}
		}
		mustDo(t, s2.Close())
		s3, l3 := reopenCfg(t, crashed, tieredCfg())
		if l3.LogStartOffset() != base || l3.LogStartUnknown() {
			t.Errorf("tiered %v: after a restart as tiered: log start %d (unknown %v); want %d", tiered, l3.LogStartOffset(), l3.LogStartUnknown(), base)
		}
		mustDo(t, s3.Close())
	}
}
