package segment

import (
	"bytes"
	"errors"
	"io"
	"math/rand"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/zerocopy"
)

// withOpenMax opens stores with an open-segment cache of n for the test.
func withOpenMax(t testing.TB, n int) {
	old := defaultOpenSegmentsMax()
	setOpenSegmentsMax(n)
	t.Cleanup(func() { setOpenSegmentsMax(old) })
}

// countFds returns the process's open descriptors and mappings.
func countFds(t testing.TB) (fds, maps int) {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skip("no /proc/self/maps:", err)
	}
	return len(ents), strings.Count(string(b), "\n")
}

// sendSlice puts s on a loopback TCP connection with zerocopy.Writer
// (sendfile) and returns what arrives.
func sendSlice(t testing.TB, s zerocopy.Slice) []byte {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		got <- b
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	w := zerocopy.NewWriter(c)
	if !w.Sendfile() {
		t.Log("no sendfile on this connection: the copy path is tested instead")
	}
	w.AddSlice(s)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	return <-got
}

// TestOpenCacheEvictedSliceStaysReadable holds a slice of a segment across
// its eviction: the slice still reads and sendfiles its bytes (the
// descriptor lives until the slice is released), and the log reopens the
// segment for the next read.
func TestOpenCacheEvictedSliceStaysReadable(t *testing.T) {
	noFsync(t)
	withOpenMax(t, 1)
	st := openStore(t, t.TempDir(), nil)
	defer st.Close()
	rng := rand.New(rand.NewSource(1))
	la, err := st.CreateLog(engine.PartitionID{Topic: "a", Partition: 0}, testCfg())
	if err != nil {
		t.Fatal(err)
	}
	want := fill(t, la, rng, 5, 1)
	sl, err := la.Read(0, 1<<20, -1)
	if err != nil {
		t.Fatal(err)
	}
	first := la.(*Log).segs[0]
	lb, err := st.CreateLog(engine.PartitionID{Topic: "b", Partition: 0}, testCfg())
	if err != nil {
		t.Fatal(err)
	}
	fill(t, lb, rng, 3, 1) // pins b's segment: a's is evicted
	first.hmu.Lock()
	open := first.open
	first.hmu.Unlock()
	if open {
		t.Fatalf("segment of a still open with a cache of 1 (open segments: %d)", st.cache.ring.Len())
	}
	if _, _, ev := st.OpenSegments(); ev == 0 {
		t.Fatal("no eviction counted")
	}
	var wantBytes []byte
	for _, b := range want {
		wantBytes = append(wantBytes, b...)
	}
	buf := make([]byte, sl.Len())
	if _, err := sl.ReadAt(buf, 0); err != nil {
		t.Fatalf("read of a slice of an evicted segment: %v", err)
	}
	if !bytes.Equal(buf, wantBytes[:len(buf)]) {
		t.Fatal("slice of an evicted segment reads other bytes")
	}
	sl2 := sl // the writer releases its slice; keep ours for sendfile
	if got := sendSlice(t, sl2); !bytes.Equal(got, wantBytes[:len(buf)]) {
		t.Fatalf("sendfile of an evicted segment's slice: got %d bytes, want %d", len(got), len(buf))
	}
	// Reopen on the next read, and append to a reopened active segment.
	checkBytes(t, la, want)
	fill(t, lb, rng, 1, 1) // evict a's segment again
	want = append(want, fill(t, la, rng, 3, 1)...)
	checkLog(t, la, want)
	if _, re, _ := st.OpenSegments(); re == 0 {
		t.Fatal("no reopen counted")
	}
}

// TestOpenCacheManyLogs appends to and reads 2,000 logs, several segments
// each, through a cache of 50 segments: the open descriptors and mappings
// stay within the cache's bound, then a clean restart and a crash restart
// find every batch.
func TestOpenCacheManyLogs(t *testing.T) {
	noFsync(t)
	const logs, cacheMax = 2000, 50
	withOpenMax(t, cacheMax)
	dir := t.TempDir()
	fds0, maps0 := countFds(t)
	st := openStore(t, dir, nil)
	rng := rand.New(rand.NewSource(2))
	cfg := testCfg()
	want := make([][][]byte, logs)
	ls := make([]engine.Log, logs)
	maxFds, maxMaps := 0, 0
	sample := func() {
		fds, maps := countFds(t)
		maxFds, maxMaps = max(maxFds, fds-fds0), max(maxMaps, maps-maps0)
	}
	for i := range logs {
		l, err := st.CreateLog(engine.PartitionID{Topic: "t", Partition: int32(i)}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		ls[i] = l
		want[i] = fill(t, l, rng, 2, 1)
		if i%100 == 0 {
			sample()
		}
	}
	for round := range 3 {
		for _, i := range rng.Perm(logs)[:400] {
			want[i] = append(want[i], fill(t, ls[i], rng, 1+round, 1)...)
		}
		sample()
	}
	for i := 0; i < logs; i += 7 {
		checkBytes(t, ls[i], want[i])
	}
	sample()
	// Each open segment: 1 descriptor (the index files are closed once
	// mapped), 2 mappings; slack for the runtime, the test's own files
	// and pinned segments.
	if limit := cacheMax + 32; maxFds > limit {
		t.Errorf("open descriptors grew by %d, bound %d", maxFds, limit)
	}
	if limit := cacheMax*2 + 32; maxMaps > limit {
		t.Errorf("mappings grew by %d, bound %d", maxMaps, limit)
	}
	open, re, ev := st.OpenSegments()
	t.Logf("%d logs, cache %d: max +%d fds, +%d maps; open %d, reopens %d, evictions %d", logs, cacheMax, maxFds, maxMaps, open, re, ev)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st = openStore(t, dir, nil)
	for i := 0; i < logs; i += 13 {
		l, err := st.OpenLog(engine.PartitionID{Topic: "t", Partition: int32(i)}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		checkBytes(t, l, want[i])
		want[i] = append(want[i], fill(t, l, rng, 2, 1)...)
	}
	// Crash: abandon the store, then recover.
	st = openStore(t, dir, nil)
	defer st.Close()
	for i := 0; i < logs; i += 13 {
		l, err := st.OpenLog(engine.PartitionID{Topic: "t", Partition: int32(i)}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		checkLog(t, l, want[i])
	}
}

// TestPeriodicRecoveryCheckpoint checks that the periodic checkpoint
// (log.flush.offset.checkpoint.interval.ms) records the recovery point
// that background flushes of rolled segments reach, so that recovery after
// a crash validates only the segments past it.
func TestPeriodicRecoveryCheckpoint(t *testing.T) {
	noFsync(t)
	setRecoveryCheckpointInterval(5 * time.Millisecond)
	t.Cleanup(func() { setRecoveryCheckpointInterval(0) })
	dir := t.TempDir()
	st := openStore(t, dir, nil)
	el, err := st.CreateLog(tp, testCfg())
	if err != nil {
		t.Fatal(err)
	}
	l := el.(*Log)
	want := fill(t, l, rand.New(rand.NewSource(3)), 60, 1)
	l.mu.RLock()
	nsegs := len(l.segs)
	lastBase := l.active().base
	var total int64
	for _, s := range l.segs {
		total += s.size.Load()
	}
	l.mu.RUnlock()
	if nsegs < 4 {
		t.Fatalf("only %d segments: the test needs rolls", nsegs)
	}
	// Wait (no time assertion: as long as it takes) for the background
	// flushes of the rolled segments and a checkpoint that records them.
	for {
		m, err := readOffsetCheckpoint(filepath.Join(dir, recoveryPointFile))
		if err == nil && m[tp] >= lastBase {
			break
		}
		time.Sleep(time.Millisecond)
	}
	// Crash: abandon st (its loop is stopped so it cannot write later).
	close(st.stopCkpt)
	<-st.ckptDone
	st.stopCkpt = nil
	setRecoveryCheckpointInterval(0)
	st2 := openStore(t, dir, nil)
	defer st2.Close()
	l2, err := st2.OpenLog(tp, testCfg())
	if err != nil {
		t.Fatal(err)
	}
	checkLog(t, l2, want)
	if got := st2.recoveredBytes.Load(); got >= total || got > 4<<10 {
		t.Fatalf("recovery validated %d bytes of %d: the checkpoint at %d should leave only the active segment", got, total, lastBase)
	}
	t.Logf("recovered %d of %d bytes", st2.recoveredBytes.Load(), total)
}

// TestCloseUnchangedLogsNoFsync: a clean stop fsyncs no log that has
// nothing past its recovery point (a reopened log, or one flushed and not
// written since), and with syncfs no log at all: one syncfs of the log
// dir covers the changed ones, whose recovery points then reach their
// ends. (The checkpoints are one file per log dir already.)
func TestCloseUnchangedLogsNoFsync(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir, nil)
	ids := []engine.PartitionID{{Topic: "a", Partition: 0}, {Topic: "b", Partition: 0}}
	rng := rand.New(rand.NewSource(4))
	for _, id := range ids {
		l, err := st.CreateLog(id, testCfg())
		if err != nil {
			t.Fatal(err)
		}
		fill(t, l, rng, 3, 1)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st = openStore(t, dir, nil)
	var logs []*Log
	for _, id := range ids {
		l, err := st.OpenLog(id, testCfg())
		if err != nil {
			t.Fatal(err)
		}
		logs = append(logs, l.(*Log))
	}
	fill(t, logs[1], rng, 1, 1) // b changed
	ends := []int64{logs[0].EndOffset(), logs[1].EndOffset()}
	if logs[1].RecoveryPoint() >= ends[1] {
		t.Fatalf("changed log: recovery point %d at its end %d before Close", logs[1].RecoveryPoint(), ends[1])
	}
	want := int64(1) // one fsync round of b's files
	if st.dirf != nil {
		want = 0 // the store's syncfs
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if got := logs[0].syncer.rounds.Load(); got != 0 {
		t.Errorf("unchanged log: %d fsync rounds at close, want 0", got)
	}
	if got := logs[1].syncer.rounds.Load(); got != want {
		t.Errorf("changed log: %d fsync rounds at close, want %d", got, want)
	}
	st = openStore(t, dir, nil)
	defer st.Close()
	if !st.clean {
		t.Fatal("no clean-shutdown marker")
	}
	for i, id := range ids {
		if rp := st.recoveryPoints[id]; rp != ends[i] {
			t.Errorf("%v: checkpointed recovery point %d, end %d", id, rp, ends[i])
		}
	}
}

// TestLogCloseLeavesSyncToStore: Log.Close (a partition closed while the
// broker runs) keeps the log's durable recovery point, a reopen in the
// same store does not raise it, and the store's Close raises it to the
// end once its syncfs (or, without one, the log's own flush) is done.
func TestLogCloseLeavesSyncToStore(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir, nil)
	id := engine.PartitionID{Topic: "a", Partition: 0}
	el, err := st.CreateLog(id, testCfg())
	if err != nil {
		t.Fatal(err)
	}
	fill(t, el, rand.New(rand.NewSource(5)), 3, 1)
	l := el.(*Log)
	end, rp := l.EndOffset(), l.RecoveryPoint()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if st.dirf != nil && st.recoveryPoints[id] != rp {
		t.Fatalf("recovery point %d after Log.Close, was %d: raised without an fsync", st.recoveryPoints[id], rp)
	}
	el, err = st.OpenLog(id, testCfg())
	if err != nil {
		t.Fatal(err)
	}
	if got := el.(*Log).RecoveryPoint(); st.dirf != nil && got != rp {
		t.Fatalf("recovery point %d after a reopen, was %d", got, rp)
	}
	if err := el.Close(); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st = openStore(t, dir, nil)
	defer st.Close()
	if !st.clean || st.recoveryPoints[id] != end {
		t.Fatalf("clean %v, checkpointed recovery point %d, want %d", st.clean, st.recoveryPoints[id], end)
	}
}

// TestEvictedIndexesTrimmedAtClose: the cache unmaps an evicted active
// segment's indexes without trimming them (the next pin maps them at the
// same size), and the store's clean close still leaves every index file
// trimmed to its entries, as Kafka's layout has it; appends to segments
// evicted and reopened in between keep their entries.
func TestEvictedIndexesTrimmedAtClose(t *testing.T) {
	noFsync(t)
	const logs = 8
	withOpenMax(t, 2)
	dir := t.TempDir()
	st := openStore(t, dir, nil)
	rng := rand.New(rand.NewSource(3))
	cfg := engine.LogConfig{SegmentBytes: 1 << 20, IndexIntervalBytes: 256, IndexMaxBytes: 1 << 16, RetentionMs: -1, RetentionBytes: -1}
	want := make([][][]byte, logs)
	ls := make([]engine.Log, logs)
	for i := range logs {
		l, err := st.CreateLog(engine.PartitionID{Topic: "t", Partition: int32(i)}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		ls[i] = l
	}
	for round := range 4 {
		for i, l := range ls {
			// Enough batches that the indexes get mapped (pendMax).
			want[i] = append(want[i], fill(t, l, rng, 2*pendMax, 1)...)
			if round == 1 {
				checkBytes(t, l, want[i]) // a full pin of an evicted segment
			}
		}
	}
	// Reads from the start pin each segment in full (indexes mapped),
	// so the cache evicts them mapped.
	for i, l := range ls {
		checkBytes(t, l, want[i])
	}
	if _, _, ev := st.OpenSegments(); ev == 0 {
		t.Fatal("no eviction")
	}
	// Log 0's active segment was evicted with its indexes mapped: they
	// are released, still at their preallocated size. The segment's own
	// close (a store's close pins it first to flush; this is the path
	// without a pin) trims them.
	seg := ls[0].(*Log).segs[0]
	idxPath := filepath.Join(dir, "t-0", "00000000000000000000.index")
	seg.hmu.Lock()
	evicted := !seg.open && seg.released != nil
	seg.hmu.Unlock()
	if !evicted {
		t.Fatal("log 0's segment is not evicted with released indexes")
	}
	if fi, err := os.Stat(idxPath); err != nil || fi.Size() != 1<<16 {
		t.Fatalf("evicted index: %v %v, want it preallocated", fi, err)
	}
	if err := seg.close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(idxPath); err != nil || fi.Size() == 1<<16 || fi.Size()%8 != 0 {
		t.Fatalf("closed evicted index: %v %v, want it trimmed", fi, err)
	}
	// Log 0's flush at the store's close finds its segment closed: that
	// error, and only it.
	if err := st.Close(); err != nil && !errors.Is(err, errClosedLog) {
		t.Fatal(err)
	}
	for i := range logs {
		for _, suf := range []struct {
			name string
			size int64
		}{{".index", 8}, {".timeindex", 12}} {
			p := filepath.Join(dir, "t-"+strconv.Itoa(i), "00000000000000000000"+suf.name)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if len(b) == 0 || int64(len(b))%suf.size != 0 {
				t.Fatalf("%s: %d bytes after a clean close", p, len(b))
			}
			if last := b[int64(len(b))-suf.size:]; bytes.Count(last, []byte{0}) == len(last) {
				t.Fatalf("%s ends with a zero entry: not trimmed (%d bytes)", p, len(b))
			}
		}
	}
	st = openStore(t, dir, nil)
	defer st.Close()
	for i := range logs {
		l, err := st.OpenLog(engine.PartitionID{Topic: "t", Partition: int32(i)}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		checkLog(t, l, want[i])
	}
}
