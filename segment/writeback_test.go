package segment

import (
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/internal/fsutil"
	"github.com/sluice/sluice/zerocopy"
)

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type wbCall struct {
	path   string
	off, n int64
}

// recordStarts replaces w's system call with one that records its calls.
// REQUIRES: nothing queued yet.
func recordStarts(w *writeback) (calls func() []wbCall) {
	var mu sync.Mutex
	var got []wbCall
	w.start = func(f *os.File, off, n int64) error {
		mu.Lock()
		got = append(got, wbCall{f.Name(), off, n})
		mu.Unlock()
		return fsutil.StartWriteback(f, off, n)
	}
	return func() []wbCall {
		mu.Lock()
		defer mu.Unlock()
		return append([]wbCall(nil), got...)
	}
}

// An appender hands the kernel each page-aligned chunk of its active
// segment once it holds writebackChunk bytes, in order and without gaps,
// and the references the queue took are all given back.
func TestWritebackStartsEachChunk(t *testing.T) {
	st, l := newLog(t, engine.LogConfig{SegmentBytes: 64 << 20, RetentionMs: -1, RetentionBytes: -1}, nil)
	if st.wb == nil {
		t.Fatal("no writeback on a store that fsyncs")
	}
	calls := recordStarts(st.wb)
	rng := rand.New(rand.NewSource(1))
	var appended int64
	for appended < 3*writebackChunk+writebackChunk/2 {
		b := mkBatch(rng, 4, 1000, 1000)
		if _, err := l.Append(b, engine.AppendOptions{AssignOffsets: true}); err != nil {
			t.Fatal(err)
		}
		appended += int64(len(b))
	}
	waitFor(t, "three chunks started", func() bool { return st.wb.started.Load() >= 3*writebackChunk })
	got := calls()
	if len(got) != 3 {
		t.Fatalf("%d ranges started, want 3: %+v", len(got), got)
	}
	var next int64
	for _, c := range got {
		if !strings.HasSuffix(c.path, ".log") || c.off != next || c.off%pageSize != 0 || (c.off+c.n)%pageSize != 0 || c.n < writebackChunk {
			t.Fatalf("range %+v after %d: want a .log range starting there, page-aligned, at least a chunk", c, next)
		}
		next = c.off + c.n
	}
	if next > appended {
		t.Fatalf("started up to %d, past the %d bytes appended", next, appended)
	}
	s := l.active()
	waitFor(t, "the queue's references back", func() bool { return s.zf.Refs() == 1 })
}

// A full queue leaves the range to a later append without leaking the
// reference it took; a refusal (no sync_file_range) stops the queueing;
// closing drops what was queued and gives its references back.
func TestWritebackQueueFullRefusedAndClosed(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f.log"))
	if err != nil {
		t.Fatal(err)
	}
	zf := zerocopy.NewFile(f)
	defer zf.Release()

	w := &writeback{reqs: make(chan writebackRange, writebackQueue), stop: make(chan struct{}), done: make(chan struct{})}
	release := make(chan struct{})
	var calls atomic.Int64
	w.start = func(*os.File, int64, int64) error {
		calls.Add(1)
		<-release
		return nil
	}
	go w.run()

	// Below a chunk once cut to a page, nothing is queued.
	if got := w.maybeStart(zf, pageSize-1, writebackChunk+pageSize-2); got != pageSize-1 {
		t.Fatalf("maybeStart below a chunk returned %d, want %d", got, pageSize-1)
	}
	// One range in the system call, writebackQueue waiting, then full.
	from := int64(0)
	for i := 0; i <= writebackQueue; i++ {
		to := w.maybeStart(zf, from, from+writebackChunk+100)
		if to != from+writebackChunk {
			t.Fatalf("range %d: maybeStart returned %d, want %d", i, to, from+writebackChunk)
		}
		from = to
		if i == 0 {
			waitFor(t, "the first range in the system call", func() bool { return calls.Load() == 1 })
		}
	}
	if got := w.maybeStart(zf, from, from+writebackChunk); got != from {
		t.Fatalf("maybeStart on a full queue returned %d, want %d (left to a later append)", got, from)
	}
	if refs := zf.Refs(); refs != 1+1+writebackQueue {
		t.Fatalf("refs %d with one range started and %d queued, want %d", refs, writebackQueue, 2+writebackQueue)
	}
	close(release)
	waitFor(t, "the queue drained", func() bool { return zf.Refs() == 1 })
	if got := w.started.Load(); got != int64(1+writebackQueue)*writebackChunk {
		t.Fatalf("started %d bytes, want %d", got, int64(1+writebackQueue)*writebackChunk)
	}

	// The file system refuses: nothing is queued from then on.
	w.start = func(*os.File, int64, int64) error { return fsutil.ErrNoWriteback }
	w.maybeStart(zf, from, from+writebackChunk)
	waitFor(t, "the refusal seen", func() bool { return w.off.Load() })
	if got := w.maybeStart(zf, from, from+2*writebackChunk); got != from {
		t.Fatalf("maybeStart after a refusal returned %d, want %d", got, from)
	}
	waitFor(t, "the refused range's reference back", func() bool { return zf.Refs() == 1 })

	// Queued and not started when the store closes: only released.
	w2 := &writeback{reqs: make(chan writebackRange, writebackQueue), stop: make(chan struct{}), done: make(chan struct{})}
	w2.start = func(*os.File, int64, int64) error { t.Error("started after close"); return nil }
	for i := int64(0); i < 3; i++ {
		w2.maybeStart(zf, i*writebackChunk, (i+1)*writebackChunk)
	}
	close(w2.stop) // run sees stop first: nothing is started
	w2.run()
	if refs := zf.Refs(); refs != 1 {
		t.Fatalf("refs %d after close, want 1", refs)
	}
}

// syncCountFS is OSFS counting each file's fsyncs and the most that ran
// at once.
type syncCountFS struct {
	mu      sync.Mutex
	syncs   map[string]int
	running int
	most    int
}

type syncCountFile struct {
	File
	fs   *syncCountFS
	path string
}

func (fs *syncCountFS) OpenFile(path string) (File, error) {
	f, err := OSFS.OpenFile(path)
	if err != nil {
		return nil, err
	}
	return syncCountFile{f, fs, path}, nil
}

func (f syncCountFile) Sync() error {
	f.fs.mu.Lock()
	f.fs.syncs[f.path]++
	f.fs.running++
	f.fs.most = max(f.fs.most, f.fs.running)
	f.fs.mu.Unlock()
	time.Sleep(time.Millisecond) // long enough for another to overlap
	err := f.File.Sync()
	f.fs.mu.Lock()
	f.fs.running--
	f.fs.mu.Unlock()
	return err
}

func (fs *syncCountFS) count(name string) int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.syncs[name]
}

// A roll flushes the segments below the new one, one roll at a time over
// the whole store, and leaves the new active segment alone: its fsync
// would wait for the writeback of the pages being appended and hold the
// inode lock the appends write under.
func TestRollFlushesOldSegmentsOnly(t *testing.T) {
	fs := &syncCountFS{syncs: map[string]int{}}
	st, err := OpenFS(engine.Options{Dir: t.TempDir(), Logger: quietLogger(t)}, fs)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const logs = 16
	var wg sync.WaitGroup
	ls := make([]*Log, logs)
	for i := range ls {
		l, err := st.CreateLog(engine.PartitionID{Topic: "t", Partition: int32(i)}, testCfg())
		if err != nil {
			t.Fatal(err)
		}
		ls[i] = l.(*Log)
	}
	// Every log rolls several times, all at once.
	for i, l := range ls {
		wg.Go(func() { fill(t, l, rand.New(rand.NewSource(int64(i))), 120, 0) })
	}
	wg.Wait()
	for i, l := range ls {
		l.mu.RLock()
		active := l.active()
		segs := len(l.segs)
		l.mu.RUnlock()
		if segs < 3 {
			t.Fatalf("log %d: %d segments, want rolls", i, segs)
		}
		waitFor(t, "the recovery point at the active segment's base", func() bool { return l.RecoveryPoint() == active.base })
		if n := fs.count(active.path); n != 0 {
			t.Errorf("log %d: the active segment was fsynced %d times by the roll flushes", i, n)
		}
		l.mu.RLock()
		for _, s := range l.segs[:len(l.segs)-1] {
			if fs.count(s.path) == 0 {
				t.Errorf("log %d: rolled segment %s never fsynced", i, filepath.Base(s.path))
			}
		}
		l.mu.RUnlock()
	}
	fs.mu.Lock()
	most := fs.most
	fs.mu.Unlock()
	if most != 1 {
		t.Errorf("up to %d fsyncs ran at once, want the roll flushes one at a time", most)
	}
	// Flush still covers the active segment.
	if err := ls[0].Flush(); err != nil {
		t.Fatal(err)
	}
	if fs.count(ls[0].active().path) == 0 {
		t.Error("Flush did not fsync the active segment")
	}
	if rp, end := ls[0].RecoveryPoint(), ls[0].EndOffset(); rp != end {
		t.Errorf("recovery point %d after Flush, want the end %d", rp, end)
	}
}

// drainRolls returns once the work the rolls so far queued on st's roll
// flusher is done (it runs in order, one at a time).
func drainRolls(t *testing.T, st *Store) {
	t.Helper()
	done := make(chan struct{})
	st.rolls.add(func() { close(done) })
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the roll flusher did not drain in 10 s")
	}
}

// A segment that a truncation makes active again before its roll's
// release runs is left alone by it: the release truncates the file to the
// size it loads, and appends to the active segment write past that. Its
// reservation stays (an active segment's), and every batch reads back.
func TestRollReleaseSkipsReactivatedSegment(t *testing.T) {
	cfg := testCfg()
	cfg.SegmentBytes = 3 << 20
	cfg.IndexMaxBytes = 1 << 20
	st, l := newLog(t, cfg, nil)
	if st.reserve.Off() {
		t.Skip("this file system has no fallocate")
	}
	rng := rand.New(rand.NewSource(11))
	var batches [][]byte
	appendOne := func() {
		b := mkBatch(rng, 64, 1000, 1000)
		if _, err := l.Append(b, engine.AppendOptions{AssignOffsets: true}); err != nil {
			t.Fatal(err)
		}
		batches = append(batches, b)
	}
	// Hold the roll flusher, then roll.
	hold, held := make(chan struct{}), make(chan struct{})
	st.rolls.add(func() { close(held); <-hold })
	<-held
	for len(segBases(t, l.dir)) < 2 {
		appendOne()
	}
	// Back into the first segment, past the point where it reserves
	// blocks, and append there again.
	keep := len(batches) * 2 / 3
	if err := l.Truncate(int64(keep) * 64); err != nil {
		t.Fatal(err)
	}
	batches = batches[:keep]
	if got := len(segBases(t, l.dir)); got != 1 {
		t.Fatalf("%d segments after truncating into the first, want 1", got)
	}
	for i := 0; i < 8; i++ {
		appendOne()
	}
	first := segmentPath(l.dir, 0, logSuffix)
	size, blocks := blockBytes(t, first)
	if blocks < size+256<<10 {
		t.Fatalf("active segment of %d bytes holds %d bytes of blocks: nothing reserved", size, blocks)
	}
	close(hold)
	drainRolls(t, st)
	if size2, blocks2 := blockBytes(t, first); size2 != size || blocks2 < size+256<<10 {
		t.Fatalf("after the stale release: %d bytes, %d of blocks; want %d bytes and the reservation kept", size2, blocks2, size)
	}
	checkLog(t, l, batches)
}
