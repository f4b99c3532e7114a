package broker

import (
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/sluice/sluice/config"
)

// TestStackOrder pins the order Start pushes a single node's components
// in, which Close unwinds backwards: the HTTP side serves from the start
// and is stopped first (the retention loop is the replica manager's, inside
// the server), the schema registry (a client of the server) before the
// server, the server before the storage and the metastore, the store before the
// metastore.
func TestStackOrder(t *testing.T) {
	cfg := config.Default()
	cfg.Listeners = []string{"PLAINTEXT://127.0.0.1:0"}
	cfg.HTTPListeners = []string{"http://127.0.0.1:0"}
	cfg.SchemaRegistryListeners = []string{"http://127.0.0.1:0"}
	dir := t.TempDir()
	cfg.LogDirs = []string{dir}
	cfg.StorageBackend = "memory"
	cfg.LogRetentionCheck = time.Hour
	b, err := Start(cfg, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	// Per log dir: the stores of other topics' backends (opened when a
	// topic needs one), then the broker's backend's store.
	want := []string{"http", "metastore", "storage backends " + dir, "storage " + dir, "listener PLAINTEXT", "background goroutines",
		"server", "schema registry", "http (stopped first)"}
	if got := b.stack.Names(); !slices.Equal(got, want) {
		t.Errorf("stack %q, want %q", got, want)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if got := b.stack.Names(); len(got) != 0 {
		t.Errorf("after Close the stack still holds %q", got)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
