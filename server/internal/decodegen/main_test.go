package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeneratedTableUpToDate regenerates the table from the kmsg this
// module builds with and compares it with server/decodebound_gen.go: a
// kmsg upgrade must come with go generate ./server.
func TestGeneratedTableUpToDate(t *testing.T) {
	dir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/twmb/franz-go/pkg/kmsg").Output()
	if err != nil {
		t.Fatalf("locate kmsg: %v", err)
	}
	src, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(dir)), "generated.go"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := generate(src)
	if err != nil {
		t.Fatal(err)
	}
	have, err := os.ReadFile("../../decodebound_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, want) {
		t.Fatal("server/decodebound_gen.go is stale: run go generate ./server")
	}
}
