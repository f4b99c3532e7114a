package pebblelog

// Tests of the holes a review of the data-file rewrite (branch pebfile)
// found: each asserts the behaviour the store must have and failed before
// its fix. Their comments describe the hole as it was.

import (
	"bytes"
	"errors"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"golang.org/x/sys/unix"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/record"
)

// TestMissingDataFileAfterPowerLoss: a log's first append creates its data
// file and commits its pointers synced, but the new directory entry is only
// fsynced at a later flush. A power loss before that flush can leave a WAL
// that names a data file that does not exist. checkShutdown marks for
// recovery only the data files it finds in the directory, so this log is
// never verified: every read fails with ErrStorage, and after the next
// append (which recreates the file at the stored append position, leaving a
// hole) reads of the old offsets return zeros as record batches.
func TestMissingDataFileAfterPowerLoss(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	defer s.Close()
	l, _ := s.CreateLog(pid, engine.LogConfig{})
	for i := 0; i < 5; i++ {
		mustAppend(t, l, batch(2, int64(i), "a"), 1)
	}
	// A synced commit of anything (here an empty one) makes the index
	// durable; no flush of the data file or of records/ happened.
	if err := s.(*Store).db.LogData(nil, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	wal := t.TempDir()
	copyFiles(t, dir, wal)
	img := crashImage(t, wal, dir)
	if err := os.Remove(dataFileOf(t, img, l)); err != nil { // the directory entry did not survive
		t.Fatal(err)
	}

	s2 := open(t, img)
	defer s2.Close()
	l2, err := s2.OpenLog(pid, engine.LogConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after recovery: start %d end %d (10 records were indexed, none survived)", l2.StartOffset(), l2.EndOffset())
	if _, err := l2.Read(l2.StartOffset(), 1<<20, -1); err != nil && l2.EndOffset() > l2.StartOffset() {
		t.Errorf("read after recovery: %v (recovery kept an index naming a missing file)", err)
	}
	mustAppend(t, l2, batch(1, 0, "new"), 2)
	for off := l2.StartOffset(); off < l2.EndOffset(); {
		sl, err := l2.Read(off, 1<<20, -1)
		if err != nil {
			t.Fatalf("read at %d after an append: %v", off, err)
		}
		b, err := sl.AppendTo(nil)
		sl.Release()
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := record.ValidateAllStored(b); err != nil {
			t.Fatalf("read at %d served %d bytes that are not batches (zeros: %v): %v",
				off, len(b), len(b) > 0 && bytes.Count(b, []byte{0}) == len(b), err)
		}
		if len(b) == 0 {
			break
		}
		var last record.Batch
		for p := 0; p < len(b); p += record.Batch(b[p:]).Size() {
			last = record.Batch(b[p:])
		}
		off = last.NextOffset()
	}
}

// TestDeleteLogVsFirstAppend: DeleteLog holds s.mu and then takes
// the log's writeMu (markClosed); the first Append of a log holds writeMu
// and then takes s.mu (dataFileLocked). Run together they deadlock, and the
// store with them (s.mu is never released).
func TestDeleteLogVsFirstAppend(t *testing.T) {
	s := open(t, t.TempDir())
	big := batch(4000, 1, strings.Repeat("v", 200)) // validating it keeps writeMu held a while
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 300; i++ {
			id := engine.PartitionID{Topic: "dl", Partition: int32(i)}
			l, err := s.CreateLog(id, engine.LogConfig{})
			if err != nil {
				t.Error(err)
				return
			}
			var wg sync.WaitGroup
			wg.Add(1)
			started := make(chan struct{})
			go func() {
				defer wg.Done()
				close(started)
				l.Append(append([]byte(nil), big...), engine.AppendOptions{AssignOffsets: true, LeaderEpoch: 1})
			}()
			<-started
			for k := 0; k < i%7; k++ {
				runtime.Gosched()
			}
			if err := s.DeleteLog(id); err != nil {
				t.Error(err)
				return
			}
			wg.Wait()
		}
	}()
	select {
	case <-done:
		s.Close()
	case <-time.After(60 * time.Second):
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		t.Fatalf("DeleteLog and a first Append deadlocked:\n%s", buf[:n])
	}
}

// TestDeleteLogVsFirstAppendLockOrder is the same lock cycle
// driven step by step through the functions Append uses.
func TestDeleteLogVsFirstAppendLockOrder(t *testing.T) {
	s := open(t, t.TempDir())
	lg, _ := s.CreateLog(pid, engine.LogConfig{})
	l := lg.(*Log)
	st := s.(*Store)
	// Append: life shared, writeMu, validate...
	st.life.RLock()
	l.writeMu.Lock()
	deleted := make(chan error, 1)
	go func() { deleted <- s.DeleteLog(pid) }()
	// DeleteLog now holds s.mu and waits for writeMu.
	for i := 0; i < 1000 && st.mu.TryLock(); i++ {
		st.mu.Unlock()
		time.Sleep(time.Millisecond)
	}
	got := make(chan *dataFile, 1)
	go func() { got <- l.dataFileLocked() }() // Append's next step: writeLocked -> dataFileLocked -> s.mu
	select {
	case <-got:
		l.writeMu.Unlock()
		st.life.RUnlock()
		<-deleted
	case <-time.After(3 * time.Second):
		t.Fatalf("first append (writeMu held) waits for s.mu, held by DeleteLog waiting for writeMu: deadlock")
	}
}

// setPointer overwrites the 0x06 value of log n at base with a pointer.
func setPointer(t *testing.T, s engine.Store, n uint64, base, pos int64, size int, lod int32) {
	t.Helper()
	var ptr [pointerLen]byte
	if err := s.(*Store).db.Set(newLogKey(tagBatch, n, base), encodePointer(ptr[:], pos, size, lod), pebble.Sync); err != nil {
		t.Fatal(err)
	}
}

const hugePointerSize = 512 << 20 // a damaged size field; u32 allows up to 4 GiB

// allocDuring returns the bytes allocated while fn ran.
func allocDuring(fn func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	fn()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// TestDamagedPointerSizeRecovery: after an unclean shutdown,
// verifyUnflushed allocates a pointer's size before checking it against the
// file: a damaged index entry makes OpenLog allocate up to 4 GiB.
func TestDamagedPointerSizeRecovery(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	defer s.Close()
	l, _ := s.CreateLog(pid, engine.LogConfig{})
	for i := 0; i < 4; i++ {
		mustAppend(t, l, batch(2, int64(i), "a"), 1)
	}
	b := batch(2, 0, "a")
	setPointer(t, s, l.(*Log).n, 6, int64(3*len(b)), hugePointerSize, 1)
	wal := t.TempDir()
	copyFiles(t, dir, wal)
	img := crashImage(t, wal, dir)
	s2 := open(t, img)
	defer s2.Close()
	var err error
	n := allocDuring(func() { _, err = s2.OpenLog(pid, engine.LogConfig{}) })
	t.Logf("OpenLog: %v; allocated %d MiB for a %d-byte data file", err, n>>20, 4*len(b))
	if n > 64<<20 {
		t.Fatalf("recovery allocated %d MiB for a damaged pointer size (file holds %d bytes)", n>>20, 4*len(b))
	}
}

// TestDamagedPointerSizeTimeLookup: readBatch (OffsetForTimestamp,
// MaxTimestampQuery) allocates a pointer's size before checking it against
// the file, on a cleanly closed store.
func TestDamagedPointerSizeTimeLookup(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	l, _ := s.CreateLog(pid, engine.LogConfig{})
	for i := 0; i < 4; i++ {
		mustAppend(t, l, batch(2, int64(10*i), "a"), 1)
	}
	b := batch(2, 0, "a")
	setPointer(t, s, l.(*Log).n, 6, int64(3*len(b)), hugePointerSize, 1)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir)
	defer s.Close()
	l, err := s.OpenLog(pid, engine.LogConfig{})
	if err != nil {
		t.Fatal(err)
	}
	n := allocDuring(func() { _, _, _, err = l.OffsetForTimestamp(30) })
	t.Logf("OffsetForTimestamp: %v; allocated %d MiB", err, n>>20)
	if err == nil || !errors.Is(err, engine.ErrCorruptStore) {
		t.Errorf("OffsetForTimestamp over a damaged pointer: %v, want ErrCorruptStore", err)
	}
	if n > 64<<20 {
		t.Fatalf("time lookup allocated %d MiB for a damaged pointer size", n>>20)
	}
}

// batchOfSize builds a batch of n records whose encoded size is exactly
// size (values padded), or fails the test.
func batchOfSize(t *testing.T, n int, ts int64, size int) []byte {
	t.Helper()
	for k := 1; k < size; k++ {
		for extra := 0; extra < 8; extra++ {
			recs := make([]record.BuildRecord, n)
			for i := range recs {
				l := k
				if i == n-1 {
					l += extra
				}
				recs[i] = record.BuildRecord{Value: bytes.Repeat([]byte{'n'}, l), Timestamp: ts + int64(i)}
			}
			b := record.AppendBatch(nil, record.BatchOptions{ProducerID: -1}, recs)
			if len(b) == size {
				return b
			}
			if len(b) > size+16 {
				break
			}
		}
	}
	t.Fatalf("no %d-record batch of %d bytes", n, size)
	return nil
}

// TestPowerLossCutRemovesTail: when power-loss
// verification (step 1) cuts the index, recovery returns without cutting the
// data file, so the unindexed tail past the stored append position stays.
// New appends overwrite it from the append position on; if the new batches
// end exactly where an old tail batch starts and at that batch's base
// offset, the next unclean restart's tail scan (step 2) indexes the old
// batch: records of the cut history reappear after the new ones, with a
// stale leader epoch.
func TestPowerLossCutRemovesTail(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	defer s.Close()
	l, _ := s.CreateLog(pid, engine.LogConfig{})
	for i := 0; i < 5; i++ {
		mustAppend(t, l, batch(2, int64(i), "a"), 1)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	flushed := l.(*Log).df.pos.Load()
	old := func(v string) []byte { return batch(2, 100, v+strings.Repeat("o", 60)) }
	sz := int64(len(old("A1")))
	for _, v := range []string{"A1", "A2", "A3"} { // offsets 10-15
		mustAppend(t, l, old(v), 1)
	}
	if err := s.(*Store).db.LogData(nil, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	wal1 := t.TempDir()
	copyFiles(t, dir, wal1)
	for _, v := range []string{"T1", "T2"} { // offsets 16-19: index lost, bytes kept
		mustAppend(t, l, old(v), 1)
	}
	img := crashImage(t, wal1, dir)
	// Power loss: A2's page never reached the disk.
	f, _ := os.OpenFile(dataFileOf(t, img, l), os.O_WRONLY, 0)
	f.WriteAt(make([]byte, sz), flushed+sz)
	f.Close()

	s2 := open(t, img)
	l2, err := s2.OpenLog(pid, engine.LogConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if l2.EndOffset() != 12 {
		t.Fatalf("step 1 cut at %d, want 12", l2.EndOffset())
	}
	// The new life: one batch of offsets 12-17 that happens to be as long
	// as one old batch, so it ends where old T2 starts.
	mustAppend(t, l2, batchOfSize(t, 6, 500, int(sz)), 2)
	want := stateOf(t, l2)
	if err := s2.(*Store).db.LogData(nil, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	wal2 := t.TempDir()
	copyFiles(t, img, wal2)
	img2 := crashImage(t, wal2, img)
	s2.Close()

	s3 := open(t, img2)
	defer s3.Close()
	l3, err := s3.OpenLog(pid, engine.LogConfig{})
	if err != nil {
		t.Fatal(err)
	}
	got := stateOf(t, l3)
	if got.end != want.end {
		t.Fatalf("after the second crash: end %d, want %d; old records back: %v; epochs %s",
			got.end, want.end, bytes.Contains(got.data, []byte("T2ooo")), got.epochs)
	}
}

// TestFollowerGapsSurviveCrash: a follower copies a compacted
// leader's batches, whose base offsets may skip past the log end (stage
// and PrepareAppend allow it). Their unsynced index entries are lost by a
// SIGKILL; the tail scan (step 2) indexes only a batch whose base offset
// equals the log end, so it stops at the first gap and cuts the data file:
// records the follower had acknowledged (fetched up to) are gone, where
// the segment backend (segment/recover.go:388, gaps() for compacted logs)
// keeps them.
func TestFollowerGapsSurviveCrash(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	defer s.Close()
	cfg := engine.LogConfig{Compact: true} // a compacted topic, where the segment backend allows gaps
	l, _ := s.CreateLog(pid, cfg)
	at := func(base int64, n int) []byte {
		b := batch(n, 1000+base, "g")
		record.Batch(b).SetBaseOffset(base)
		record.Batch(b).SetLeaderEpoch(1)
		return b
	}
	follower := engine.AppendOptions{}
	if _, err := l.Append(at(0, 2), follower); err != nil {
		t.Fatal(err)
	}
	wal := snapshotPebble(t, s, dir)
	for _, b := range [][]byte{at(5, 2), at(10, 3)} {
		if _, err := l.Append(b, follower); err != nil {
			t.Fatal(err)
		}
	}
	want := stateOf(t, l)
	s2 := open(t, crashImage(t, wal, dir))
	defer s2.Close()
	l2, err := s2.OpenLog(pid, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := stateOf(t, l2); !got.equal(want) {
		t.Fatalf("after SIGKILL: end %d, %d bytes; want end %d, %d bytes (the follower's appended batches were cut)",
			got.end, len(got.data), want.end, len(want.data))
	}
}

// TestDeleteLogVsFlushLockOrder: Log.Flush holds writeMu and, when its data
// file is not dirty (a background roll flush or the flush interval got there
// first), calls syncHeld, which now takes s.mu; DeleteLog holds s.mu and
// waits for writeMu. Driven step by step.
func TestDeleteLogVsFlushLockOrder(t *testing.T) {
	s := open(t, t.TempDir())
	lg, _ := s.CreateLog(pid, engine.LogConfig{})
	mustAppend(t, lg, batch(1, 1, "x"), 1)
	if err := lg.Flush(); err != nil { // the data file is clean now
		t.Fatal(err)
	}
	l := lg.(*Log)
	st := s.(*Store)
	st.life.RLock() // Flush: life shared, writeMu
	l.writeMu.Lock()
	deleted := make(chan error, 1)
	go func() { deleted <- s.DeleteLog(pid) }()
	for i := 0; i < 1000 && st.mu.TryLock(); i++ {
		st.mu.Unlock()
		time.Sleep(time.Millisecond)
	}
	flushed := make(chan error, 1)
	go func() { flushed <- l.flushLocked() }() // Flush's body
	select {
	case <-flushed:
		l.writeMu.Unlock()
		st.life.RUnlock()
		<-deleted
	case <-time.After(3 * time.Second):
		t.Fatalf("Flush (writeMu held, data file clean) waits for s.mu in syncHeld, held by DeleteLog waiting for writeMu: deadlock")
	}
}

// TestFailedSyncFailsLog: a failed fdatasync of a data file is never
// retried and trusted (after one the kernel may have dropped the pages and
// cleared the error): the log refuses appends and flushes with
// engine.ErrStorage from then on, its flushed position stays where it was,
// the store's other logs go on, and the store closes unclean so that the
// next Open verifies the log.
func TestFailedSyncFailsLog(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flush func(s engine.Store, l engine.Log) error
	}{
		{"Flush", func(_ engine.Store, l engine.Log) error { return l.Flush() }},
		{"StoreFlush", func(s engine.Store, _ engine.Log) error { return s.(*Store).sync() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := open(t, dir)
			l, _ := s.CreateLog(pid, engine.LogConfig{})
			other, _ := s.CreateLog(engine.PartitionID{Topic: "other"}, engine.LogConfig{})
			mustAppend(t, l, batch(2, 0, "a"), 1)
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			mustAppend(t, l, batch(2, 10, "b"), 1)
			mustAppend(t, other, batch(2, 10, "o"), 1)
			n := l.(*Log).n
			flushedBefore, err := s.(*Store).getU64(metaKey(n, metaFlushed))
			if err != nil || flushedBefore == 0 {
				t.Fatalf("flushed position before: %d, %v", flushedBefore, err)
			}

			bad := l.(*Log).df
			defer func(f func(*os.File) error) { fdatasync = f }(fdatasync)
			ok := fdatasync
			fdatasync = func(f *os.File) error {
				if f.Name() == bad.path {
					fdatasync = ok // one failure: a retry would succeed
					return unix.EIO
				}
				return ok(f)
			}
			if err := tc.flush(s, l); err == nil {
				t.Fatal("flush over a failed fdatasync succeeded")
			}
			if _, err := l.Append(batch(1, 20, "c"), engine.AppendOptions{AssignOffsets: true, LeaderEpoch: 1}); !errors.Is(err, engine.ErrStorage) {
				t.Errorf("append after a failed sync: %v, want ErrStorage", err)
			}
			if err := l.Flush(); !errors.Is(err, engine.ErrStorage) {
				t.Errorf("flush after a failed sync (the retry would succeed): %v, want ErrStorage", err)
			}
			mustAppend(t, other, batch(1, 20, "o"), 1)
			if err := other.Flush(); err != nil {
				t.Errorf("another log's flush: %v", err)
			}
			if err := s.(*Store).sync(); err != nil {
				t.Errorf("store flush after the failure was reported: %v", err)
			}
			if got, err := s.(*Store).getU64(metaKey(n, metaFlushed)); err != nil || got != flushedBefore {
				t.Errorf("flushed position %d (%v), want it left at %d", got, err, flushedBefore)
			}
			s.Close()

			s2 := open(t, dir)
			defer s2.Close()
			if !s2.(*Store).recovering[n] {
				t.Errorf("the store closed clean over a failed sync: the log is not verified at the next open")
			}
			l2, err := s2.OpenLog(pid, engine.LogConfig{})
			if err != nil {
				t.Fatal(err)
			}
			if l2.EndOffset() != 4 {
				t.Errorf("after reopen: end %d, want 4 (the page cache held the bytes)", l2.EndOffset())
			}
		})
	}
}

// TestReadPointerWithoutDataFile: a read that meets a batch pointer in a
// log without a data file (a damaged append position) fails with
// engine.ErrStorage instead of returning nothing.
func TestReadPointerWithoutDataFile(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	l, _ := s.CreateLog(pid, engine.LogConfig{})
	mustAppend(t, l, batch(2, 0, "a"), 1)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	n := l.(*Log).n
	if err := s.(*Store).db.Set(metaKey(n, metaPos), appendU64(nil, 0), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir)
	defer s.Close()
	l, err := s.OpenLog(pid, engine.LogConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if l.(*Log).df != nil {
		t.Fatal("the log has a data file: the test needs one without")
	}
	sl, err := l.Read(0, 1<<20, -1)
	if !errors.Is(err, engine.ErrStorage) {
		t.Errorf("read of a pointer without a data file: %d bytes, %v; want ErrStorage", sl.Len(), err)
	}
	sl.Release()
}
