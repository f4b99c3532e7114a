package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestStartTrace: --trace writes a runtime trace (its "go 1.N trace"
// header) once stopped, nothing when unset, and an error when the path
// cannot be created.
func TestStartTrace(t *testing.T) {
	stop, err := startTrace("")
	if err != nil {
		t.Fatalf("unset: %v", err)
	}
	stop()
	dir := t.TempDir()
	path := filepath.Join(dir, "run.trace")
	stop, err = startTrace(path)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("go 1.")) {
		t.Fatalf("%s: %d bytes, not a runtime trace", path, len(b))
	}
	if _, err := startTrace(filepath.Join(dir, "missing", "run.trace")); err == nil {
		t.Fatal("a path in a missing directory: no error")
	}
}
