package pebblelog

import (
	"bytes"
	"context"
	"testing"

	"github.com/sluice/sluice/engine"
)

// TestValueSeparation: with the options of options.go, record batches
// stored inline (format version 1; now only in stores written before data
// files) go to blob files at flush (the sstables keep handles), and they read back
// the same after a reopen and after a full compaction moved their handles.
func TestValueSeparation(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	l, err := s.CreateLog(pid, engine.LogConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var want []byte
	for i := 0; i < 64; i++ {
		b := benchBatch(4 << 10) // well above blobMinValueBytes
		appendInline(t, l, b, 1)
		want = append(want, b...) // as rewritten by Append
	}
	if err := s.Close(); err != nil { // flushes the memtable
		t.Fatal(err)
	}

	s = open(t, dir)
	defer s.Close()
	db := s.(*Store).db
	if m := db.Metrics(); m.BlobFiles.LiveCount == 0 || m.BlobFiles.ReferencedValueSize < uint64(len(want)/2) {
		t.Fatalf("after a flush of %d bytes of batches: %d blob files referencing %d value bytes; want the batches in blob files",
			len(want), m.BlobFiles.LiveCount, m.BlobFiles.ReferencedValueSize)
	}
	l, err = s.OpenLog(pid, engine.LogConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, l); !bytes.Equal(got, want) {
		t.Fatalf("after reopen: read %d bytes differing from the %d appended", len(got), len(want))
	}
	if err := db.Compact(context.Background(), []byte{0}, []byte{0xff}, false); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, l); !bytes.Equal(got, want) {
		t.Fatalf("after compaction: read %d bytes differing from the %d appended", len(got), len(want))
	}
}
