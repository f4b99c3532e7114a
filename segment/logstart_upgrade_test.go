package segment

import (
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice/sluice/engine"
)

// tieredCfg is testCfg for a log of a tiered topic.
func tieredCfg() engine.LogConfig {
	c := testCfg()
	c.RemoteStorage = true
	return c
}

// filledLog opens a store in dir and creates tp's log with cfg, holding
// 60 batches from seed: several segments.
func filledLog(t *testing.T, dir string, cfg engine.LogConfig, seed int64) (*Store, *Log) {
	t.Helper()
	s := openStore(t, dir, nil)
	el, err := s.CreateLog(tp, cfg)
	if err != nil {
		t.Fatal(err)
	}
	l := el.(*Log)
	fill(t, l, rand.New(rand.NewSource(seed)), 60, 0)
	return s, l
}

// reopenCfg reopens the store in dir and tp's log with cfg.
func reopenCfg(t *testing.T, dir string, cfg engine.LogConfig) (*Store, *Log) {
	t.Helper()
	s := openStore(t, dir, nil)
	l, err := s.OpenLog(tp, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s, l.(*Log)
}

// A data dir written by a build before logStartMarkerFile: tiered local
// retention moved the local start (DeleteBefore then) and
// log-start-offset-checkpoint held it, with the records below it only in
// the remote tier. Loaded by this build, the log start must be unknown
// (settled from the remote tier), not the local start: that answered
// ListOffsets -2 with it and made remote retention delete every remote
// segment below it. The same files with the marker (written by this
// build) mean a known log start at the local start.
func TestLogStartUpgradeFromLocalStartCheckpoint(t *testing.T) {
	noFsync(t)
	dir := t.TempDir()
	s, l := filledLog(t, dir, tieredCfg(), 1)
	if len(l.segs) < 3 {
		t.Fatalf("want 3+ segments, have %d", len(l.segs))
	}
	cut := l.segs[2].base
	mustDo(t, l.DeleteBefore(cut)) // what the older build's local retention did
	mustDo(t, s.Close())
	if _, err := os.Stat(filepath.Join(dir, logStartMarkerFile)); err != nil {
		t.Fatalf("a new dir has no %s: %v", logStartMarkerFile, err)
	}
	known := copyDir(t, dir)
	mustDo(t, os.Remove(filepath.Join(dir, logStartMarkerFile))) // as the older build left it

	s2, l2 := reopenCfg(t, dir, tieredCfg())
	if !l2.LogStartUnknown() || l2.StartOffset() != cut {
		t.Errorf("upgraded: log start %d (unknown %v), local start %d; want unknown at local start %d",
			l2.LogStartOffset(), l2.LogStartUnknown(), l2.StartOffset(), cut)
	}
	mustDo(t, l2.ResolveLogStartOffset(4)) // the remote log manager
	mustDo(t, s2.Close())
	s3, l3 := reopenCfg(t, dir, tieredCfg())
	if l3.LogStartUnknown() || l3.LogStartOffset() != 4 || l3.StartOffset() != cut {
		t.Errorf("after settling and a restart: log start %d (unknown %v), local start %d; want 4, %d",
			l3.LogStartOffset(), l3.LogStartUnknown(), l3.StartOffset(), cut)
	}
	mustDo(t, s3.Close())

	s4, l4 := reopenCfg(t, known, tieredCfg())
	defer s4.Close()
	if l4.LogStartUnknown() || l4.LogStartOffset() != cut {
		t.Errorf("a dir of this build: log start %d (unknown %v); want known at %d", l4.LogStartOffset(), l4.LogStartUnknown(), cut)
	}
}

// An entry above the first base in an older build's checkpoint is a log
// start DeleteRecords moved: it is kept through the migration.
func TestLogStartUpgradeKeepsDeletedRecords(t *testing.T) {
	noFsync(t)
	dir := t.TempDir()
	s, l := filledLog(t, dir, tieredCfg(), 1)
	mid := l.segs[1].base + 1
	mustDo(t, l.DeleteBefore(mid))
	mustDo(t, s.Close())
	mustDo(t, os.Remove(filepath.Join(dir, logStartMarkerFile)))
	s2, l2 := reopenCfg(t, dir, tieredCfg())
	defer s2.Close()
	if l2.LogStartUnknown() || l2.LogStartOffset() != mid || l2.StartOffset() != mid {
		t.Errorf("log start %d (unknown %v), local start %d; want %d", l2.LogStartOffset(), l2.LogStartUnknown(), l2.StartOffset(), mid)
	}
}
