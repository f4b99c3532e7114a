package pebblelog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/internal/fsutil"
	"github.com/sluice/sluice/record"
)

// copyFiles copies the regular files of from (not its subdirectories) to
// to, without Pebble's LOCK: the DB's state as a crash would leave it.
func copyFiles(t *testing.T, from, to string) {
	t.Helper()
	ents, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.IsDir() || e.Name() == "LOCK" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// crashImage builds, in a new directory, the store a crash would leave if
// Pebble had kept only what pebbleDir holds (a copy taken earlier) while
// the data files hold what they hold now in dir.
func crashImage(t *testing.T, pebbleDir, dir string) string {
	t.Helper()
	out := t.TempDir()
	copyFiles(t, pebbleDir, out)
	if err := os.MkdirAll(filepath.Join(out, dataDirName), 0o755); err != nil {
		t.Fatal(err)
	}
	copyFiles(t, filepath.Join(dir, dataDirName), filepath.Join(out, dataDirName))
	return out
}

// snapshotPebble copies the Pebble files of an open store after a WAL sync.
func snapshotPebble(t *testing.T, s engine.Store, dir string) string {
	t.Helper()
	if err := s.(*Store).sync(); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	copyFiles(t, dir, out)
	return out
}

func dataFileOf(t *testing.T, dir string, l engine.Log) string {
	return dataFilePath(filepath.Join(dir, dataDirName), l.(*Log).n)
}

// TestMixedInlineAndFileBatches: a store written before data files (format
// version 1, batches inline) opens, is marked version 2, and reads its old
// batches beside new ones in the data file, through reads that cross the
// boundary, time lookups, truncation and retention.
func TestMixedInlineAndFileBatches(t *testing.T) {
	dir := t.TempDir()
	cfg := engine.LogConfig{SegmentBytes: 600, RetentionMs: -1}
	s := open(t, dir)
	l, _ := s.CreateLog(pid, cfg)
	var want []byte
	for i := 0; i < 10; i++ {
		b := batch(3, int64(100+i), "old")
		appendInline(t, l, b, 1)
		want = append(want, b...)
	}
	setFormatVersion(t, s, oldFormatVersion)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = open(t, dir)
	defer func() { s.Close() }()
	v, closer, err := s.(*Store).db.Get([]byte{tagVersion})
	if err != nil || !bytes.Equal(v, []byte{0, 0, 0, formatVersion}) {
		t.Fatalf("version key %x, %v: want %d after opening a version 1 store", v, err, formatVersion)
	}
	closer.Close()
	if l, err = s.OpenLog(pid, cfg); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		b := batch(3, int64(200+i), "new")
		mustAppend(t, l, b, 2)
		want = append(want, b...)
	}
	if _, err := os.Stat(dataFileOf(t, dir, l)); err != nil {
		t.Fatalf("no data file after appends: %v", err)
	}
	if got := readAll(t, l); !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, want the %d appended", len(got), len(want))
	}
	// A read from an inline batch stops at the first file batch, and one
	// from a file batch returns the whole run of file batches (from the
	// tail cache's copy of the file's end: the appends were small).
	sl, _ := l.Read(27, 1<<20, -1)
	if _, _, _, isFile := sl.File(); isFile || sl.Len() != int64(len(batch(3, 109, "old"))) {
		t.Fatalf("read at the last inline batch: %d bytes, file %v", sl.Len(), isFile)
	}
	sl.Release()
	sl, _ = l.Read(30, 1<<20, -1)
	if b, err := sl.AppendTo(nil); err != nil || !bytes.Equal(b, want[len(want)/2:]) {
		t.Fatalf("read at the first file batch: %d bytes (%v), want the %d of the file batches", len(b), err, len(want)/2)
	}
	sl.Release()
	for _, c := range []struct{ ts, off int64 }{{105, 11}, {205, 41}} {
		if off, _, ok, err := l.OffsetForTimestamp(c.ts); err != nil || !ok || off != c.off {
			t.Fatalf("OffsetForTimestamp(%d) = %d %v %v, want %d", c.ts, off, ok, err, c.off)
		}
	}
	if err := l.Truncate(45); err != nil {
		t.Fatal(err)
	}
	want = want[:len(want)*3/4] // 15 of the 20 batches of 3 records
	if got := readAll(t, l); !bytes.Equal(got, want) {
		t.Fatalf("after Truncate(45): read %d bytes, want %d", len(got), len(want))
	}
	if err := l.DeleteBefore(9); err != nil {
		t.Fatal(err)
	}
	if _, err := l.ApplyRetention(time.Now()); err != nil {
		t.Fatal(err)
	}
	before := stateOf(t, l)
	s.Close()
	s = open(t, dir)
	if l, err = s.OpenLog(pid, cfg); err != nil {
		t.Fatal(err)
	}
	if got := stateOf(t, l); !got.equal(before) {
		t.Fatalf("after reopen: %+v, want %+v", got, before)
	}
}

// TestRecoverUnindexedTail: Pebble lost the (unsynced) commits of the last
// appends, the data file has their bytes: the reopened log indexes them
// again, with their epochs, and appends continue after them.
func TestRecoverUnindexedTail(t *testing.T) {
	dir := t.TempDir()
	cfg := engine.LogConfig{SegmentBytes: 1000}
	s := open(t, dir)
	defer s.Close()
	l, _ := s.CreateLog(pid, cfg)
	for i := 0; i < 10; i++ {
		mustAppend(t, l, batch(3, int64(i), "a"), 1)
	}
	early := snapshotPebble(t, s, dir)
	for i := 0; i < 30; i++ {
		mustAppend(t, l, batch(2, int64(i), "b"), 2+int32(i/10))
	}
	want := stateOf(t, l)

	img := crashImage(t, early, dir)
	// A store closed before the log was opened stays unclean.
	s2 := open(t, img)
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	s2 = open(t, img)
	defer s2.Close()
	l2, err := s2.OpenLog(pid, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := stateOf(t, l2); !got.equal(want) {
		t.Fatalf("after recovery: start %d end %d size %d epochs %s; want %d %d %d %s",
			got.start, got.end, got.size, got.epochs, want.start, want.end, want.size, want.epochs)
	}
	if info := mustAppend(t, l2, batch(1, 1, "n"), 9); info.FirstOffset != want.end {
		t.Fatalf("append after recovery at %d, want %d", info.FirstOffset, want.end)
	}
}

// TestTruncatedNotResurrected: a synced Truncate carries the append
// position, so recovery never indexes the truncated bytes again, whether
// or not appends followed it (and were lost from Pebble).
func TestTruncatedNotResurrected(t *testing.T) {
	for _, after := range []int{0, 3} {
		t.Run(fmt.Sprintf("appends_after=%d", after), func(t *testing.T) {
			dir := t.TempDir()
			s := open(t, dir)
			defer s.Close()
			l, _ := s.CreateLog(pid, engine.LogConfig{})
			for i := 0; i < 10; i++ {
				mustAppend(t, l, batch(1, int64(i), "old"), 1)
			}
			if err := l.Truncate(5); err != nil {
				t.Fatal(err)
			}
			early := snapshotPebble(t, s, dir)
			for i := 0; i < after; i++ {
				mustAppend(t, l, batch(1, int64(i), "new"), 2)
			}
			want := stateOf(t, l)
			s2 := open(t, crashImage(t, early, dir))
			defer s2.Close()
			l2, err := s2.OpenLog(pid, engine.LogConfig{})
			if err != nil {
				t.Fatal(err)
			}
			if got := stateOf(t, l2); !got.equal(want) {
				t.Fatalf("after recovery: end %d, %d bytes; want end %d, %d bytes (old data: %v)",
					got.end, len(got.data), want.end, len(want.data), bytes.Contains(got.data[len(got.data)/2:], []byte("old-0")))
			}
		})
	}
}

// TestTornTailCut: a data file ending in a torn batch, or in garbage past
// the last batch, is cut after the last whole one; the log ends there and
// appends and reopens work.
func TestTornTailCut(t *testing.T) {
	for _, c := range []struct {
		name   string
		damage func(t *testing.T, path string, size int64)
		lost   int // batches lost from the end
	}{
		{"torn last batch", func(t *testing.T, path string, size int64) {
			os.Truncate(path, size-10)
		}, 1},
		{"garbage after", func(t *testing.T, path string, size int64) {
			f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			f.Write(bytes.Repeat([]byte{0xab}, 300))
			f.Close()
		}, 0},
		{"zeros after", func(t *testing.T, path string, size int64) {
			os.Truncate(path, size+4096)
		}, 0},
		{"bad crc in the middle", func(t *testing.T, path string, size int64) {
			f, _ := os.OpenFile(path, os.O_WRONLY, 0)
			f.WriteAt([]byte{0xff, 0xee}, size-int64(len(batch(2, 0, "b")))*5+70)
			f.Close()
		}, 5},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			s := open(t, dir)
			defer s.Close()
			l, _ := s.CreateLog(pid, engine.LogConfig{})
			mustAppend(t, l, batch(3, 0, "a"), 1)
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			early := snapshotPebble(t, s, dir)
			for i := 0; i < 10; i++ {
				mustAppend(t, l, batch(2, int64(i), "b"), 1)
			}
			img := crashImage(t, early, dir)
			path := dataFileOf(t, img, l)
			st, _ := os.Stat(path)
			c.damage(t, path, st.Size())

			s2 := open(t, img)
			l2, err := s2.OpenLog(pid, engine.LogConfig{})
			if err != nil {
				t.Fatal(err)
			}
			if want := int64(3 + 2*(10-c.lost)); l2.EndOffset() != want {
				t.Fatalf("end %d after recovery, want %d", l2.EndOffset(), want)
			}
			st, _ = os.Stat(path)
			if want := int64(len(batch(3, 0, "a")) + (10-c.lost)*len(batch(2, 0, "b"))); st.Size() != want {
				t.Fatalf("data file of %d bytes after recovery, want %d", st.Size(), want)
			}
			mustAppend(t, l2, batch(1, 0, "c"), 2)
			want := stateOf(t, l2)
			if _, _, err := record.ValidateAllStored(want.data); err != nil {
				t.Fatal(err)
			}
			if err := s2.Close(); err != nil {
				t.Fatal(err)
			}
			s2 = open(t, img)
			defer s2.Close()
			l2, _ = s2.OpenLog(pid, engine.LogConfig{})
			if got := stateOf(t, l2); !got.equal(want) {
				t.Fatalf("after reopen: end %d, want %d", got.end, want.end)
			}
		})
	}
}

// TestPowerLossVerification: the WAL made index entries durable (a synced
// commit of another kind) while their data never reached the disk: the
// batches past the flushed position are checked and the index cut at the
// first bad one; what was flushed stays.
func TestPowerLossVerification(t *testing.T) {
	for _, c := range []struct {
		name  string
		lose  func(path string, flushed int64)
		wantN int // batches kept past the flushed ones
	}{
		{"file cut at flushed", func(path string, flushed int64) { os.Truncate(path, flushed) }, 0},
		{"zeroed pages", func(path string, flushed int64) {
			f, _ := os.OpenFile(path, os.O_WRONLY, 0)
			f.WriteAt(make([]byte, 200), flushed+int64(2*len(batch(2, 0, "b")))+10)
			f.Close()
		}, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			s := open(t, dir)
			defer s.Close()
			l, _ := s.CreateLog(pid, engine.LogConfig{})
			for i := 0; i < 4; i++ {
				mustAppend(t, l, batch(3, int64(i), "a"), 1)
			}
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			flushed := l.(*Log).df.flushed.Load()
			for i := 0; i < 6; i++ {
				mustAppend(t, l, batch(2, int64(i), "b"), 1)
			}
			// A synced commit of anything (here: an empty one) makes
			// the index durable, not the data file.
			if err := s.(*Store).db.LogData(nil, pebble.Sync); err != nil {
				t.Fatal(err)
			}
			wal := t.TempDir()
			copyFiles(t, dir, wal)
			img := crashImage(t, wal, dir)
			c.lose(dataFileOf(t, img, l), flushed)

			s2 := open(t, img)
			defer s2.Close()
			l2, err := s2.OpenLog(pid, engine.LogConfig{})
			if err != nil {
				t.Fatal(err)
			}
			want := int64(12 + 2*c.wantN)
			if l2.EndOffset() != want {
				t.Fatalf("end %d after recovery, want %d", l2.EndOffset(), want)
			}
			if _, _, err := record.ValidateAllStored(readAll(t, l2)); err != nil {
				t.Fatal(err)
			}
			mustAppend(t, l2, batch(1, 0, "c"), 2)
		})
	}
}

// TestHeldSliceSurvivesTrims: a file slice handed out stays readable, byte
// for byte, through a truncation, retention and DeleteLog of what it holds
// (the punch waits for its release), and the punch happens after.
func TestHeldSliceSurvivesTrims(t *testing.T) {
	for _, trim := range []string{"truncate", "retention", "restart", "delete"} {
		t.Run(trim, func(t *testing.T) {
			dir := t.TempDir()
			s := open(t, dir)
			defer s.Close()
			cfg := engine.LogConfig{SegmentBytes: 4096, RetentionMs: -1, RetentionBytes: 1}
			l, _ := s.CreateLog(pid, cfg)
			for i := 0; i < 200; i++ {
				mustAppend(t, l, batch(4, int64(i), strings.Repeat("x", 20)), 1)
			}
			sl, err := l.Read(0, 8192, -1)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := sl.AppendTo(nil)
			switch trim {
			case "truncate":
				err = l.Truncate(0 + record.Batch(want).NextOffset())
			case "retention":
				_, err = l.ApplyRetention(time.Now())
			case "restart":
				err = l.(*Log).TruncateFullyAndStartAt(1000)
			case "delete":
				err = s.DeleteLog(pid)
			}
			if err != nil {
				t.Fatal(err)
			}
			if trim != "delete" {
				mustAppend(t, l, batch(1, 0, "later"), 1) // appends go on while a punch waits
			}
			got, err := sl.AppendTo(nil)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("held slice after %s: %v, equal %v", trim, err, bytes.Equal(got, want))
			}
			if _, _, err := record.ValidateAllStored(got); err != nil {
				t.Fatal(err)
			}
			sl.Release()
			if trim == "delete" {
				return
			}
			// A background flush of a rolled segment holds the file
			// too, for the time of its fdatasync.
			d := l.(*Log).df
			for i := 0; i < 1000 && d.pending.Load(); i++ {
				time.Sleep(5 * time.Millisecond)
				d.retryPunches()
			}
			if d.pending.Load() {
				t.Fatalf("punches still pending after the slice was released")
			}
		})
	}
}

// TestConcurrentReadTrimEvict runs readers beside appends, truncations,
// retention and cache evictions over several logs with an open-file bound
// of 2 (run with -race): every read returns whole batches with valid CRCs
// (a punch under a reader would zero them).
func TestConcurrentReadTrimEvict(t *testing.T) {
	s, err := engine.Open("pebble", engine.Options{Dir: t.TempDir(), OpenSegmentsMax: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cfg := engine.LogConfig{SegmentBytes: 2048, RetentionMs: -1, RetentionBytes: 8192}
	var logs []engine.Log
	for p := int32(0); p < 4; p++ {
		l, _ := s.CreateLog(engine.PartitionID{Topic: "c", Partition: p}, cfg)
		logs = append(logs, l)
	}
	var stop atomic.Bool
	var writers, readers sync.WaitGroup
	for _, l := range logs {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for i := 0; i < 300; i++ {
				if _, err := l.Append(batch(3, int64(i), "v"), engine.AppendOptions{AssignOffsets: true}); err != nil {
					t.Error(err)
					return
				}
				switch i % 50 {
				case 17:
					if err := l.Truncate(l.EndOffset() - 6); err != nil {
						t.Error(err)
						return
					}
				case 33:
					if _, err := l.ApplyRetention(time.Now()); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	var reads atomic.Int64
	for r := 0; r < 3; r++ {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for i := 0; !stop.Load(); i++ {
				l := logs[i%len(logs)]
				sl, err := l.Read(l.StartOffset(), 1500, -1)
				if err != nil {
					if errors.Is(err, engine.ErrOffsetOutOfRange) {
						continue // retention moved the start
					}
					t.Error(err)
					return
				}
				time.Sleep(50 * time.Microsecond) // hold it across trims
				b, err := sl.AppendTo(nil)
				sl.Release()
				if err != nil {
					t.Error(err)
					return
				}
				if len(b) == 0 {
					continue // the log was empty
				}
				if _, _, err := record.ValidateAllStored(b); err != nil {
					t.Errorf("read of %d bytes: %v", len(b), err)
					return
				}
				reads.Add(1)
			}
		}()
	}
	writers.Wait()
	stop.Store(true)
	readers.Wait()
	if reads.Load() == 0 {
		t.Fatal("no read completed")
	}
	if n := s.(*Store).cache.open(); n > 2 {
		t.Fatalf("%d data files open, bound 2", n)
	}
}

// TestOpenFilesBound: 60 logs written and read through a cache of 5 keep
// at most 5 data files open once their slices are released.
func TestOpenFilesBound(t *testing.T) {
	dir := t.TempDir()
	s, err := engine.Open("pebble", engine.Options{Dir: dir, OpenSegmentsMax: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var logs []engine.Log
	for p := int32(0); p < 60; p++ {
		l, _ := s.CreateLog(engine.PartitionID{Topic: "b", Partition: p}, engine.LogConfig{})
		mustAppend(t, l, batch(2, 1, "x"), 1)
		logs = append(logs, l)
	}
	for _, l := range logs {
		if got := readAll(t, l); len(got) != len(batch(2, 1, "x")) {
			t.Fatalf("read %d bytes", len(got))
		}
	}
	if n := s.(*Store).cache.open(); n > 5 {
		t.Fatalf("%d data files in the cache, bound 5", n)
	}
	fds, _ := os.ReadDir("/proc/self/fd")
	nfd := 0
	for _, e := range fds {
		if p, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && strings.HasPrefix(p, filepath.Join(dir, dataDirName)) && strings.HasSuffix(p, ".data") {
			nfd++
		}
	}
	if nfd > 5 {
		t.Fatalf("%d descriptors on data files, bound 5", nfd)
	}
	// 60 dirty files: Close syncs them with one syncfs and stores each
	// one's flushed position.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir)
	defer s.Close()
	for p := int32(0); p < 60; p++ {
		l, err := s.OpenLog(engine.PartitionID{Topic: "b", Partition: p}, engine.LogConfig{})
		if err != nil {
			t.Fatal(err)
		}
		if d := l.(*Log).df; d.flushed.Load() != d.pos.Load() || d.pos.Load() == 0 {
			t.Fatalf("partition %d: flushed %d, append position %d", p, d.flushed.Load(), d.pos.Load())
		}
	}
}

// TestDamagedDataFile: a data file shorter than the index says, missing,
// or with a bad batch, after a clean shutdown: reads and time lookups
// fail with a clear error, never a panic.
func TestDamagedDataFile(t *testing.T) {
	for _, c := range []struct {
		name   string
		damage func(path string, size int64)
		want   error
		ts     int64 // a time lookup that reads a damaged batch
	}{
		{"shorter", func(path string, size int64) { os.Truncate(path, size/2) }, engine.ErrCorruptStore, 9},
		{"missing", func(path string, size int64) { os.Remove(path) }, engine.ErrStorage, 0},
		{"bad batch", func(path string, size int64) {
			f, _ := os.OpenFile(path, os.O_WRONLY, 0)
			f.WriteAt(bytes.Repeat([]byte{0xff}, 8), 8) // batch length of the first batch
			f.Close()
		}, engine.ErrCorruptStore, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			s := open(t, dir)
			l, _ := s.CreateLog(pid, engine.LogConfig{})
			for i := 0; i < 10; i++ {
				mustAppend(t, l, batch(2, int64(i), "d"), 1)
			}
			path := dataFileOf(t, dir, l)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			st, _ := os.Stat(path)
			c.damage(path, st.Size())
			s = open(t, dir)
			defer s.Close()
			l, err := s.OpenLog(pid, engine.LogConfig{})
			if err != nil {
				t.Fatal(err)
			}
			var failed error
			for off := int64(0); off < l.EndOffset() && failed == nil; off += 2 {
				sl, err := l.Read(off, 1<<20, -1)
				if err != nil {
					failed = err
					break
				}
				b, err := sl.AppendTo(nil)
				sl.Release()
				if err == nil {
					_, _, err = record.ValidateAllStored(b)
				}
				if err != nil {
					failed = err // the client's CRC check
				}
			}
			if failed == nil {
				t.Fatalf("every read of a damaged file succeeded")
			}
			if c.want != engine.ErrCorruptStore || c.name == "shorter" {
				if !errors.Is(failed, c.want) {
					t.Fatalf("read: %v, want %v", failed, c.want)
				}
			}
			if _, _, _, err := l.OffsetForTimestamp(c.ts); err == nil {
				t.Fatalf("OffsetForTimestamp on a damaged file succeeded")
			}
		})
	}
}

// FuzzRecoverTail appends arbitrary bytes to a data file past its last
// indexed batch, as a crash would leave a torn or foreign tail, and
// recovers the store. Invariants: recovery never fails or panics; the
// indexed batches are kept; every batch read back is valid, with dense
// offsets; the data file ends at the last batch kept; a clean reopen gives
// the same log.
func FuzzRecoverTail(f *testing.F) {
	next := batch(2, 5, "n")
	record.Batch(next).SetBaseOffset(3)
	record.Batch(next).SetLeaderEpoch(1)
	f.Add(next)
	f.Add(append(append([]byte(nil), next...), next...)) // the second does not continue
	f.Add(next[:len(next)-1])
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff})
	f.Add(bytes.Repeat([]byte{0}, 100))
	f.Fuzz(fuzzBody)
}

func fuzzBody(t *testing.T, tail []byte) {
	{
		dir := t.TempDir()
		s := open(t, dir)
		l, _ := s.CreateLog(pid, engine.LogConfig{})
		mustAppend(t, l, batch(3, 1, "a"), 1)
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
		img := t.TempDir()
		copyFiles(t, dir, img)
		os.MkdirAll(filepath.Join(img, dataDirName), 0o755)
		copyFiles(t, filepath.Join(dir, dataDirName), filepath.Join(img, dataDirName))
		s.Close()
		path := dataFileOf(t, img, l)
		fh, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		fh.Write(tail)
		fh.Close()
		// The clean-shutdown key was written after the copy: this is an
		// unclean image.
		s2, err := engine.Open("pebble", engine.Options{Dir: img, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		l2, err := s2.OpenLog(pid, engine.LogConfig{})
		if err != nil {
			t.Fatalf("recovery: %v", err)
		}
		got := stateOf(t, l2)
		if got.end < 3 {
			t.Fatalf("end %d after recovery, below the 3 indexed", got.end)
		}
		if _, _, err := record.ValidateAllStored(got.data); err != nil {
			t.Fatal(err)
		}
		st, _ := os.Stat(path)
		if st.Size() != got.size {
			t.Fatalf("data file of %d bytes, log of %d", st.Size(), got.size)
		}
		if err := s2.Close(); err != nil {
			t.Fatal(err)
		}
		s3 := open(t, img)
		defer s3.Close()
		l3, err := s3.OpenLog(pid, engine.LogConfig{})
		if err != nil {
			t.Fatal(err)
		}
		if again := stateOf(t, l3); !again.equal(got) {
			t.Fatalf("reopen changed the log: end %d, want %d", again.end, got.end)
		}
	}
}

// TestFlushAtRoll: rolling a segment flushes the data file up to it in the
// background and stores the flushed position, so recovery after a power
// loss checks about one segment.
func TestFlushAtRoll(t *testing.T) {
	s := open(t, t.TempDir())
	defer s.Close()
	l, _ := s.CreateLog(pid, engine.LogConfig{SegmentBytes: 500})
	for i := 0; i < 20; i++ {
		mustAppend(t, l, batch(2, int64(i), "r"), 1)
	}
	d := l.(*Log).df
	var stored uint64
	for i := 0; i < 1000 && stored == 0; i++ {
		time.Sleep(5 * time.Millisecond)
		var err error
		if stored, err = s.(*Store).getU64(metaKey(d.n, metaFlushed)); err != nil {
			t.Fatal(err)
		}
	}
	if stored == 0 || d.flushed.Load() < int64(stored) || int64(stored) > d.pos.Load() {
		t.Fatalf("flushed position stored %d, in memory %d, append position %d", stored, d.flushed.Load(), d.pos.Load())
	}
}

// TestNewLogSurvivesCrash: CreateLog commits the catalog entry without a
// sync, and recovery removes the data files of logs not in the catalog, so
// the first append of a log must make the entry durable: a crash right
// after it (Pebble keeping only what was synced) keeps the log and its
// records, and the later, unsynced appends come back from the data file.
func TestNewLogSurvivesCrash(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	defer s.Close()
	l, _ := s.CreateLog(pid, engine.LogConfig{})
	mustAppend(t, l, batch(3, 1, "first"), 1)
	// No sync: the files as they are, what a SIGKILL leaves of Pebble
	// (its unsynced commits are not even in the page cache).
	wal := t.TempDir()
	copyFiles(t, dir, wal)
	mustAppend(t, l, batch(2, 2, "second"), 1)
	want := stateOf(t, l)

	s2 := open(t, crashImage(t, wal, dir))
	defer s2.Close()
	l2, err := s2.OpenLog(pid, engine.LogConfig{})
	if err != nil {
		t.Fatalf("log created before the crash: %v", err)
	}
	if got := stateOf(t, l2); !got.equal(want) {
		t.Fatalf("after crash: end %d, want %d", got.end, want.end)
	}
}

// A data file reserves blocks past its end as it grows (fsutil.Reserver),
// keeping its size the end of its data, and hands them back when the cache
// closes it with nobody else holding it; a held slice defers that to a
// later close.
func TestDataFileReservesBlocksAhead(t *testing.T) {
	dir := t.TempDir()
	s, err := engine.Open("pebble", engine.Options{Dir: dir, OpenSegmentsMax: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a, _ := s.CreateLog(engine.PartitionID{Topic: "a", Partition: 0}, engine.LogConfig{})
	var want []byte
	big := batch(100, 1, strings.Repeat("v", 1000)) // ~100 KB: the reservation runs ahead of it
	for len(want) < 3<<20 {
		b := bytes.Clone(big)
		mustAppend(t, a, b, 1)
		want = append(want, b...)
	}
	path := dataFileOf(t, dir, a)
	size, blocks := fileBlocks(t, path)
	if s.(*Store).cache.reserve.Off() {
		t.Skip("this file system has no fallocate")
	}
	if blocks < size+1<<20 {
		t.Fatalf("data file of %d bytes holds %d bytes of blocks: nothing reserved", size, blocks)
	}

	// A held slice keeps the blocks through an eviction.
	held, err := a.Read(0, 1<<20, -1)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := s.CreateLog(engine.PartitionID{Topic: "b", Partition: 0}, engine.LogConfig{})
	mustAppend(t, other, batch(10, 1, "x"), 1) // opens b's file: a's is evicted
	if _, blocks2 := fileBlocks(t, path); blocks2 != blocks {
		t.Fatalf("blocks %d -> %d while a slice is held", blocks, blocks2)
	}
	held.Release()

	// Opened again and evicted with nobody holding it: handed back.
	if got := readAll(t, a); !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, want %d", len(got), len(want))
	}
	mustAppend(t, other, batch(10, 1, "y"), 1)
	size, blocks = fileBlocks(t, path)
	if blocks > size+64<<10 {
		t.Fatalf("evicted data file of %d bytes keeps %d bytes of blocks", size, blocks)
	}
	if got := readAll(t, a); !bytes.Equal(got, want) {
		t.Fatalf("after the release: read %d bytes, want %d", len(got), len(want))
	}
}

// fileBlocks returns a file's size and the bytes of the blocks it holds.
func fileBlocks(t *testing.T, path string) (size, blocks int64) {
	size, blocks, ok, err := fsutil.Allocated(path)
	if err != nil || !ok {
		t.Fatalf("blocks of %s: %v (counted: %v)", path, err, ok)
	}
	return size, blocks
}

// blockSlack is how far a data file's allocated blocks may move without a
// punch: ext4 counts delayed-allocation reservations in st_blocks and
// settles them at writeback, a block or two either way (seen in CI: 4 KiB
// fewer between two stats). The punches these tests look for free
// hundreds of KiB.
const blockSlack = 64 << 10

// TestPunchWaitsForDeleteDelay: with a delete delay (log.segment.delete.delay.ms)
// the bytes retention lets go of stay allocated until it has passed and
// are then punched by the store's punch worker, with no append to retry
// them; what is not due at Close stays allocated, is stored, and is
// punched a delay after the log's next load.
func TestPunchWaitsForDeleteDelay(t *testing.T) {
	const delay = time.Second
	dir := t.TempDir()
	s, err := engine.Open("pebble", engine.Options{Dir: dir, DeleteDelay: delay})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	cfg := engine.LogConfig{SegmentBytes: 16 << 10, RetentionMs: -1, RetentionBytes: 1}
	l, _ := s.CreateLog(pid, cfg)
	value := strings.Repeat("x", 1000)
	appendSome := func() { // ~410 KB: twice stays below fsutil.ReserveFrom, nothing reserved ahead
		for i := 0; i < 100; i++ {
			mustAppend(t, l, batch(4, int64(i), value), 1)
		}
	}
	appendSome()
	d := l.(*Log).df
	path := d.path
	_, before := fileBlocks(t, path)

	trimmed := time.Now()
	if _, err := l.ApplyRetention(trimmed); err != nil {
		t.Fatal(err)
	}
	if l.StartOffset() == 0 {
		t.Fatal("retention deleted nothing")
	}
	if _, now := fileBlocks(t, path); now < before-blockSlack || !d.pending.Load() {
		t.Fatalf("blocks %d -> %d (pending %v) at once: the punch did not wait", before, now, d.pending.Load())
	}
	waitPunched := func(what string, before int64, since time.Time) {
		t.Helper()
		var after int64
		for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if _, after = fileBlocks(t, path); after < before/2 {
				break
			}
		}
		if waited := time.Since(since); after >= before/2 || waited < delay {
			t.Fatalf("%s: blocks %d -> %d after %v (delay %v): not punched by the worker", what, before, after, waited, delay)
		}
	}
	waitPunched("retention", before, trimmed)
	// The worker clears pending after its punch returns: the blocks can be
	// seen freed a moment before (a loaded machine showed it). Bounded.
	for deadline := time.Now().Add(5 * time.Second); d.pending.Load() && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
	}
	if d.pending.Load() {
		t.Fatal("punched, still pending")
	}

	// Not due at Close: kept, stored, punched a delay after the next load.
	appendSome()
	_, before = fileBlocks(t, path)
	s.(*Store).cache.delay = time.Hour
	if _, err := l.ApplyRetention(time.Now()); err != nil {
		t.Fatal(err)
	}
	want := readAll(t, l)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, after := fileBlocks(t, path); after < before-blockSlack {
		t.Fatalf("blocks %d -> %d: Close punched ranges not due", before, after)
	}
	if s, err = engine.Open("pebble", engine.Options{Dir: dir, DeleteDelay: delay}); err != nil {
		t.Fatal(err)
	}
	loaded := time.Now() // before the load queues the stored ranges
	if l, err = s.OpenLog(pid, cfg); err != nil {
		t.Fatal(err)
	}
	if d = l.(*Log).df; !d.pending.Load() {
		t.Fatal("the stored ranges were not queued at load")
	}
	waitPunched("after the reopen", before, loaded)
	if got := readAll(t, l); !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes after the punch, want %d", len(got), len(want))
	}

	// Nothing waits at this Close: the stored ranges are gone.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = engine.Open("pebble", engine.Options{Dir: dir, DeleteDelay: delay}); err != nil {
		t.Fatal(err)
	}
	if l, err = s.OpenLog(pid, cfg); err != nil {
		t.Fatal(err)
	}
	if l.(*Log).df.pending.Load() {
		t.Fatal("ranges punched before the last Close queued again")
	}
}

// TestMalformedStoredPunches: what metaPunch holds is checked before
// anything is punched: a value that is not whole ranges, an empty or
// inverted range and one past the append position are ignored, and the
// log's bytes stay readable and allocated.
func TestMalformedStoredPunches(t *testing.T) {
	for name, v := range map[string][]byte{
		"torn":     make([]byte, 15),
		"empty":    binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, 4096), 4096),
		"inverted": binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, 8192), 0),
		"negative": binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, 1<<63), 4096),
		"past end": binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, 0), 1<<40),
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			s := open(t, dir)
			l, _ := s.CreateLog(pid, engine.LogConfig{})
			for i := 0; i < 20; i++ {
				mustAppend(t, l, batch(4, int64(i), strings.Repeat("y", 1000)), 1)
			}
			want, path, n := readAll(t, l), l.(*Log).df.path, l.(*Log).n
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			_, before := fileBlocks(t, path)
			s = open(t, dir) // delay 0: a range taken would be punched at once
			defer s.Close()
			if err := s.(*Store).db.Set(metaKey(n, metaPunch), v, pebble.Sync); err != nil {
				t.Fatal(err)
			}
			l, err := s.OpenLog(pid, engine.LogConfig{})
			if err != nil {
				t.Fatal(err)
			}
			if got := readAll(t, l); !bytes.Equal(got, want) {
				t.Fatalf("read %d bytes, want %d", len(got), len(want))
			}
			if _, after := fileBlocks(t, path); after < before-blockSlack {
				t.Fatalf("blocks %d -> %d", before, after)
			}
		})
	}
}
