package replica

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/engine"
	_ "github.com/sluice/sluice/engine/pebblelog"
	"github.com/sluice/sluice/internal/faultfs"
	"github.com/sluice/sluice/metastore"
	"github.com/sluice/sluice/record"
	"github.com/sluice/sluice/replication"
	"github.com/sluice/sluice/segment"
)

// jbod is a metastore and n segment log dirs opened through a faultfs.FS,
// for Managers with several dirs.
type jbod struct {
	meta   *metastore.Store
	fs     *faultfs.FS
	paths  []string
	stores []engine.Store
	failed chan string // OnLogDirFailure's calls
	// backend is the storage backend; "" is "segment" through fs.
	backend string
}

func newJBOD(t *testing.T, n int) *jbod {
	t.Helper()
	root := t.TempDir()
	meta, err := metastore.Open(filepath.Join(root, "meta"), metastore.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { meta.Close() })
	j := &jbod{meta: meta, fs: faultfs.New(), failed: make(chan string, 16)}
	for i := range n {
		j.paths = append(j.paths, filepath.Join(root, fmt.Sprintf("d%d", i)))
	}
	return j
}

// open opens the stores of the dirs whose path exists or can be made; a
// dir that is a regular file is offline from the start.
func (j *jbod) open(t *testing.T) []LogDir {
	t.Helper()
	var dirs []LogDir
	j.stores = nil
	for _, p := range j.paths {
		o := engine.Options{Dir: p, Logger: slog.New(slog.DiscardHandler), RecoveryCheckpointInterval: -1}
		var st engine.Store
		var err error
		if j.backend == "" {
			st, err = segment.OpenFS(o, j.fs)
		} else {
			st, err = engine.Open(j.backend, o)
		}
		if err != nil {
			dirs = append(dirs, LogDir{Path: p, Err: err})
			continue
		}
		j.stores = append(j.stores, st)
		dirs = append(dirs, LogDir{Path: p, Store: st})
	}
	return dirs
}

func (j *jbod) manager(t *testing.T) *Manager {
	t.Helper()
	dirs := j.open(t)
	cfg := config.Default()
	cfg.LogCleanerEnable = false
	m := New(Options{
		Config: cfg, Meta: j.meta, Dirs: dirs, NodeID: 1,
		Logger: slog.New(slog.DiscardHandler), TopicConfig: testConfig,
		OnLogDirFailure: func(dir string) { j.failed <- dir },
	})
	if err := m.Load(); err != nil {
		t.Fatal(err)
	}
	return m
}

func (j *jbod) close(t *testing.T, m *Manager) {
	t.Helper()
	if err := m.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	for _, s := range j.stores {
		s.Close()
	}
}

// dirOfPartition returns the index of the dir holding name-part, -1 for
// none.
func (j *jbod) dirOfPartition(m *Manager, name string, part int32) int {
	got := m.LogDirOf(name, part)
	for i, p := range j.paths {
		if p == got {
			return i
		}
	}
	return -1
}

func batch(n int, value string) []byte {
	recs := make([]record.BuildRecord, n)
	for i := range recs {
		recs[i] = record.BuildRecord{Value: []byte(value), Timestamp: 1}
	}
	return record.AppendBatch(nil, record.BatchOptions{ProducerID: -1, BaseSequence: -1}, recs)
}

// waitFor polls cond until it holds; the deadline only ends a test that
// would otherwise hang, it asserts nothing about timing.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestLogDirsPlacementAndRestart: new partitions go to the dir holding the
// fewest (the first on a tie), each in Kafka's <dir>/<topic>-<partition>;
// a restart finds each partition, with its records, in its dir.
func TestLogDirsPlacementAndRestart(t *testing.T) {
	j := newJBOD(t, 2)
	m := j.manager(t)
	m.create(t, "a", 3, nil) // a-0 in d0, a-1 in d1, a-2 in d0 (a tie: the first)
	m.create(t, "b", 1, nil) // d1, which holds fewer
	type placed struct {
		name string
		part int32
		dir  int
	}
	want := []placed{{"a", 0, 0}, {"a", 1, 1}, {"a", 2, 0}, {"b", 0, 1}}
	for _, w := range want {
		if got := j.dirOfPartition(m, w.name, w.part); got != w.dir {
			t.Errorf("%s-%d in dir %d, want %d", w.name, w.part, got, w.dir)
		}
		if _, err := os.Stat(filepath.Join(j.paths[w.dir], fmt.Sprintf("%s-%d", w.name, w.part))); err != nil {
			t.Errorf("%s-%d: %v", w.name, w.part, err)
		}
	}
	for p := int32(0); p < 3; p++ {
		if _, err := m.Partition("a", p).Append(context.Background(), batch(2, "x"), 1); err != nil {
			t.Fatal(err)
		}
	}
	infos := m.LogDirs()
	if len(infos) != 2 || len(infos[0].Replicas) != 2 || len(infos[1].Replicas) != 2 {
		t.Fatalf("LogDirs: %+v", infos)
	}
	j.close(t, m)

	m = j.manager(t)
	defer j.close(t, m)
	for _, w := range want {
		if got := j.dirOfPartition(m, w.name, w.part); got != w.dir {
			t.Errorf("after restart %s-%d in dir %d, want %d", w.name, w.part, got, w.dir)
		}
	}
	for p := int32(0); p < 3; p++ {
		if end := m.Partition("a", p).LogEndOffset(); end != 2 {
			t.Errorf("after restart a-%d ends at %d, want 2", p, end)
		}
	}
}

// TestLogDirFailureTakesOnlyItsPartitionsOffline: an I/O error on a write
// in one dir takes that dir offline: its partitions answer
// KAFKA_STORAGE_ERROR (ErrLogDirOffline wrapping engine.ErrStorage), the
// failure is reported once, and the other dir's partitions keep taking
// appends.
func TestLogDirFailureTakesOnlyItsPartitionsOffline(t *testing.T) {
	j := newJBOD(t, 2)
	m := j.manager(t)
	defer j.close(t, m)
	m.create(t, "a", 4, nil) // a-0, a-2 in d0; a-1, a-3 in d1
	for p := int32(0); p < 4; p++ {
		if _, err := m.Partition("a", p).Append(context.Background(), batch(1, "before"), 1); err != nil {
			t.Fatal(err)
		}
	}
	j.fs.Fail(j.paths[1])
	p1 := m.Partition("a", 1)
	_, err := p1.Append(context.Background(), batch(1, "lost"), 1)
	if err == nil {
		t.Fatal("append to a failed disk succeeded")
	}
	m.ReportStorageError(p1, err) // as the produce path does
	if got := <-j.failed; got != j.paths[1] {
		t.Fatalf("OnLogDirFailure(%q), want %q", got, j.paths[1])
	}
	for _, p := range []int32{1, 3} {
		err := m.Offline("a", p)
		if !errors.Is(err, ErrLogDirOffline) || !errors.Is(err, engine.ErrStorage) {
			t.Errorf("a-%d: Offline = %v", p, err)
		}
		if m.Partition("a", p) != nil {
			t.Errorf("a-%d still served", p)
		}
	}
	for _, p := range []int32{0, 2} {
		if err := m.Offline("a", p); err != nil {
			t.Errorf("a-%d offline: %v", p, err)
		}
		if _, err := m.Partition("a", p).Append(context.Background(), batch(1, "after"), 1); err != nil {
			t.Errorf("a-%d append after the other dir failed: %v", p, err)
		}
	}
	paths, _ := m.OfflineLogDirs()
	if len(paths) != 1 || paths[0] != j.paths[1] {
		t.Errorf("OfflineLogDirs = %v", paths)
	}
	infos := m.LogDirs()
	if infos[1].Err == nil || len(infos[1].Replicas) != 0 || len(infos[0].Replicas) != 2 {
		t.Errorf("LogDirs after the failure: %+v", infos)
	}
	// A new partition goes to the live dir.
	m.create(t, "b", 2, nil)
	for p := int32(0); p < 2; p++ {
		if d := j.dirOfPartition(m, "b", p); d != 0 {
			t.Errorf("b-%d in dir %d, want the live dir 0", p, d)
		}
	}
}

// TestLogDirFailureFoundBySweep: a log that failed on its own (here an
// fsync of the periodic flush) takes its dir offline without the produce
// path reporting it.
func TestLogDirFailureFoundBySweep(t *testing.T) {
	j := newJBOD(t, 2)
	m := j.manager(t)
	defer j.close(t, m)
	m.create(t, "a", 2, nil)
	if _, err := m.Partition("a", 1).Append(context.Background(), batch(1, "x"), 1); err != nil {
		t.Fatal(err)
	}
	j.fs.Fail(j.paths[1])
	m.flushLogs()
	m.checkFailedLogs()
	if got := <-j.failed; got != j.paths[1] {
		t.Fatalf("OnLogDirFailure(%q), want %q", got, j.paths[1])
	}
	waitFor(t, "a-1 offline", func() bool { return m.Offline("a", 1) != nil && m.Partition("a", 1) == nil })
	if m.Offline("a", 0) != nil || m.Partition("a", 0) == nil {
		t.Fatal("a-0, in the live dir, went offline")
	}
}

// TestRestartWithALogDirMissing: a dir that cannot be opened at start is
// offline; the partitions of the other dirs open, those that may be in
// the missing dir are offline rather than created empty.
func TestRestartWithALogDirMissing(t *testing.T) {
	j := newJBOD(t, 2)
	m := j.manager(t)
	m.create(t, "a", 2, nil)
	for p := int32(0); p < 2; p++ {
		if _, err := m.Partition("a", p).Append(context.Background(), batch(3, "x"), 1); err != nil {
			t.Fatal(err)
		}
	}
	j.close(t, m)
	// The second disk is gone: its mount point is not a directory.
	if err := os.RemoveAll(j.paths[1]); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(j.paths[1], nil, 0o644); err != nil {
		t.Fatal(err)
	}
	m = j.manager(t)
	defer j.close(t, m)
	if p := m.Partition("a", 0); p == nil || p.LogEndOffset() != 3 {
		t.Fatalf("a-0 (live dir): %v", p)
	}
	if err := m.Offline("a", 1); !errors.Is(err, ErrLogDirOffline) || m.Partition("a", 1) != nil {
		t.Fatalf("a-1 (missing dir): Offline %v, partition %v", err, m.Partition("a", 1))
	}
	if paths, _ := m.OfflineLogDirs(); len(paths) != 1 || paths[0] != j.paths[1] {
		t.Fatalf("OfflineLogDirs = %v", paths)
	}
}

// TestMoveBetweenLogDirsUnderAppends moves a partition to the other dir
// while appends go on: the future replica shows in LogDirs, then the
// partition is in the target dir with every acknowledged record, in order,
// and Kafka's -future directory is gone.
func TestMoveBetweenLogDirsUnderAppends(t *testing.T) {
	for _, backend := range []string{"segment", "pebble", "memory"} {
		t.Run("backend="+backend, func(t *testing.T) {
			j := newJBOD(t, 2)
			if backend != "segment" {
				j.backend = backend
			}
			testMoveUnderAppends(t, j)
		})
	}
}

func testMoveUnderAppends(t *testing.T, j *jbod) {
	m := j.manager(t)
	defer j.close(t, m)
	m.create(t, "a", 1, nil) // in d0
	for i := range 200 {
		if _, err := m.Partition("a", 0).Append(context.Background(), batch(5, fmt.Sprint("pre", i)), 1); err != nil {
			t.Fatal(err)
		}
	}
	var acked []string
	var mu sync.Mutex
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			p := m.Partition("a", 0)
			if p == nil {
				continue
			}
			v := fmt.Sprintf("during%08d", i)
			if _, err := p.Append(context.Background(), batch(1, v), 1); err != nil {
				continue // the old replica closed under the append: retried as a client would
			}
			mu.Lock()
			acked = append(acked, v)
			mu.Unlock()
		}
	}()
	m.Lock()
	err := m.AlterReplicaLogDirLocked("a", 0, j.paths[1])
	m.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	sawFuture := false
	waitFor(t, "the move to finish", func() bool {
		for _, r := range m.LogDirs()[1].Replicas {
			sawFuture = sawFuture || r.IsFuture
		}
		return j.dirOfPartition(m, "a", 0) == 1
	})
	// The swap publishes the new replica before it lets the admin lock
	// go; appends after that land in the new dir.
	m.Lock()
	m.Unlock()
	mu.Lock()
	n := len(acked)
	mu.Unlock()
	waitFor(t, "appends after the move", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) > n
	})
	close(stop)
	<-done
	if !sawFuture {
		t.Log("the move finished before LogDirs was read: no future replica seen")
	}
	p := m.Partition("a", 0)
	if want := int64(1000 + len(acked)); p.LogEndOffset() != want {
		t.Fatalf("log end %d, want %d", p.LogEndOffset(), want)
	}
	// Walk the batches: the 200 first of 5 records, then one batch of one
	// record per acknowledged append, in order.
	var batches []record.Batch
	for off := int64(0); off < p.LogEndOffset(); {
		sl, err := p.ReadBelow(off, 1<<20, -1)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := sl.AppendTo(nil)
		sl.Release()
		for len(data) > 0 {
			b := record.Batch(data)
			batches = append(batches, b[:b.Size()])
			off = b.NextOffset()
			data = data[b.Size():]
		}
	}
	if len(batches) != 200+len(acked) {
		t.Fatalf("read %d batches, want %d", len(batches), 200+len(acked))
	}
	for i, v := range acked {
		if b := batches[200+i]; !bytes.Contains(b.Records(), []byte(v)) {
			t.Fatalf("batch %d does not hold %q", 200+i, v)
		}
	}
	if j.backend != "" {
		return // the file layout below is the segment backend's
	}
	entries, _ := os.ReadDir(j.paths[1])
	for _, e := range entries {
		if _, _, ok := engine.ParseFutureDirName(e.Name()); ok {
			t.Errorf("future dir left behind: %s", e.Name())
		}
	}
	if _, err := os.Stat(filepath.Join(j.paths[0], "a-0")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("old log still in the first dir: %v", err)
	}
	if _, err := os.Stat(filepath.Join(j.paths[1], "a-0")); err != nil {
		t.Errorf("moved log: %v", err)
	}
}

// TestClusterReplicaWithADirOffline: in cluster mode, with a log dir
// offline, a replica the controller names that is not here is refused
// (ErrOpen, KAFKA_STORAGE_ERROR: it may be in the offline dir) unless the
// partition is new (LeaderAndIsr is_new), which is created in a live dir,
// as Kafka's LogManager.getOrCreateLog decides.
func TestClusterReplicaWithADirOffline(t *testing.T) {
	j := newJBOD(t, 2)
	dirs := j.open(t)
	dirs[1] = LogDir{Path: dirs[1].Path, Err: errors.New("disk gone")}
	cfg := config.Default()
	cfg.LogCleanerEnable = false
	h := &fakeHooks{assigned: map[string][][]int32{"c": {{1, 2}, {1, 2}}}}
	m := New(Options{Config: cfg, Meta: j.meta, Dirs: dirs, NodeID: 1, Hooks: h,
		Logger: slog.New(slog.DiscardHandler), TopicConfig: testConfig})
	defer j.close(t, m)
	st := replication.LeaderAndIsr{Leader: 1, LeaderEpoch: 1, ISR: []int32{1, 2}, Replicas: []int32{1, 2}}
	m.Lock()
	err := m.BecomeLeaderOrFollowerLocked("c", [16]byte{7}, 0, st, 3)
	st.IsNew = true
	errNew := m.BecomeLeaderOrFollowerLocked("c", [16]byte{7}, 1, st, 3)
	m.Unlock()
	if !errors.Is(err, ErrOpen) || !errors.Is(err, engine.ErrStorage) {
		t.Errorf("replica not new: %v, want ErrOpen and a storage error", err)
	}
	if m.Partition("c", 0) != nil {
		t.Error("a replica that may be in the offline dir was created empty")
	}
	if errNew != nil || m.Partition("c", 1) == nil || j.dirOfPartition(m, "c", 1) != 0 {
		t.Errorf("new replica: %v, in dir %d", errNew, j.dirOfPartition(m, "c", 1))
	}
}

// TestDivergence: where a copy's log stops agreeing with its source, by
// their leader epochs (KIP-279's truncation).
func TestDivergence(t *testing.T) {
	ep := func(pairs ...int64) []engine.EpochEntry {
		var out []engine.EpochEntry
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, engine.EpochEntry{Epoch: int32(pairs[i]), StartOffset: pairs[i+1]})
		}
		return out
	}
	for _, tc := range []struct {
		name           string
		src, dst       []engine.EpochEntry
		srcEnd, dstEnd int64
		want           int64
	}{
		{"copy empty", ep(0, 0), nil, 100, 0, 0},
		{"same history, copy behind", ep(0, 0, 1, 50), ep(0, 0, 1, 50), 100, 70, 70},
		{"source truncated below the copy", ep(0, 0, 1, 50), ep(0, 0, 1, 50), 60, 70, 60},
		{"source moved on to a new epoch", ep(0, 0, 2, 80), ep(0, 0), 120, 90, 80},
		{"copy has an epoch the source lost", ep(0, 0, 2, 100), ep(0, 0, 1, 50), 150, 120, 50},
		{"nothing in common", ep(3, 0), ep(1, 0), 10, 10, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := divergence(tc.src, tc.dst, tc.srcEnd, tc.dstEnd); got != tc.want {
				t.Errorf("divergence = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestRestartDropsAnUnfinishedMove: a future log found at start (a move a
// restart interrupted) is deleted and the partition opens from its
// current log, whole.
func TestRestartDropsAnUnfinishedMove(t *testing.T) {
	j := newJBOD(t, 2)
	m := j.manager(t)
	m.create(t, "a", 1, nil) // in d0
	if _, err := m.Partition("a", 0).Append(context.Background(), batch(4, "x"), 1); err != nil {
		t.Fatal(err)
	}
	// The move's future log in d1, part copied, as a crash leaves it.
	fid := engine.FutureLogID(engine.PartitionID{Topic: "a", Partition: 0}, "00112233445566778899aabbccddeeff")
	fl, err := j.stores[1].CreateLog(fid, engine.LogConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fl.Append(batch(1, "x"), engine.AppendOptions{AssignOffsets: true}); err != nil {
		t.Fatal(err)
	}
	fl.Close()
	j.close(t, m)
	if _, err := os.Stat(filepath.Join(j.paths[1], fid.Topic)); err != nil {
		t.Fatalf("the future log is not Kafka's directory: %v", err)
	}

	m = j.manager(t)
	defer j.close(t, m)
	if _, err := os.Stat(filepath.Join(j.paths[1], fid.Topic)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("future log left after the restart: %v", err)
	}
	if p := m.Partition("a", 0); p == nil || p.LogEndOffset() != 4 || j.dirOfPartition(m, "a", 0) != 0 {
		t.Fatalf("a-0 after the restart: %v", p)
	}
	for _, info := range m.LogDirs() {
		for _, r := range info.Replicas {
			if r.IsFuture {
				t.Errorf("a future replica listed after the restart: %+v", r)
			}
		}
	}
}
