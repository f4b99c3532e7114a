package segment

import (
	"math/rand"
	"os"
	"testing"
	"time"

	"github.com/sluice/sluice/engine"
)

// dirFiles lists the names in dir.
func dirFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// TestLazySegmentFiles: a new log is a directory without files and holds
// no open segment; reads, retention, a Close and a restart leave it so;
// the first append creates the files, and the data survives a restart.
func TestLazySegmentFiles(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir, nil)
	id := engine.PartitionID{Topic: "lazy", Partition: 0}
	el, err := st.CreateLog(id, testCfg())
	if err != nil {
		t.Fatal(err)
	}
	l := el.(*Log)
	ldir := st.logDir(id)
	noFiles := func(when string) {
		t.Helper()
		if f := dirFiles(t, ldir); len(f) != 0 {
			t.Fatalf("%s: files %v, want none", when, f)
		}
		if open, _, _ := st.OpenSegments(); open != 0 {
			t.Fatalf("%s: %d open segments, want 0", when, open)
		}
	}
	noFiles("created")
	sl, err := l.Read(0, 1<<20, -1)
	if err != nil || sl.Len() != 0 {
		t.Fatalf("read of the empty log: %d bytes, %v", sl.Len(), err)
	}
	sl.Release()
	if _, ok, err := offsetForTs(l, 0); err != nil || ok {
		t.Fatalf("OffsetForTimestamp on the empty log: %v %v", ok, err)
	}
	if _, err := l.ApplyRetention(time.Now().Add(365 * 24 * time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	noFiles("read, retention and flush")
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st = openStore(t, dir, nil)
	el, err = st.OpenLog(id, testCfg())
	if err != nil {
		t.Fatal(err)
	}
	noFiles("reopened")
	want := fill(t, el, rand.New(rand.NewSource(9)), 5, 1)
	if len(dirFiles(t, ldir)) == 0 {
		t.Fatal("no files after the first append")
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st = openStore(t, dir, nil)
	defer st.Close()
	el, err = st.OpenLog(id, testCfg())
	if err != nil {
		t.Fatal(err)
	}
	checkLog(t, el, want)
}

func offsetForTs(l *Log, ts int64) (int64, bool, error) {
	off, _, ok, err := l.OffsetForTimestamp(ts)
	return off, ok, err
}
