package segment

import (
	"bytes"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/internal/fsutil"
	"github.com/sluice/sluice/record"
)

func newLog(t testing.TB, cfg engine.LogConfig, clock *fakeClock) (*Store, *Log) {
	t.Helper()
	st := openStore(t, t.TempDir(), clock)
	t.Cleanup(func() { st.Close() })
	l, err := st.CreateLog(tp, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return st, l.(*Log)
}

func TestReadBounds(t *testing.T) {
	_, l := newLog(t, testCfg(), nil)
	batches := fill(t, l, rand.New(rand.NewSource(1)), 30, 0)
	b := func(i int) record.Batch { return record.Batch(batches[i]) }
	cat := func(from, to int) []byte { return bytes.Join(batches[from:to], nil) }
	// Offsets of batch 10 and where the segment holding it ends.
	l.mu.RLock()
	seg := l.segs[l.segmentFor(b(10).BaseOffset())]
	segEnd := len(batches)
	for i := range batches {
		if b(i).BaseOffset() >= seg.base+0 && i > 10 && b(i).BaseOffset() >= func() int64 {
			if idx := l.segmentFor(b(10).BaseOffset()); idx+1 < len(l.segs) {
				return l.segs[idx+1].base
			}
			return 1 << 62
		}() {
			segEnd = i
			break
		}
	}
	l.mu.RUnlock()
	mid := b(10).BaseOffset() + int64(b(10).LastOffsetDelta())
	cases := []struct {
		name     string
		offset   int64
		maxBytes int
		upTo     int64
		want     []byte
	}{
		{"one batch when maxBytes is tiny (KIP-74)", b(10).BaseOffset(), 1, -1, cat(10, 11)},
		{"offset inside a batch gives the whole batch", mid, 1, -1, cat(10, 11)},
		{"maxBytes 0 gives one batch", b(10).BaseOffset(), 0, -1, cat(10, 11)},
		{"maxBytes covers exactly two batches", b(10).BaseOffset(), len(cat(10, 12)), -1, cat(10, 12)},
		{"maxBytes one short of two batches", b(10).BaseOffset(), len(cat(10, 12)) - 1, -1, cat(10, 11)},
		{"a read stays in its segment", b(10).BaseOffset(), 1 << 20, -1, cat(10, segEnd)},
		{"upTo at a batch start excludes it", b(10).BaseOffset(), 1 << 20, b(11).BaseOffset(), cat(10, 11)},
		{"upTo inside a batch excludes it", b(10).BaseOffset(), 1 << 20, b(11).BaseOffset() + int64(b(11).LastOffsetDelta()), cat(10, 11)},
		{"upTo inside the first batch gives nothing", b(10).BaseOffset(), 1 << 20, mid, nil},
		{"offset at upTo gives nothing", b(10).BaseOffset(), 1 << 20, b(10).BaseOffset(), nil},
		{"offset at the end gives nothing", l.EndOffset(), 1 << 20, -1, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := sliceBytes(t, l, tc.offset, tc.maxBytes, tc.upTo); !bytes.Equal(got, tc.want) {
				t.Fatalf("read %d bytes, want %d", len(got), len(tc.want))
			}
		})
	}
	if _, err := l.Read(l.EndOffset()+1, 100, -1); !errors.Is(err, engine.ErrOffsetOutOfRange) {
		t.Fatalf("read past end: %v", err)
	}
	if err := l.DeleteBefore(b(5).BaseOffset()); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Read(b(4).BaseOffset(), 100, -1); !errors.Is(err, engine.ErrOffsetOutOfRange) {
		t.Fatalf("read below start: %v", err)
	}
}

func TestRollBySizeAndTime(t *testing.T) {
	clock := newClock()
	cfg := testCfg()
	cfg.SegmentMs = time.Hour
	_, l := newLog(t, cfg, clock)
	batches := fill(t, l, rand.New(rand.NewSource(2)), 30, 0)
	bases := segBases(t, l.dir)
	if len(bases) < 3 {
		t.Fatalf("%d segments, want several", len(bases))
	}
	for i, base := range bases {
		st, _ := os.Stat(segmentPath(l.dir, base, logSuffix))
		if i < len(bases)-1 && st.Size() > cfg.SegmentBytes {
			t.Errorf("segment %d is %d bytes, over %d", base, st.Size(), cfg.SegmentBytes)
		}
		if i < len(bases)-1 {
			// Rolled segments have trimmed indexes.
			if ist, _ := os.Stat(segmentPath(l.dir, base, indexSuffix)); ist.Size()%8 != 0 || ist.Size() >= int64(cfg.IndexMaxBytes) {
				t.Errorf("index of rolled segment %d is %d bytes", base, ist.Size())
			}
		}
	}
	if got := filepath.Base(segmentPath(l.dir, 42, logSuffix)); got != "00000000000000000042.log" {
		t.Fatalf("segment name %q", got)
	}
	// Age: a small append after segment.ms rolls.
	before := len(segBases(t, l.dir))
	clock.Advance(time.Hour)
	batches = append(batches, fill(t, l, rand.New(rand.NewSource(3)), 1, 0)...)
	if after := len(segBases(t, l.dir)); after != before+1 {
		t.Fatalf("segments %d -> %d after segment.ms", before, after)
	}
	checkLog(t, l, batches)
}

func TestRetention(t *testing.T) {
	t.Run("by time", func(t *testing.T) {
		clock := newClock()
		cfg := testCfg()
		cfg.RetentionMs = time.Minute
		st, l := newLog(t, cfg, clock)
		batches := fill(t, l, rand.New(rand.NewSource(4)), 30, 0) // timestamps 1000..1300
		segs := segBases(t, l.dir)
		// Timestamps are ~1970: everything is past retention, but the
		// active segment stays.
		start, err := l.ApplyRetention(clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		if start != segs[len(segs)-1] || l.StartOffset() != start {
			t.Fatalf("start %d, want %d", start, segs[len(segs)-1])
		}
		if got := segBases(t, l.dir); len(got) != 1 {
			t.Fatalf("segments left: %v", got)
		}
		m, err := readOffsetCheckpoint(filepath.Join(st.dir, logStartOffsetFile))
		if err != nil || m[tp] != start {
			t.Fatalf("log-start-offset checkpoint %v %v", m, err)
		}
		var kept [][]byte
		for _, b := range batches {
			if record.Batch(b).BaseOffset() >= start {
				kept = append(kept, b)
			}
		}
		checkLog(t, l, kept)
		// Nothing is old relative to a clock at the records' time.
		if s2, _ := l.ApplyRetention(time.UnixMilli(1000)); s2 != start {
			t.Fatalf("retention moved start to %d", s2)
		}
	})
	t.Run("by bytes", func(t *testing.T) {
		cfg := testCfg()
		cfg.RetentionBytes = 6 << 10
		_, l := newLog(t, cfg, nil)
		fill(t, l, rand.New(rand.NewSource(5)), 60, 0)
		before := l.Size()
		if _, err := l.ApplyRetention(time.UnixMilli(0)); err != nil {
			t.Fatal(err)
		}
		// Kafka's rule: whole segments go while the log stays at or
		// above retention.bytes without them.
		l.mu.RLock()
		first := l.segs[0].size.Load()
		l.mu.RUnlock()
		if l.Size() == before || l.Size()-first >= cfg.RetentionBytes || l.Size() < cfg.RetentionBytes {
			t.Fatalf("size %d -> %d (first segment %d), retention.bytes %d", before, l.Size(), first, cfg.RetentionBytes)
		}
		if segBases(t, l.dir)[0] != l.StartOffset() {
			t.Fatal("start offset is not the first segment's base")
		}
	})
}

func TestSliceSurvivesDeletion(t *testing.T) {
	for _, how := range []string{"retention", "DeleteLog", "DeleteBefore"} {
		t.Run(how, func(t *testing.T) {
			st, l := newLog(t, testCfg(), nil)
			batches := fill(t, l, rand.New(rand.NewSource(6)), 30, 0)
			s, err := l.Read(0, 1<<20, -1)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Release()
			firstSeg := segmentPath(l.dir, 0, logSuffix)
			switch how {
			case "retention":
				l.SetConfig(engine.LogConfig{SegmentBytes: 4 << 10, RetentionBytes: 1, RetentionMs: -1})
				_, err = l.ApplyRetention(time.Now())
			case "DeleteLog":
				err = st.DeleteLog(tp)
			case "DeleteBefore":
				err = l.DeleteBefore(l.EndOffset())
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(firstSeg); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("first segment still on disk: %v", err)
			}
			got, err := s.AppendTo(nil)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(bytes.Join(batches, nil), got) || len(got) == 0 {
				t.Fatal("slice bytes changed after deletion")
			}
		})
	}
}

func TestGroupCommit(t *testing.T) {
	cfg := testCfg()
	cfg.SegmentBytes = 1 << 20
	cfg.FlushMessages = 1
	_, l := newLog(t, cfg, nil)
	rng := rand.New(rand.NewSource(7))
	// Hold the first fsync until every other appender waits for one.
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	testHookFsync = func() {
		once.Do(func() {
			close(entered)
			<-release
		})
	}
	defer func() { testHookFsync = nil }()
	const writers = 8
	bs := make([][]byte, writers+1)
	for i := range bs {
		bs[i] = mkBatch(rng, 1, int64(i), 50)
	}
	var wg sync.WaitGroup
	errs := make(chan error, writers+1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, err := l.Append(bs[0], engine.AppendOptions{AssignOffsets: true})
		errs <- err
	}()
	<-entered
	for i := 1; i <= writers; i++ {
		wg.Add(1)
		go func(b []byte) {
			defer wg.Done()
			_, err := l.Append(b, engine.AppendOptions{AssignOffsets: true})
			errs <- err
		}(bs[i])
	}
	// Wait (bounded) until all writers wait on the running fsync.
	for i := 0; ; i++ {
		l.syncer.mu.Lock()
		w := l.syncer.waiters
		l.syncer.mu.Unlock()
		if w == writers {
			break
		}
		if i > 10000 {
			t.Fatalf("only %d writers waiting", w)
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if r := l.syncer.rounds.Load(); r != 2 {
		t.Fatalf("%d fsync rounds for %d appends, want 2 (group commit)", r, writers+1)
	}
	if l.RecoveryPoint() != l.EndOffset() {
		t.Fatalf("recovery point %d, end %d", l.RecoveryPoint(), l.EndOffset())
	}
}

func TestFlushAdvancesRecoveryPoint(t *testing.T) {
	cfg := testCfg()
	cfg.SegmentBytes = 1 << 20
	_, l := newLog(t, cfg, nil)
	fill(t, l, rand.New(rand.NewSource(8)), 5, 0)
	if l.RecoveryPoint() != 0 {
		t.Fatalf("recovery point %d before any flush", l.RecoveryPoint())
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if l.RecoveryPoint() != l.EndOffset() {
		t.Fatalf("recovery point %d after flush, end %d", l.RecoveryPoint(), l.EndOffset())
	}
	cfg.FlushMessages = 3
	l.SetConfig(cfg)
	rounds := l.syncer.rounds.Load()
	fill(t, l, rand.New(rand.NewSource(9)), 12, 0) // >= 12 records
	if got := l.syncer.rounds.Load() - rounds; got < 4 {
		t.Fatalf("%d fsyncs for >= 12 records with flush.messages=3", got)
	}
}

func TestTruncate(t *testing.T) {
	st, l := newLog(t, testCfg(), nil)
	batches := fill(t, l, rand.New(rand.NewSource(10)), 30, 1)
	l.Append(mkBatch(rand.New(rand.NewSource(1)), 2, 9999, 10), engine.AppendOptions{AssignOffsets: true, LeaderEpoch: 2})
	k := 17
	b := record.Batch(batches[k])
	if b.LastOffsetDelta() > 0 {
		if err := l.Truncate(b.BaseOffset() + 1); !errors.Is(err, ErrNotBatchBoundary) {
			t.Fatalf("truncate inside a batch: %v", err)
		}
	}
	if err := l.Truncate(b.BaseOffset()); err != nil {
		t.Fatal(err)
	}
	if got := l.LeaderEpochs(); len(got) != 1 || got[0].Epoch != 1 {
		t.Fatalf("epochs after truncate %v", got)
	}
	ep, err := readEpochCheckpoint(filepath.Join(l.dir, leaderEpochFile))
	if err != nil || len(ep) != 1 {
		t.Fatalf("epoch checkpoint %v %v", ep, err)
	}
	for _, base := range segBases(t, l.dir) {
		if base > b.BaseOffset() {
			t.Fatalf("segment %d left after truncating to %d", base, b.BaseOffset())
		}
	}
	checkLog(t, l, batches[:k])
	// Truncate to a segment base makes the previous segment active again.
	bases := segBases(t, l.dir)
	last := bases[len(bases)-1]
	if err := l.Truncate(last); err != nil {
		t.Fatal(err)
	}
	var kept [][]byte
	for _, w := range batches {
		if record.Batch(w).BaseOffset() < last {
			kept = append(kept, w)
		}
	}
	checkLog(t, l, kept)
	// The state survives a clean restart.
	st.Close()
	st2 := openStore(t, st.dir, nil)
	defer st2.Close()
	l2, err := st2.OpenLog(tp, testCfg())
	if err != nil {
		t.Fatal(err)
	}
	if l2.EndOffset() != l.EndOffset() {
		t.Fatalf("end %d after reopen, want %d", l2.EndOffset(), l.EndOffset())
	}
}

func TestOffsetForTimestamp(t *testing.T) {
	_, l := newLog(t, testCfg(), nil)
	rng := rand.New(rand.NewSource(11))
	// Record timestamps go up by 10 per batch, 1 per record; one batch
	// in the middle holds the largest timestamp twice.
	var batches [][]byte
	for i := 0; i < 40; i++ {
		ts := int64(1000 + 10*i)
		var b []byte
		if i == 20 || i == 25 {
			b = record.AppendBatch(nil, record.BatchOptions{ProducerID: -1}, []record.BuildRecord{{Value: []byte("a"), Timestamp: 99999}, {Value: []byte("b"), Timestamp: ts}, {Value: []byte("c"), Timestamp: 99999}})
		} else {
			b = mkBatch(rng, 3, ts, 100)
		}
		if _, err := l.Append(b, engine.AppendOptions{AssignOffsets: true}); err != nil {
			t.Fatal(err)
		}
		batches = append(batches, b)
	}
	b := func(i int) record.Batch { return record.Batch(batches[i]) }
	cases := []struct {
		name    string
		ts      int64
		off, at int64
		ok      bool
	}{
		{"before everything", 0, 0, 99999, true}, // first record of batch 0 has ts 1000
		{"exact record", 1000 + 10*7 + 1, b(7).BaseOffset() + 1, 1071, true},
		{"between records", 1000 + 10*7 + 5, b(8).BaseOffset(), 1080, true},
		{"max timestamp query is the latest record", engine.MaxTimestampQuery, b(25).BaseOffset() + 2, 99999, true},
		{"past everything", 100000, 0, 0, false},
	}
	cases[0].off, cases[0].at = 0, 1000
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			off, at, ok, err := l.OffsetForTimestamp(tc.ts)
			if err != nil || ok != tc.ok || (ok && (off != tc.off || at != tc.at)) {
				t.Fatalf("OffsetForTimestamp(%d) = %d, %d, %v, %v; want %d, %d, %v", tc.ts, off, at, ok, err, tc.off, tc.at, tc.ok)
			}
		})
	}
}

func TestDeleteBefore(t *testing.T) {
	st, l := newLog(t, testCfg(), nil)
	batches := fill(t, l, rand.New(rand.NewSource(12)), 30, 0)
	mid := record.Batch(batches[20])
	if err := l.DeleteBefore(mid.BaseOffset() + 1); err != nil {
		t.Fatal(err)
	}
	if l.StartOffset() != mid.BaseOffset()+1 {
		t.Fatalf("start %d", l.StartOffset())
	}
	if segBases(t, l.dir)[0] > mid.BaseOffset() {
		t.Fatal("deleted the segment holding the new start")
	}
	if err := l.DeleteBefore(l.EndOffset() + 1); !errors.Is(err, engine.ErrOffsetOutOfRange) {
		t.Fatalf("DeleteBefore past end: %v", err)
	}
	if err := l.DeleteBefore(0); err != nil {
		t.Fatal(err)
	}
	// A read at the start returns the batch holding it.
	if got := sliceBytes(t, l, l.StartOffset(), 1, -1); !bytes.Equal(got, batches[20]) {
		t.Fatal("read at start")
	}
	st.Close()
	st2 := openStore(t, st.dir, nil)
	defer st2.Close()
	l2, err := st2.OpenLog(tp, testCfg())
	if err != nil {
		t.Fatal(err)
	}
	if l2.StartOffset() != mid.BaseOffset()+1 {
		t.Fatalf("start %d after reopen", l2.StartOffset())
	}
}

func TestStoreLifecycle(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir, nil)
	if _, err := st.OpenLog(tp, testCfg()); !errors.Is(err, engine.ErrNoLog) {
		t.Fatalf("OpenLog of missing log: %v", err)
	}
	l, err := st.CreateLog(tp, testCfg())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateLog(tp, testCfg()); !errors.Is(err, engine.ErrLogExists) {
		t.Fatalf("CreateLog twice: %v", err)
	}
	if l2, _ := st.OpenLog(tp, testCfg()); l2 != l {
		t.Fatal("OpenLog of an open log returned another Log")
	}
	other := engine.PartitionID{Topic: "a-b-c", Partition: 12}
	if _, err := st.CreateLog(other, testCfg()); err != nil {
		t.Fatal(err)
	}
	ids, _ := st.ListLogs()
	if len(ids) != 2 {
		t.Fatalf("ListLogs %v", ids)
	}
	fill(t, l, rand.New(rand.NewSource(13)), 3, 4)
	if err := st.DeleteLog(other); err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteLog(other); !errors.Is(err, engine.ErrNoLog) {
		t.Fatalf("DeleteLog twice: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(mkBatch(rand.New(rand.NewSource(1)), 1, 1, 1), engine.AppendOptions{AssignOffsets: true}); !errors.Is(err, engine.ErrClosed) {
		t.Fatalf("append after close: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, cleanShutdownFile)); err != nil {
		t.Fatal("no clean-shutdown marker after Close")
	}
	rp, err := readOffsetCheckpoint(filepath.Join(dir, recoveryPointFile))
	if err != nil || rp[tp] != l.EndOffset() || len(rp) != 1 {
		t.Fatalf("recovery points %v %v", rp, err)
	}
	ep, err := readEpochCheckpoint(filepath.Join(dir, "topic-3", leaderEpochFile))
	if err != nil || len(ep) != 1 || ep[0].Epoch != 4 {
		t.Fatalf("epochs %v %v", ep, err)
	}
}

func TestUnrecoveredLogsKeepStoreUnclean(t *testing.T) {
	dir, batches := crashedLog(t, 14, false)
	// Open and close without opening the log: it was never recovered,
	// so the store must not claim a clean shutdown.
	st := openStore(t, dir, nil)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, cleanShutdownFile)); err == nil {
		t.Fatal("marker written with an unrecovered log")
	}
	s, l := reopen(t, dir)
	defer s.Close()
	checkLog(t, l, batches)
}

func TestPeriodicFlush(t *testing.T) {
	dir := t.TempDir()
	st, err := Open(engine.Options{Dir: dir, FlushInterval: time.Millisecond, Logger: quietLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	l, _ := st.CreateLog(tp, testCfg())
	fill(t, l, rand.New(rand.NewSource(15)), 3, 0)
	for i := 0; l.(*Log).RecoveryPoint() != l.EndOffset(); i++ {
		if i > 10000 {
			t.Fatal("periodic flush never advanced the recovery point")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestMaintainer: FlushAll moves every open log's recovery point to its
// end, as the periodic flush did, and CheckpointRecoveryPoints records
// them, so that the logs reopened after a crash start from there; after
// Close both refuse.
func TestMaintainer(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir, nil)
	cfg := testCfg()
	cfg.SegmentBytes = 1 << 20 // no roll, so no background flush
	ids := []engine.PartitionID{tp, {Topic: tp.Topic, Partition: tp.Partition + 1}}
	want := map[engine.PartitionID][][]byte{}
	for i, id := range ids {
		l, err := st.CreateLog(id, cfg)
		if err != nil {
			t.Fatal(err)
		}
		want[id] = fill(t, l, rand.New(rand.NewSource(int64(20+i))), 5, 0)
		if rp := l.(*Log).RecoveryPoint(); rp != 0 {
			t.Fatalf("%v: recovery point %d before any flush", id, rp)
		}
	}
	if err := st.FlushAll(); err != nil {
		t.Fatal(err)
	}
	for _, l := range st.openLogs() {
		if l.RecoveryPoint() != l.EndOffset() {
			t.Fatalf("%v: recovery point %d after FlushAll, end %d", l.id, l.RecoveryPoint(), l.EndOffset())
		}
	}
	if err := st.CheckpointRecoveryPoints(); err != nil {
		t.Fatal(err)
	}
	saved, err := readOffsetCheckpoint(filepath.Join(dir, recoveryPointFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range st.openLogs() {
		if saved[l.id] != l.EndOffset() {
			t.Fatalf("%v: checkpointed recovery point %d, end %d", l.id, saved[l.id], l.EndOffset())
		}
	}

	// Crash: abandon st (it runs no loop of its own) and reopen the dir.
	// Loading never raises a recovery point, so the reopened logs start
	// where the checkpoint says.
	st2 := openStore(t, dir, nil)
	for _, id := range ids {
		l, err := st2.OpenLog(id, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if rp := l.(*Log).RecoveryPoint(); rp != l.EndOffset() {
			t.Fatalf("%v: recovery point %d after a crash, end %d", id, rp, l.EndOffset())
		}
		checkLog(t, l, want[id]) // appends one more batch
	}
	if err := st2.Close(); err != nil {
		t.Fatal(err)
	}
	if err := st2.FlushAll(); !errors.Is(err, engine.ErrClosed) {
		t.Fatalf("FlushAll after Close: %v", err)
	}
	if err := st2.CheckpointRecoveryPoints(); !errors.Is(err, engine.ErrClosed) {
		t.Fatalf("CheckpointRecoveryPoints after Close: %v", err)
	}
}

// TestConcurrentReadAppend runs readers against an appender that rolls
// segments and applies retention: every read returns whole, valid batches
// that start at or before the offset asked for.
func TestConcurrentReadAppend(t *testing.T) {
	cfg := testCfg()
	cfg.RetentionBytes = 16 << 10
	_, l := newLog(t, cfg, nil)
	done := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(seed))
			for i := 0; i < 100000; i++ {
				select {
				case <-done:
					return
				default:
				}
				start, end := l.StartOffset(), l.EndOffset()
				if end == start {
					continue
				}
				off := start + rng.Int63n(end-start)
				s, err := l.Read(off, 1+rng.Intn(2000), -1)
				if errors.Is(err, engine.ErrOffsetOutOfRange) {
					continue // retention moved the start meanwhile
				}
				if err != nil {
					errs <- err
					return
				}
				b, err := s.AppendTo(nil)
				s.Release()
				if err != nil {
					errs <- err
					return
				}
				if _, _, err := record.ValidateAll(b); err != nil {
					errs <- err
					return
				}
				if first := record.Batch(b); first.BaseOffset() > off || first.LastOffset() < off {
					errs <- errors.New("read returned a batch that does not hold the offset")
					return
				}
			}
		}(int64(r))
	}
	rng := rand.New(rand.NewSource(99))
	for i := 0; i < 400; i++ {
		if _, err := l.Append(mkBatch(rng, 1+rng.Intn(3), int64(i), 10+rng.Intn(300)), engine.AppendOptions{AssignOffsets: true}); err != nil {
			t.Fatal(err)
		}
		if i%50 == 0 {
			if _, err := l.ApplyRetention(time.Now()); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func TestTruncateBelowStart(t *testing.T) {
	for _, target := range []string{"below start", "first base"} {
		t.Run(target, func(t *testing.T) {
			st, l := newLog(t, testCfg(), nil)
			batches := fill(t, l, rand.New(rand.NewSource(16)), 30, 2)
			to := int64(0)
			if target == "below start" {
				start := record.Batch(batches[20]).BaseOffset()
				if err := l.DeleteBefore(start); err != nil {
					t.Fatal(err)
				}
				to = start - 1
			}
			if err := l.Truncate(to); err != nil {
				t.Fatal(err)
			}
			if l.StartOffset() != to || l.EndOffset() != to || l.Size() != 0 {
				t.Fatalf("start %d end %d size %d, want empty at %d", l.StartOffset(), l.EndOffset(), l.Size(), to)
			}
			if got := segBases(t, l.dir); len(got) != 1 || got[0] != to {
				t.Fatalf("segments %v", got)
			}
			if len(l.LeaderEpochs()) != 0 {
				t.Fatalf("epochs %v", l.LeaderEpochs())
			}
			checkLog(t, l, nil)
			st.Close()
			s2, l2 := reopen(t, st.dir)
			defer s2.Close()
			if l2.StartOffset() != to || l2.EndOffset() != to+2 {
				t.Fatalf("after reopen start %d end %d", l2.StartOffset(), l2.EndOffset())
			}
		})
	}
}

// The active segment reserves blocks ahead of its end once it holds a
// MiB (fsutil.Reserver) without changing the .log's size, which stays the
// end of its data as Kafka's layout has it, and hands them back when it
// rolls, closes or is truncated.
func TestSegmentReservesBlocksAhead(t *testing.T) {
	cfg := testCfg()
	cfg.SegmentBytes = 8 << 20
	cfg.IndexMaxBytes = 1 << 20
	st, l := newLog(t, cfg, nil)
	rng := rand.New(rand.NewSource(9))
	var batches [][]byte
	var written int64
	for written < 3<<20 {
		b := mkBatch(rng, 64, 1000, 1000)
		if _, err := l.Append(b, engine.AppendOptions{AssignOffsets: true}); err != nil {
			t.Fatal(err)
		}
		batches = append(batches, b)
		written += int64(len(b))
	}
	active := segmentPath(l.dir, 0, logSuffix)
	size, blocks := blockBytes(t, active)
	if size != written {
		t.Fatalf(".log is %d bytes, its data %d", size, written)
	}
	if st.reserve.Off() {
		t.Skip("this file system has no fallocate")
	}
	if blocks < size+1<<20 {
		t.Fatalf("%d bytes of blocks for %d of data: nothing reserved ahead", blocks, size)
	}

	// Truncation releases: a follower's truncation cuts the active segment.
	if err := l.Truncate(int64(len(batches)/2) * 64); err != nil {
		t.Fatal(err)
	}
	batches = batches[:len(batches)/2]
	size, blocks = blockBytes(t, active)
	if blocks > size+64<<10 {
		t.Fatalf("after truncation to %d bytes, %d bytes of blocks", size, blocks)
	}

	// Grow past the reservation point again, then roll by size.
	for {
		b := mkBatch(rng, 64, 1000, 1000)
		if _, err := l.Append(b, engine.AppendOptions{AssignOffsets: true}); err != nil {
			t.Fatal(err)
		}
		batches = append(batches, b)
		if len(segBases(t, l.dir)) > 1 {
			break
		}
	}
	drainRolls(t, st) // the release runs after the roll's flush
	size, blocks = blockBytes(t, active)
	if blocks > size+64<<10 {
		t.Fatalf("rolled segment of %d bytes keeps %d bytes of blocks", size, blocks)
	}
	checkLog(t, l, batches)

	// Close releases what the new active segment reserved.
	for i := 0; i < 40; i++ {
		b := mkBatch(rng, 64, 1000, 1000)
		if _, err := l.Append(b, engine.AppendOptions{AssignOffsets: true}); err != nil {
			t.Fatal(err)
		}
		batches = append(batches, b)
	}
	bases := segBases(t, l.dir)
	last := segmentPath(l.dir, bases[len(bases)-1], logSuffix)
	if size, blocks := blockBytes(t, last); blocks < size+1<<20 {
		t.Fatalf("new active segment of %d bytes holds %d bytes of blocks: nothing reserved", size, blocks)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	size, blocks = blockBytes(t, last)
	if blocks > size+64<<10 {
		t.Fatalf("closed active segment of %d bytes keeps %d bytes of blocks", size, blocks)
	}
}

// blockBytes returns a file's size and the bytes of the blocks it holds.
func blockBytes(t *testing.T, path string) (size, blocks int64) {
	size, blocks, ok, err := fsutil.Allocated(path)
	if err != nil || !ok {
		t.Fatalf("blocks of %s: %v (counted: %v)", path, err, ok)
	}
	return size, blocks
}
