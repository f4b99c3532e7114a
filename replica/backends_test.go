package replica

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/engine/memlog"
	"github.com/sluice/sluice/segment"
)

// TestBackendStoresRoute: a log dir with a segment store at its root and
// a memory store opened on demand routes each log to the store holding
// it: creations by backend, opens, lists (a log found in both is kept in
// the root's and reported), high-watermark checkpoints split per store
// and merged back, renames (a move's swap) and deletions.
func TestBackendStoresRoute(t *testing.T) {
	dir := t.TempDir()
	root, err := segment.Open(engine.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	var mem engine.Store
	opens := 0
	b := newBackendStores(LogDir{Path: dir, Store: root, Backend: "segment", Open: func(name string) (engine.Store, error) {
		if name != "memory" {
			return nil, errors.New("only memory here")
		}
		opens++
		st, err := (memlog.Backend{}).Open(engine.Options{Dir: filepath.Join(dir, "storage-memory")})
		mem = st
		return st, err
	}})
	seg := engine.PartitionID{Topic: "s", Partition: 0}
	m0 := engine.PartitionID{Topic: "m", Partition: 0}
	m1 := engine.PartitionID{Topic: "m", Partition: 1}
	for _, c := range []struct {
		backend string
		id      engine.PartitionID
	}{{"", seg}, {"memory", m0}, {"memory", m1}} {
		l, err := b.CreateLog(c.backend, c.id, engine.LogConfig{})
		if err != nil {
			t.Fatalf("create %v in %q: %v", c.id, c.backend, err)
		}
		l.Close()
	}
	if opens != 1 {
		t.Fatalf("memory store opened %d times, want 1", opens)
	}
	if _, err := b.CreateLog("pebble", engine.PartitionID{Topic: "p", Partition: 0}, engine.LogConfig{}); err == nil {
		t.Fatal("created a log of a backend the dir cannot open")
	}
	if got, _ := root.ListLogs(); len(got) != 1 || got[0] != seg {
		t.Fatalf("segment store holds %v, want only %v", got, seg)
	}
	if got, _ := mem.ListLogs(); len(got) != 2 {
		t.Fatalf("memory store holds %v, want m-0 and m-1", got)
	}
	for id, want := range map[engine.PartitionID]string{seg: "segment", m0: "memory", m1: "memory"} {
		if got := b.BackendOf(id); got != want {
			t.Errorf("BackendOf(%v) = %q, want %q", id, got, want)
		}
		l, err := b.OpenLog(id, engine.LogConfig{})
		if err != nil {
			t.Fatalf("open %v: %v", id, err)
		}
		l.Close()
	}

	// High watermarks: each store keeps its own logs'.
	if err := b.SaveHighWatermarks(map[engine.PartitionID]int64{seg: 1, m0: 2, m1: 3}); err != nil {
		t.Fatal(err)
	}
	if hw, _ := root.HighWatermarks(); len(hw) != 1 || hw[seg] != 1 {
		t.Fatalf("segment store's high watermarks %v", hw)
	}
	if hw, _ := mem.(engine.HighWatermarkStore).HighWatermarks(); len(hw) != 2 || hw[m0] != 2 || hw[m1] != 3 {
		t.Fatalf("memory store's high watermarks %v", hw)
	}
	if hw, err := b.HighWatermarks(); err != nil || len(hw) != 3 || hw[seg] != 1 || hw[m1] != 3 {
		t.Fatalf("merged high watermarks %v %v", hw, err)
	}

	// A move's swap: the future log is renamed in its own store.
	fid := engine.FutureLogID(engine.PartitionID{Topic: "m", Partition: 2}, "00112233445566778899aabbccddeeff")
	if !b.canRename("memory") {
		t.Fatal("memory store cannot rename")
	}
	fl, err := b.CreateLog("memory", fid, engine.LogConfig{})
	if err != nil {
		t.Fatal(err)
	}
	fl.Close()
	m2 := engine.PartitionID{Topic: "m", Partition: 2}
	if err := b.RenameLog(fid, m2); err != nil {
		t.Fatal(err)
	}
	if b.BackendOf(m2) != "memory" || b.BackendOf(fid) != "" {
		t.Fatalf("after rename: %q %q", b.BackendOf(m2), b.BackendOf(fid))
	}

	// Delete goes to the holding store.
	if err := b.DeleteLog(m0); err != nil {
		t.Fatal(err)
	}
	if got, _ := mem.ListLogs(); len(got) != 2 {
		t.Fatalf("memory store after delete holds %v", got)
	}
	if err := b.DeleteLog(m0); !errors.Is(err, engine.ErrNoLog) {
		t.Fatalf("second delete: %v, want ErrNoLog", err)
	}

	// A fresh view lists both stores; a log in both is kept in the root's.
	l, err := mem.CreateLog(seg, engine.LogConfig{})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	b2 := newBackendStores(LogDir{Path: dir, Store: root, Backend: "segment", Others: map[string]engine.Store{"memory": mem}})
	ids, dup, err := b2.ListLogs()
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 3 || len(dup) != 1 || dup[0] != seg || b2.BackendOf(seg) != "segment" || b2.BackendOf(m1) != "memory" {
		t.Fatalf("ListLogs %v dup %v; seg in %q", ids, dup, b2.BackendOf(seg))
	}
}
