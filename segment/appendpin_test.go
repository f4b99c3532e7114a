package segment

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/record"
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
		ls := createLogs(t, st, logs, cfg)
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

// TestTailReadsManyLogs: a consumer's reads at the tail of more logs than
// the open-segment bound (each read finds its segment closed) return the
// batches just appended, reopen the .log only (the position comes from the
// batch starts the segment remembers, not the indexes), and after a
// truncation read what the log holds now.
func TestTailReadsManyLogs(t *testing.T) {
	noFsync(t)
	const logs, bound, rounds = 200, 20, 6
	withOpenMax(t, bound)
	cfg := engine.LogConfig{SegmentBytes: 1 << 20, IndexIntervalBytes: 512, IndexMaxBytes: 1 << 16, RetentionMs: -1, RetentionBytes: -1}
	st := openStore(t, t.TempDir(), nil)
	defer st.Close()
	ls := createLogs(t, st, logs, cfg)
	rng := rand.New(rand.NewSource(4))
	maps0 := st.cache.indexMaps.Load()
	reads := 0
	for r := range rounds {
		from := make([]int64, logs)
		want := make([][]byte, logs)
		for i, l := range ls {
			from[i] = l.EndOffset()
			for range 1 + rng.Intn(3) {
				b := mkBatch(rng, 1+rng.Intn(3), int64(1000+r), 100+rng.Intn(200))
				if _, err := l.Append(b, engine.AppendOptions{AssignOffsets: true, LeaderEpoch: 1}); err != nil {
					t.Fatal(err)
				}
				want[i] = append(want[i], b...)
			}
		}
		for i, l := range ls {
			// A tail read from the middle of the new batches' first
			// batch, as well as from its start.
			if got := sliceBytes(t, l, from[i], 1<<20, -1); !bytes.Equal(got, want[i]) {
				t.Fatalf("round %d log %d: read from %d: %d bytes, want the %d appended", r, i, from[i], len(got), len(want[i]))
			}
			reads++
			if from[i]+1 == l.EndOffset() {
				continue
			}
			if got := sliceBytes(t, l, from[i]+1, 1<<20, -1); len(got) == 0 || lastBatch(got).LastOffset() != l.EndOffset()-1 {
				t.Fatalf("round %d log %d: read from %d does not reach the end %d", r, i, from[i]+1, l.EndOffset())
			}
			reads++
		}
	}
	if maps := st.cache.indexMaps.Load() - maps0; maps > int64(reads/4) {
		t.Errorf("indexes mapped %d times for %d tail reads", maps, reads)
	}
	// A truncation forgets the batch starts past the cut: two small
	// batches, cut back to the first, then a larger one over both.
	l := ls[7]
	cut := l.EndOffset()
	for range 2 {
		if _, err := l.Append(mkBatch(rng, 1, 4000, 10), engine.AppendOptions{AssignOffsets: true, LeaderEpoch: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Truncate(cut); err != nil {
		t.Fatal(err)
	}
	b := mkBatch(rng, 5, 5000, 100)
	if _, err := l.Append(b, engine.AppendOptions{AssignOffsets: true, LeaderEpoch: 2}); err != nil {
		t.Fatal(err)
	}
	if got := sliceBytes(t, l, cut+1, 1<<20, -1); !bytes.Equal(got, b) {
		t.Fatalf("read at %d after truncating to %d and appending: got %d bytes, want the %d-byte batch", cut+1, cut, len(got), len(b))
	}
}

// TestTailReadsReadNoHeaders: a read that starts in one of the last tailN
// batches appended, and ends at the log's end or at one of their ends,
// takes its position and size from what the segment remembers: no read of
// the .log (a pread per partition of every fetch over 10,000 partitions).
// A read from further back, or one ending inside a batch, still scans the
// headers and returns the same bytes.
func TestTailReadsReadNoHeaders(t *testing.T) {
	noFsync(t)
	withOpenMax(t, 100)
	fs := newErrorFS()
	st, err := OpenFS(engine.Options{Dir: t.TempDir(), Logger: quietLogger(t)}, fs)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cfg := engine.LogConfig{SegmentBytes: 1 << 20, IndexIntervalBytes: 4096, IndexMaxBytes: 1 << 16, RetentionMs: -1, RetentionBytes: -1}
	l := createLogs(t, st, 1, cfg)[0]
	rng := rand.New(rand.NewSource(9))
	const n = 3 * tailN
	var bases []int64
	var all [][]byte
	for i := range n {
		b := mkBatch(rng, 1+i%3, 1000, 100+rng.Intn(200))
		info, err := l.Append(b, engine.AppendOptions{AssignOffsets: true, LeaderEpoch: 1})
		if err != nil {
			t.Fatal(err)
		}
		bases = append(bases, info.FirstOffset)
		all = append(all, b)
	}
	concat := func(bs [][]byte) []byte { return bytes.Join(bs, nil) }
	for _, tc := range []struct {
		name     string
		from     int // batch index
		mid      bool
		maxBytes int
		want     [][]byte
		noReads  bool
	}{
		{"last batch", n - 1, false, 1 << 20, all[n-1:], true},
		{"inside the last batch", n - 1, true, 1 << 20, all[n-1:], true},
		{"oldest remembered", n - tailN, false, 1 << 20, all[n-tailN:], true},
		{"ends at a batch's end", n - tailN, true, len(concat(all[n-tailN : n-tailN+3])), all[n-tailN : n-tailN+3], true},
		{"ends inside a batch", n - tailN, false, len(concat(all[n-tailN:n-tailN+3])) + 5, all[n-tailN : n-tailN+3], true},
		{"behind the tail", n - tailN - 2, false, 1 << 20, all[n-tailN-2:], false},
		{"from the start", 0, false, 1 << 20, all, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			off := bases[tc.from]
			if tc.mid {
				off = record.Batch(all[tc.from]).LastOffset()
			}
			r0 := fs.reads.Load()
			if got := sliceBytes(t, l, off, tc.maxBytes, -1); !bytes.Equal(got, concat(tc.want)) {
				t.Fatalf("read at %d, max %d: %d bytes, want %d", off, tc.maxBytes, len(got), len(concat(tc.want)))
			}
			if reads := fs.reads.Load() - r0; tc.noReads && reads != 0 {
				t.Errorf("read at %d did %d reads of the .log, want none", off, reads)
			}
		})
	}
}

// lastBatchBytes returns the bytes of the last batch in b.
func lastBatchBytes(b []byte) []byte {
	var last []byte
	for len(b) > 0 {
		n := record.Batch(b).Size()
		last, b = b[:n], b[n:]
	}
	return last
}

// TestTailReadsConcurrentWithAppends: readers tailing more logs than the
// open-segment bound while their appender writes (pins, evictions, index
// mappings and pending entries racing; run it with -race) read exactly
// the appended batches, in order.
func TestTailReadsConcurrentWithAppends(t *testing.T) {
	noFsync(t)
	const logs, bound, batches = 40, 4, 150
	withOpenMax(t, bound)
	cfg := engine.LogConfig{SegmentBytes: 64 << 10, IndexIntervalBytes: 256, IndexMaxBytes: 4096, RetentionMs: -1, RetentionBytes: -1}
	st := openStore(t, t.TempDir(), nil)
	defer st.Close()
	ls := createLogs(t, st, logs, cfg)
	want := make([][][]byte, logs)
	done := make(chan struct{})
	errs := make(chan error, logs)
	go func() {
		defer close(done)
		rng := rand.New(rand.NewSource(5))
		for n := range batches {
			for i, l := range ls {
				b := mkBatch(rng, 1+rng.Intn(3), int64(n), 50+rng.Intn(100))
				if _, err := l.Append(b, engine.AppendOptions{AssignOffsets: true, LeaderEpoch: 1}); err != nil {
					errs <- err
					return
				}
				want[i] = append(want[i], b) // read by the checks after done
			}
		}
	}()
	var wg sync.WaitGroup
	got := make([][]byte, logs)
	for i, l := range ls {
		wg.Go(func() {
			var next int64
			for {
				finished := false
				select {
				case <-done:
					finished = true
				default:
				}
				end := l.EndOffset()
				for next < end {
					s, err := l.Read(next, 1<<20, -1)
					if err != nil {
						errs <- err
						return
					}
					b, err := s.AppendTo(nil)
					s.Release()
					if err != nil || len(b) == 0 {
						errs <- fmt.Errorf("log %d: read at %d: %d bytes, %v", i, next, len(b), err)
						return
					}
					got[i] = append(got[i], b...)
					next = lastBatch(b).NextOffset()
				}
				if finished && next >= l.EndOffset() {
					return
				}
				runtime.Gosched()
			}
		})
	}
	wg.Wait()
	<-done
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i := range ls {
		if w := bytes.Join(want[i], nil); !bytes.Equal(got[i], w) {
			t.Fatalf("log %d: read %d bytes, appended %d, or they differ", i, len(got[i]), len(w))
		}
	}
}

// TestLaggingReadsManyLogs: a consumer reading more logs than the
// open-segment bound from further behind than the last tailN batches
// (a consumer that lags, as the OMB workload's do at 10,000 partitions)
// reads the right batches, exactly up to its byte limit, and reopens the
// .log only: the batch starts that got index entries (segment.marks) give
// its position and where its bytes end, within index.interval.bytes.
// Before them every such read mapped both indexes again.
func TestLaggingReadsManyLogs(t *testing.T) {
	noFsync(t)
	const logs, bound, batches, lag = 60, 6, 40, 12
	withOpenMax(t, bound)
	cfg := engine.LogConfig{SegmentBytes: 1 << 20, IndexIntervalBytes: 512, IndexMaxBytes: 1 << 16, RetentionMs: -1, RetentionBytes: -1}
	st := openStore(t, t.TempDir(), nil)
	defer st.Close()
	ls := make([]engine.Log, logs)
	all := make([][][]byte, logs) // every log's batches, as appended
	rng := rand.New(rand.NewSource(6))
	for i := range ls {
		l, err := st.CreateLog(engine.PartitionID{Topic: "t", Partition: int32(i)}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		ls[i] = l
	}
	for n := range batches {
		for i, l := range ls {
			b := mkBatch(rng, 1, int64(n), 150+rng.Intn(100))
			if _, err := l.Append(b, engine.AppendOptions{AssignOffsets: true, LeaderEpoch: 1}); err != nil {
				t.Fatal(err)
			}
			all[i] = append(all[i], b)
		}
	}
	maps0 := st.cache.indexMaps.Load()
	for i, l := range ls {
		// One record per batch: batch k holds offset k.
		from := int64(batches - lag - i%3)
		want := bytes.Join(all[i][from:], nil)
		if got := sliceBytes(t, l, from, 1<<20, -1); !bytes.Equal(got, want) {
			t.Fatalf("log %d: read from %d: %d bytes, want the %d appended since", i, from, len(got), len(want))
		}
		// A byte limit that ends inside a batch: whole batches up to it.
		limit := len(want) - len(all[i][batches-1]) - 1
		wantLimited := bytes.Join(all[i][from:batches-2], nil)
		if got := sliceBytes(t, l, from, limit, -1); !bytes.Equal(got, wantLimited) {
			t.Fatalf("log %d: read from %d, %d bytes: got %d bytes, want %d", i, from, limit, len(got), len(wantLimited))
		}
	}
	if maps := st.cache.indexMaps.Load() - maps0; maps > logs/4 {
		t.Errorf("indexes mapped %d times for %d lagging reads of %d logs", maps, 2*logs, logs)
	}
}
