package pebblelog

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluice/sluice/engine"
)

// A burst of new logs gets its catalog entries synced by the catalog
// syncer, so their first appends commit without a sync of their own; the
// store's synced count covers every entry soon after the last CreateLog.
func TestCatalogSyncerCoversNewLogs(t *testing.T) {
	st := open(t, t.TempDir())
	defer st.Close()
	s := st.(*Store)
	var logs []engine.Log
	for i := range 200 {
		l, err := s.CreateLog(engine.PartitionID{Topic: "burst", Partition: int32(i)}, engine.LogConfig{})
		if err != nil {
			t.Fatal(err)
		}
		logs = append(logs, l)
	}
	last := logs[len(logs)-1].(*Log).catalogSeq
	deadline := time.Now().Add(10 * time.Second)
	for s.synced.Load() < last {
		if time.Now().After(deadline) {
			t.Fatalf("synced %d after 10 s, the last catalog entry is %d", s.synced.Load(), last)
		}
		time.Sleep(time.Millisecond)
	}
	for _, l := range logs {
		mustAppend(t, l, batch(1, 0, "v"), 1)
	}
	if n := s.firstSyncs.Load(); n != 0 {
		t.Fatalf("%d first appends synced on their own after the syncer covered their entries", n)
	}
}

// A log's first append survives a process crash however it raced the
// catalog syncer: with the syncer stopped it commits synced itself, and
// the Pebble files as the OS holds them right after the append (a crash
// loses what Pebble's WAL writer still buffers) reopen with the log and
// its records.
func TestFirstAppendSurvivesCrash(t *testing.T) {
	for _, syncer := range []bool{true, false} {
		t.Run(fmt.Sprintf("syncer=%v", syncer), func(t *testing.T) {
			dir := t.TempDir()
			st := open(t, dir)
			defer st.Close()
			s := st.(*Store)
			if !syncer {
				s.catalogOnce.Do(func() {
					close(s.stopCatalog)
					<-s.catalogDone
				})
			}
			l, err := s.CreateLog(pid, engine.LogConfig{})
			if err != nil {
				t.Fatal(err)
			}
			mustAppend(t, l, batch(3, 0, "first"), 1)
			wal := t.TempDir()
			copyFiles(t, dir, wal)
			img := crashImage(t, wal, dir)
			s2 := open(t, img)
			defer s2.Close()
			l2, err := s2.OpenLog(pid, engine.LogConfig{})
			if err != nil {
				t.Fatalf("the log is gone after a crash right after its first append: %v", err)
			}
			if l2.EndOffset() != 3 {
				t.Fatalf("end offset %d after the crash, want 3", l2.EndOffset())
			}
			if !syncer && s.firstSyncs.Load() != 1 {
				t.Fatalf("first append without the syncer: %d synced commits, want 1", s.firstSyncs.Load())
			}
		})
	}
}
