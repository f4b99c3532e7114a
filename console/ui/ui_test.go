package ui

import (
	"io/fs"
	"testing"
)

// TestFSRoot checks that FS has the console's files at its top, where package
// console serves them.
func TestFSRoot(t *testing.T) {
	for _, name := range []string{"index.html", "app.js", "style.css"} {
		b, err := fs.ReadFile(FS, name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(b) == 0 {
			t.Fatalf("%s is empty", name)
		}
	}
}
