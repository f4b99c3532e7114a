package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestWriteHeapProfile: --memprofile writes a gzipped pprof profile, nothing
// when unset, and an error (not a panic or an empty success) when the path
// cannot be created.
func TestWriteHeapProfile(t *testing.T) {
	if err := writeHeapProfile(""); err != nil {
		t.Fatalf("unset: %v", err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "heap.pprof")
	if err := writeHeapProfile(path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
		t.Fatalf("%s: %d bytes, not a gzipped profile", path, len(b))
	}
	if err := writeHeapProfile(filepath.Join(dir, "missing", "heap.pprof")); err == nil {
		t.Fatal("a path in a missing directory: no error")
	}
}
