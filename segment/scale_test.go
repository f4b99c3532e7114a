package segment

import (
	"math/rand"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/engine"
)

// rssKiB reads VmRSS from /proc/self/status.
func rssKiB(t testing.TB) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	t.Skip("no VmRSS")
	return 0
}

// TestScalePartitions creates SEGMENT_SCALE partitions (e.g. 20000; the
// test is skipped without it) with the default open-segment cache, appends
// a batch to each, then appends to and reads random ones, and reports the
// open descriptors, mappings and RSS per partition of the storage layer;
// then it closes and reopens them all, timing both. Run it by hand under
// `ulimit -n 20000`:
//
//	SEGMENT_SCALE=20000 go test -run TestScalePartitions -v ./segment/
func TestScalePartitions(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("SEGMENT_SCALE"))
	if n <= 0 {
		t.Skip("SEGMENT_SCALE not set")
	}
	noFsync(t)
	dir := t.TempDir()
	cfg := engine.LogConfig{RetentionMs: -1, RetentionBytes: -1}.WithDefaults()
	runtime.GC()
	debug.FreeOSMemory()
	fds0, maps0 := countFds(t)
	rss0 := rssKiB(t)
	st := openStore(t, dir, nil)
	rng := rand.New(rand.NewSource(1))
	ls := make([]engine.Log, n)
	began := time.Now()
	for i := range n {
		l, err := st.CreateLog(engine.PartitionID{Topic: "scale", Partition: int32(i)}, cfg)
		if err != nil {
			t.Fatalf("partition %d: %v", i, err)
		}
		ls[i] = l
		fill(t, l, rng, 1, 1)
	}
	t.Logf("created %d partitions with one batch each in %v", n, time.Since(began).Round(time.Millisecond))
	for range 5 * n {
		i := rng.Intn(n)
		if rng.Intn(2) == 0 {
			fill(t, ls[i], rng, 1, 1)
		} else {
			sliceBytes(t, ls[i], 0, 1<<20, -1)
		}
	}
	runtime.GC()
	debug.FreeOSMemory()
	fds, maps := countFds(t)
	rss := rssKiB(t)
	open, re, ev := st.OpenSegments()
	t.Logf("%d partitions, cache %d: fds %d (+%d), maps %d (+%d), RSS +%d KiB = %.2f KiB/partition; open segments %d, reopens %d, evictions %d",
		n, defaultOpenSegmentsMax(), fds, fds-fds0, maps, maps-maps0, rss-rss0, float64(rss-rss0)/float64(n), open, re, ev)
	began = time.Now()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("clean close: %v", time.Since(began).Round(time.Millisecond))
	began = time.Now()
	st = openStore(t, dir, nil)
	defer st.Close()
	for i := range n {
		if _, err := st.OpenLog(engine.PartitionID{Topic: "scale", Partition: int32(i)}, cfg); err != nil {
			t.Fatal(err)
		}
	}
	fds, maps = countFds(t)
	t.Logf("clean reopen of %d partitions: %v; fds %d, maps %d", n, time.Since(began).Round(time.Millisecond), fds, maps)
}
