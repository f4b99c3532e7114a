package segment

import (
	"bufio"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/internal/testenv"
)

// TestKillRestartMeasure measures a restart after SIGKILL (skipped unless
// SEGMENT_KILL_MB is set): a child process writes SEGMENT_KILL_MB MiB
// across SEGMENT_KILL_PARTS partitions (default 200) with 1 MiB segments,
// waits for the periodic recovery-point checkpoint (period
// SEGMENT_KILL_CKPT_MS, default 1000; 0 = none, as before it existed), and
// is killed; the parent then opens every log and reports the time and the
// bytes recovery validated. By hand:
//
//	SEGMENT_KILL_MB=2048 SEGMENT_KILL_CKPT_MS=0 go test -run TestKillRestartMeasure -v ./segment/
func TestKillRestartMeasure(t *testing.T) {
	mb, _ := strconv.Atoi(os.Getenv("SEGMENT_KILL_MB"))
	if mb <= 0 {
		t.Skip("SEGMENT_KILL_MB not set")
	}
	parts := envInt("SEGMENT_KILL_PARTS", 200)
	ckpt := envInt("SEGMENT_KILL_CKPT_MS", 1000)
	testenv.NeedsProcess(t, "the test binary as a child it kills")
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillRestartChild$", "-test.v")
	cmd.Env = append(os.Environ(), "SEGMENT_KILL_CHILD="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		t.Log("child: ", sc.Text())
		if sc.Text() == "ready" {
			break
		}
	}
	cmd.Process.Kill() // SIGKILL
	cmd.Wait()
	_ = ckpt
	setRecoveryCheckpointInterval(0)
	began := time.Now()
	st := openStore(t, dir, nil)
	defer st.Close()
	cfg := killCfg()
	var end int64
	for i := range parts {
		l, err := st.OpenLog(engine.PartitionID{Topic: "kill", Partition: int32(i)}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		end += l.EndOffset()
	}
	t.Logf("restart after SIGKILL: %d MiB in %d partitions, checkpoint every %d ms: opened in %v, validated %d MiB, %d offsets",
		mb, parts, ckpt, time.Since(began).Round(time.Millisecond), st.recoveredBytes.Load()>>20, end)
}

func killCfg() engine.LogConfig {
	return engine.LogConfig{SegmentBytes: 1 << 20, RetentionMs: -1, RetentionBytes: -1}.WithDefaults()
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

// TestKillRestartChild is the child of TestKillRestartMeasure.
func TestKillRestartChild(t *testing.T) {
	dir := os.Getenv("SEGMENT_KILL_CHILD")
	if dir == "" {
		t.Skip("child of TestKillRestartMeasure only")
	}
	mb := envInt("SEGMENT_KILL_MB", 64)
	parts := envInt("SEGMENT_KILL_PARTS", 200)
	ckpt := envInt("SEGMENT_KILL_CKPT_MS", 1000)
	setRecoveryCheckpointInterval(time.Duration(ckpt) * time.Millisecond)
	st, err := Open(engine.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	cfg := killCfg()
	ls := make([]engine.Log, parts)
	for i := range parts {
		if ls[i], err = st.CreateLog(engine.PartitionID{Topic: "kill", Partition: int32(i)}, cfg); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewSource(1))
	var written int64
	for i := 0; written < int64(mb)<<20; i++ {
		b := mkBatch(rng, 16, 1000, 1000) // ~16 KiB
		if _, err := ls[i%parts].Append(b, engine.AppendOptions{AssignOffsets: true}); err != nil {
			t.Fatal(err)
		}
		written += int64(len(b))
	}
	// Let the background flushes of rolled segments finish and a
	// checkpoint record them (none when ckpt is 0).
	time.Sleep(time.Duration(3*max(ckpt, 1000)) * time.Millisecond)
	fmt.Println("ready")
	time.Sleep(time.Hour)
}
