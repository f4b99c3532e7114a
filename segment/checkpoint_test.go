package segment

import (
	"errors"
	"maps"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sluice/sluice/engine"
)

func TestCheckpointRoundTrip(t *testing.T) {
	dir := t.TempDir()
	offs := map[engine.PartitionID]int64{{Topic: "a", Partition: 0}: 5, {Topic: "b-c", Partition: 7}: 1 << 40}
	path := filepath.Join(dir, recoveryPointFile)
	if err := writeOffsetCheckpoint(path, offs); err != nil {
		t.Fatal(err)
	}
	got, err := readOffsetCheckpoint(path)
	if err != nil || len(got) != 2 || got[engine.PartitionID{Topic: "b-c", Partition: 7}] != 1<<40 {
		t.Fatalf("%v %v", got, err)
	}
	if _, err := os.Stat(path + tmpSuffix); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("temp file left behind")
	}
	epochs := []engine.EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 3, StartOffset: 100}}
	epath := filepath.Join(dir, leaderEpochFile)
	if err := writeEpochCheckpoint(epath, epochs); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(epath); string(data) != "0\n2\n0 0\n3 100\n" {
		t.Fatalf("leader-epoch-checkpoint is %q", data)
	}
	ge, err := readEpochCheckpoint(epath)
	if err != nil || len(ge) != 2 || ge[1] != epochs[1] {
		t.Fatalf("%v %v", ge, err)
	}
	if m, err := readOffsetCheckpoint(filepath.Join(dir, "missing")); err != nil || len(m) != 0 {
		t.Fatalf("missing checkpoint: %v %v", m, err)
	}
}

func TestCheckpointDamaged(t *testing.T) {
	cases := map[string]string{
		"empty":         "",
		"bad version":   "1\n0\n",
		"count too big": "0\n2\na 0 1\n",
		"bad offset":    "0\n1\na 0 x\n",
		"negative":      "0\n1\na 0 -4\n",
		"missing field": "0\n1\na 0\n",
		// bufio.Scanner stopped at a line over 64 KiB without an error,
		// so this read as an empty checkpoint.
		"line past 64 KiB": "0\n0\n" + strings.Repeat("x", 70000) + "\n",
		"version only":     "0\n",
	}
	for name, text := range cases {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "cp")
			os.WriteFile(p, []byte(text), 0o644)
			if _, err := readOffsetCheckpoint(p); !errors.Is(err, errBadCheckpoint) {
				t.Fatalf("read %q: %v", text, err)
			}
		})
	}
}

// TestCheckpointCRLF: a checkpoint whose lines end in "\r\n" (edited on
// Windows) reads as the same file with '\n'.
func TestCheckpointCRLF(t *testing.T) {
	for _, lf := range []string{
		"0\n2\na 0 5\nb-c 7 1099511627776\n",
		"0\n1\na 0 5", // no final newline
		"0\n0\n",
	} {
		crlf := strings.ReplaceAll(lf, "\n", "\r\n")
		t.Run(strconv.Quote(crlf), func(t *testing.T) {
			want, err := parseOffsetCheckpoint("lf", []byte(lf))
			if err != nil {
				t.Fatal(err)
			}
			got, err := parseOffsetCheckpoint("crlf", []byte(crlf))
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, want) {
				t.Fatalf("CRLF gives %v, LF %v", got, want)
			}
		})
	}
	epochs, err := parseEpochCheckpoint("crlf", []byte("0\r\n2\r\n0 0\r\n3 100\r\n"))
	if want := []engine.EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 3, StartOffset: 100}}; err != nil || !slices.Equal(epochs, want) {
		t.Fatalf("epochs %v, %v; want %v", epochs, err, want)
	}
	// A lone '\r' is not a line end.
	if _, err := parseOffsetCheckpoint("cr", []byte("0\r1\ra 0 5\r")); !errors.Is(err, errBadCheckpoint) {
		t.Fatalf("CR-only file: %v", err)
	}
}

// TestMissingEpochCheckpointRebuilt deletes the leader-epoch-checkpoint of
// a cleanly closed log: the next open must rebuild the epochs from the
// batches, not start with none.
func TestMissingEpochCheckpointRebuilt(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir, nil)
	l, err := st.CreateLog(tp, testCfg())
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(1))
	fill(t, l, rng, 3, 1)
	start2 := l.EndOffset()
	fill(t, l, rng, 3, 4)
	want := []engine.EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 4, StartOffset: start2}}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "topic-3", leaderEpochFile)); err != nil {
		t.Fatal(err)
	}
	st, l2 := reopen(t, dir)
	defer st.Close()
	if got := l2.LeaderEpochs(); !slices.Equal(got, want) {
		t.Fatalf("LeaderEpochs after the checkpoint was deleted = %v, want %v", got, want)
	}
}
