package segment

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice/sluice/engine"
)

// TestHighWatermarksFile: the file is Kafka's replication-offset-checkpoint
// text; a damaged one is an error wrapping engine.ErrCorruptStore that
// names it (and does not stop the store from opening); names the format
// cannot hold are refused.
func TestHighWatermarksFile(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir, nil)
	defer st.Close()
	path := filepath.Join(dir, replicationOffsetFile)
	if err := st.SaveHighWatermarks(map[engine.PartitionID]int64{tp: 42}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "0\n1\ntopic 3 42\n" {
		t.Fatalf("file %q, %v", b, err)
	}
	for _, id := range []engine.PartitionID{{Topic: "a b", Partition: 0}, {Topic: "", Partition: 0}, {Topic: "t", Partition: -1}} {
		if err := st.SaveHighWatermarks(map[engine.PartitionID]int64{id: 1}); err == nil {
			t.Fatalf("saved a high watermark for %q/%d", id.Topic, id.Partition)
		}
	}
	for _, bad := range []string{"", "0\n", "1\n0\n", "0\n2\ntopic 3 42\n", "0\n1\ntopic 3\n", "0\n1\ntopic x 42\n", "0\n1\ntopic 3 -1\n"} {
		if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := st.HighWatermarks()
		if !errors.Is(err, engine.ErrCorruptStore) || !strings.Contains(err.Error(), path) {
			t.Fatalf("file %q: error %v, want ErrCorruptStore naming %s", bad, err, path)
		}
	}
	st.Close()
	st2 := openStore(t, dir, nil)
	defer st2.Close()
	if _, err := st2.HighWatermarks(); !errors.Is(err, engine.ErrCorruptStore) {
		t.Fatalf("after reopen: %v", err)
	}
	if err := st2.SaveHighWatermarks(map[engine.PartitionID]int64{tp: 7}); err != nil {
		t.Fatal(err)
	}
	if hw, err := st2.HighWatermarks(); err != nil || len(hw) != 1 || hw[tp] != 7 {
		t.Fatalf("after rewriting the damaged file: %v, %v", hw, err)
	}
}
