package segment

import (
	"bytes"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice/sluice/engine"
)

// TestAppendManyLogsBounded: appending in turn to more logs than the
// open-segment bound (every append finds its segment closed) keeps the
// descriptors and mappings bounded, reopens only the .log for appends (no
// index mapping per append), and leaves, after a clean close, the same
// bytes in every .log and .index, and the same closing .timeindex entry,
// as an unbounded store given the same appends, with reads in between.
func TestAppendManyLogsBounded(t *testing.T) {
	noFsync(t)
	const logs, bound, rounds = 300, 20, 12
	cfg := engine.LogConfig{SegmentBytes: 1 << 20, IndexIntervalBytes: 512, IndexMaxBytes: 1 << 16, RetentionMs: -1, RetentionBytes: -1}
	run := func(dir string, openMax int, measure bool) {
		withOpenMax(t, openMax)
		fds0, maps0 := countFds(t)
		st := openStore(t, dir, nil)
		ls := make([]engine.Log, logs)
		for i := range ls {
			l, err := st.CreateLog(engine.PartitionID{Topic: "t", Partition: int32(i)}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			ls[i] = l
		}
		rng := rand.New(rand.NewSource(3))
		maxFds, maxMaps := 0, 0
		for r := range rounds {
			for i, l := range ls {
				b := mkBatch(rng, 1+rng.Intn(3), 1000+int64(r*logs+i), 100+rng.Intn(300))
				if _, err := l.Append(b, engine.AppendOptions{AssignOffsets: true, LeaderEpoch: 1}); err != nil {
					t.Fatal(err)
				}
				if r == rounds/2 && i%17 == 0 {
					// A reader maps the indexes with entries pending.
					sliceBytes(t, ls[(i+5)%logs], 0, 1<<20, -1)
				}
			}
			fds, maps := countFds(t)
			maxFds, maxMaps = max(maxFds, fds-fds0), max(maxMaps, maps-maps0)
		}
		if measure {
			mapped := st.cache.indexMaps.Load()
			if limit := bound*3 + 32; maxFds > limit {
				t.Errorf("open descriptors grew by %d, bound %d", maxFds, limit)
			}
			if limit := bound*2 + 32; maxMaps > limit {
				t.Errorf("mappings grew by %d, bound %d", maxMaps, limit)
			}
			open, re, _ := st.OpenSegments()
			if re < int64(logs*(rounds-2)) {
				t.Errorf("%d reopens for %d appends over %d logs with a bound of %d: the bound did not bind", re, logs*rounds, logs, bound)
			}
			// Between the reads, appends reopen the .log only.
			if mapped > int64(logs*rounds/2) {
				t.Errorf("indexes mapped %d times for %d appends: appends map them", mapped, logs*rounds)
			}
			t.Logf("max +%d fds, +%d maps; open %d, reopens %d, index mappings %d", maxFds, maxMaps, open, re, mapped)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
	bounded, unbounded := t.TempDir(), t.TempDir()
	run(bounded, bound, true)
	run(unbounded, logs*2, false)
	for i := 0; i < logs; i++ {
		for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
			name := filepath.Join(logDirName("t", int32(i)), filepath.Base(segmentPath("", 0, suf)))
			a, err := os.ReadFile(filepath.Join(bounded, name))
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(unbounded, name))
			if err != nil {
				t.Fatal(err)
			}
			if suf == timeIndexSuffix && len(a) >= 12 && len(b) >= 12 {
				// An eviction adds a time entry for the largest
				// timestamp so far: compare the closing entry.
				a, b = a[len(a)-12:], b[len(b)-12:]
			}
			if !bytes.Equal(a, b) {
				t.Fatalf("%s: %d bytes with the bound, %d without, or they differ", name, len(a), len(b))
			}
		}
	}
}
