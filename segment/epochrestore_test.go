package segment

import (
	"bytes"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sluice/sluice/engine"
)

// TestRestoreLeaderEpochs (engine.EpochRestorer): a log restarted at 100
// takes the history restored from the remote tier cut to its start and
// writes it to leader-epoch-checkpoint; it refuses a restore once it
// holds batches.
func TestRestoreLeaderEpochs(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir, nil)
	l0, err := st.CreateLog(tp, testCfg())
	if err != nil {
		t.Fatal(err)
	}
	l := l0.(*Log)
	if err := l.TruncateFullyAndStartAt(100); err != nil {
		t.Fatal(err)
	}
	restored := []engine.EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 3, StartOffset: 50}, {Epoch: 4, StartOffset: 100}}
	if err := l.RestoreLeaderEpochs(restored); err != nil {
		t.Fatal(err)
	}
	want := []engine.EpochEntry{{Epoch: 3, StartOffset: 100}}
	if got := l.LeaderEpochs(); !slices.Equal(got, want) {
		t.Fatalf("restored epochs %v, want %v", got, want)
	}
	if data, err := os.ReadFile(filepath.Join(l.dir, leaderEpochFile)); err != nil || !bytes.Equal(data, appendEpochCheckpoint(nil, want)) {
		t.Fatalf("leader-epoch-checkpoint %q, %v; want %q", data, err, appendEpochCheckpoint(nil, want))
	}
	if _, err := l.Append(mkBatch(rand.New(rand.NewSource(1)), 2, 1000, 10), engine.AppendOptions{AssignOffsets: true, LeaderEpoch: 5}); err != nil {
		t.Fatal(err)
	}
	if err := l.RestoreLeaderEpochs(restored); !errors.Is(err, engine.ErrOffsetOutOfRange) {
		t.Fatalf("restore on a log with batches: %v, want ErrOffsetOutOfRange", err)
	}
}
