package pebblelog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/record"
)

var pid = engine.PartitionID{Topic: "t", Partition: 3}

func batch(n int, ts int64, value string) []byte {
	recs := make([]record.BuildRecord, n)
	for i := range recs {
		recs[i] = record.BuildRecord{Value: []byte(fmt.Sprintf("%s-%d", value, i)), Timestamp: ts + int64(i)}
	}
	return record.AppendBatch(nil, record.BatchOptions{ProducerID: -1}, recs)
}

func open(t testing.TB, dir string) engine.Store {
	t.Helper()
	s, err := engine.Open("pebble", engine.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustAppend(t testing.TB, l engine.Log, b []byte, epoch int32) engine.AppendInfo {
	t.Helper()
	info, err := l.Append(b, engine.AppendOptions{AssignOffsets: true, LeaderEpoch: epoch})
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func readAll(t testing.TB, l engine.Log) []byte {
	t.Helper()
	var out []byte
	for off := l.StartOffset(); off < l.EndOffset(); {
		s, err := l.Read(off, 1<<20, -1)
		if err != nil {
			t.Fatal(err)
		}
		b, err := s.AppendTo(nil)
		s.Release()
		if err != nil {
			t.Fatal(err)
		}
		if len(b) == 0 {
			t.Fatalf("empty read at %d below end %d", off, l.EndOffset())
		}
		out = append(out, b...)
		for len(b) > 0 {
			off = record.Batch(b).NextOffset()
			b = b[record.Batch(b).Size():]
		}
	}
	return out
}

// state is what a reopen must preserve.
type state struct {
	start, end, size int64
	epochs           string
	data             []byte
}

func stateOf(t testing.TB, l engine.Log) state {
	return state{l.StartOffset(), l.EndOffset(), l.Size(), fmt.Sprint(l.LeaderEpochs()), readAll(t, l)}
}

func (s state) equal(o state) bool {
	return s.start == o.start && s.end == o.end && s.size == o.size && s.epochs == o.epochs && bytes.Equal(s.data, o.data)
}

// TestReopen checks that a clean close and reopen gives the same log after
// each kind of mutation.
func TestReopen(t *testing.T) {
	small := engine.LogConfig{SegmentBytes: 400, RetentionMs: -1, RetentionBytes: 1000}
	tests := []struct {
		name   string
		mutate func(t *testing.T, l engine.Log)
	}{
		{"append", func(t *testing.T, l engine.Log) {}},
		{"truncate mid segment", func(t *testing.T, l engine.Log) {
			if err := l.Truncate(14); err != nil {
				t.Fatal(err)
			}
		}},
		{"truncate to start", func(t *testing.T, l engine.Log) {
			if err := l.Truncate(0); err != nil {
				t.Fatal(err)
			}
		}},
		{"delete before", func(t *testing.T, l engine.Log) {
			if err := l.DeleteBefore(9); err != nil {
				t.Fatal(err)
			}
		}},
		{"delete before end", func(t *testing.T, l engine.Log) {
			if err := l.DeleteBefore(l.EndOffset()); err != nil {
				t.Fatal(err)
			}
		}},
		{"retention", func(t *testing.T, l engine.Log) {
			if _, err := l.ApplyRetention(time.Now()); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := open(t, dir)
			l, err := s.CreateLog(pid, small)
			if err != nil {
				t.Fatal(err)
			}
			for i := int32(0); i < 10; i++ { // batches of 2 records: offsets 0,2,...,18
				mustAppend(t, l, batch(2, 1000+int64(i), "v"), i/3)
			}
			tc.mutate(t, l)
			want := stateOf(t, l)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = open(t, dir)
			defer s.Close()
			l, err = s.OpenLog(pid, small)
			if err != nil {
				t.Fatal(err)
			}
			if got := stateOf(t, l); !got.equal(want) {
				t.Fatalf("after reopen: start %d end %d size %d epochs %s, want %d %d %d %s",
					got.start, got.end, got.size, got.epochs, want.start, want.end, want.size, want.epochs)
			}
			// Offsets stay dense: the next append continues at the end.
			if info := mustAppend(t, l, batch(1, 5000, "n"), 9); info.FirstOffset != want.end {
				t.Fatalf("append after reopen at %d, want %d", info.FirstOffset, want.end)
			}
		})
	}
}

// TestReopenAfterCrash copies the store's files while it is open, as a
// process crash leaves them (what reached the OS, nothing more), and opens
// the copy. Every acknowledged append is there (appends are synced, see the
// package doc), with dense offsets, and appends continue at its end.
func TestReopenAfterCrash(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	defer s.Close()
	cfg := engine.LogConfig{SegmentBytes: 1000}
	l, err := s.CreateLog(pid, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		mustAppend(t, l, batch(3, int64(i), "c"), 1)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	synced := stateOf(t, l)
	for i := 0; i < 5; i++ {
		mustAppend(t, l, batch(3, int64(i), "u"), 2)
	}
	all := stateOf(t, l)

	crash := t.TempDir()
	copyDir(t, dir, crash)
	os.Remove(filepath.Join(crash, "LOCK"))
	s2 := open(t, crash)
	defer s2.Close()
	l2, err := s2.OpenLog(pid, cfg)
	if err != nil {
		t.Fatal(err)
	}
	got := stateOf(t, l2)
	if got.end != all.end || !bytes.Equal(all.data, got.data) || !bytes.HasPrefix(got.data, synced.data) {
		t.Fatalf("after crash: end %d (synced %d, written %d), data a prefix: %v",
			got.end, synced.end, all.end, bytes.HasPrefix(all.data, got.data))
	}
	if info := mustAppend(t, l2, batch(1, 1, "n"), 3); info.FirstOffset != got.end {
		t.Fatalf("append after crash at %d, want %d", info.FirstOffset, got.end)
	}
}

// copyDir copies the files of a crashed store. The store may still be
// open (compactions, WAL recycling): a file removed between the directory
// read and its copy was not there at the moment of the "crash", and is
// skipped.
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	ents, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.IsDir() {
			if err := os.MkdirAll(filepath.Join(to, e.Name()), 0o755); err != nil {
				t.Fatal(err)
			}
			copyDir(t, filepath.Join(from, e.Name()), filepath.Join(to, e.Name()))
			continue
		}
		src, err := os.Open(filepath.Join(from, e.Name()))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		dst, err := os.Create(filepath.Join(to, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(dst, src); err != nil {
			t.Fatal(err)
		}
		src.Close()
		dst.Close()
	}
}

// TestDeleteLogRemovesKeys checks that DeleteLog leaves no key of the
// partition behind and that a new log of the same name gets a new id.
func TestDeleteLogRemovesKeys(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	l, _ := s.CreateLog(pid, engine.LogConfig{})
	mustAppend(t, l, batch(5, 1, "d"), 2)
	keep, _ := s.CreateLog(engine.PartitionID{Topic: "keep"}, engine.LogConfig{})
	mustAppend(t, keep, batch(5, 1, "k"), 2)
	n := l.(*Log).n
	if err := s.DeleteLog(pid); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Read(0, 100, -1); !errors.Is(err, engine.ErrClosed) {
		t.Fatalf("read of deleted log: %v", err)
	}
	l, _ = s.CreateLog(pid, engine.LogConfig{})
	n2 := l.(*Log).n
	if n2 == n || l.EndOffset() != 0 {
		t.Fatalf("recreated log: id %d (old %d), end %d", n2, n, l.EndOffset())
	}
	if err := s.DeleteLog(pid); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	db, err := pebble.Open(dir, &pebble.Options{Logger: pebbleLogger{slog.New(slog.DiscardHandler)}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	it, _ := db.NewIter(nil)
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		if k[0] == tagCatalog {
			if id, _ := parseCatalogKey(k); id == pid {
				t.Errorf("catalog entry of deleted log remains")
			}
		} else if len(k) > 9 && (beU64(k[1:]) == n || beU64(k[1:]) == n2) {
			t.Errorf("key %x of a deleted log remains", k)
		}
	}
}

// TestConcurrentAppendRead runs appends beside readers and time lookups
// (run with -race): reads see whole valid batches with dense offsets.
func TestConcurrentAppendRead(t *testing.T) {
	s := open(t, t.TempDir())
	defer s.Close()
	l, _ := s.CreateLog(pid, engine.LogConfig{SegmentBytes: 4096})
	const appends = 300
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < appends; i++ {
			if _, err := l.Append(batch(3, int64(i), "c"), engine.AppendOptions{AssignOffsets: true}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			next := int64(0)
			for i := 0; i < 8*appends && next < 3*appends; i++ {
				sl, err := l.Read(next, 1000, -1)
				if err != nil {
					t.Error(err)
					return
				}
				b, err := sl.AppendTo(nil)
				if err != nil {
					t.Error(err)
					return
				}
				if _, _, err := record.ValidateAll(b); len(b) > 0 && err != nil {
					t.Error(err)
					return
				}
				for ; len(b) > 0; b = b[record.Batch(b).Size():] {
					if o := record.Batch(b).BaseOffset(); o != next {
						t.Errorf("batch at %d, want %d", o, next)
						return
					}
					next += 3
				}
				sl.Release()
				if _, _, _, err := l.OffsetForTimestamp(int64(i % appends)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestFlushMessages checks the sync paths run without error.
func TestFlushMessages(t *testing.T) {
	for _, fm := range []int64{0, 1, 3} {
		t.Run(fmt.Sprintf("flush.messages=%d", fm), func(t *testing.T) {
			s := open(t, t.TempDir())
			defer s.Close()
			l, _ := s.CreateLog(pid, engine.LogConfig{FlushMessages: fm})
			for i := 0; i < 5; i++ {
				mustAppend(t, l, batch(2, 1, "f"), 0)
			}
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if err := l.Flush(); !errors.Is(err, engine.ErrClosed) {
				t.Fatalf("flush after close: %v", err)
			}
		})
	}
}

// TestMaintainer: FlushAll makes every log's appends durable in one pass,
// as the periodic flush did: each data file fdatasync'd to its end and
// that flushed position committed with the WAL sync, nothing left to
// sync. CheckpointRecoveryPoints has nothing to write; after Close both
// refuse.
func TestMaintainer(t *testing.T) {
	es := open(t, t.TempDir())
	s := es.(*Store)
	var files []*dataFile
	for p := int32(0); p < 2; p++ {
		l, err := s.CreateLog(engine.PartitionID{Topic: "m", Partition: p}, engine.LogConfig{})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 5; i++ {
			mustAppend(t, l, batch(2, int64(i), "m"), 1)
		}
		d := l.(*Log).df
		if !d.dirty.Load() {
			t.Fatalf("data file %d clean before FlushAll: the test checks nothing", d.n)
		}
		files = append(files, d)
	}
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	for _, d := range files {
		stored, err := s.getU64(metaKey(d.n, metaFlushed))
		if err != nil {
			t.Fatal(err)
		}
		if pos := d.pos.Load(); d.dirty.Load() || d.flushed.Load() != pos || int64(stored) != pos {
			t.Fatalf("data file %d after FlushAll: dirty %v, flushed %d, stored %d, append position %d",
				d.n, d.dirty.Load(), d.flushed.Load(), stored, pos)
		}
	}
	if s.synced.Load() != s.unsynced.Load() {
		t.Fatalf("after FlushAll: %d of %d unsynced commits synced", s.synced.Load(), s.unsynced.Load())
	}
	if err := s.CheckpointRecoveryPoints(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.FlushAll(); !errors.Is(err, engine.ErrClosed) {
		t.Fatalf("FlushAll after Close: %v", err)
	}
	if err := s.CheckpointRecoveryPoints(); !errors.Is(err, engine.ErrClosed) {
		t.Fatalf("CheckpointRecoveryPoints after Close: %v", err)
	}
}

// TestGaps: a follower copying a compacted leader gets offset gaps between
// batches and between segments; reads in a gap start at the next batch,
// Truncate may cut in a gap, and a reopen accepts the gaps.
func TestGaps(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	defer func() { s.Close() }()
	l, err := s.CreateLog(pid, engine.LogConfig{SegmentBytes: 150})
	if err != nil {
		t.Fatal(err)
	}
	follower := engine.AppendOptions{}
	at := func(base int64, n int) []byte {
		b := batch(n, 1000+base, "g")
		record.Batch(b).SetBaseOffset(base)
		return b
	}
	// Batches [3,4], [10,12], [20,21], [30,30]: about 100 bytes each, so
	// every batch rolls a segment.
	for _, b := range [][]byte{at(3, 2), at(10, 3), at(20, 2), at(30, 1)} {
		if _, err := l.Append(b, follower); err != nil {
			t.Fatal(err)
		}
	}
	check := func(when string) {
		t.Helper()
		for _, c := range []struct {
			offset int64
			first  int64
		}{{0, 3}, {3, 3}, {4, 3}, {5, 10}, {11, 10}, {13, 20}, {25, 30}, {30, 30}} {
			sl, err := l.Read(c.offset, 1, -1)
			if err != nil {
				t.Fatalf("%s: Read(%d): %v", when, c.offset, err)
			}
			b, _ := sl.AppendTo(nil)
			if len(b) == 0 || record.Batch(b).BaseOffset() != c.first || record.Batch(b).Size() != len(b) {
				t.Fatalf("%s: Read(%d) got %d bytes, want the batch at %d", when, c.offset, len(b), c.first)
			}
		}
	}
	check("before reopen")
	s.Close()
	s = open(t, dir)
	if l, err = s.OpenLog(pid, engine.LogConfig{SegmentBytes: 150}); err != nil {
		t.Fatal(err)
	}
	check("after reopen")
	if err := l.Truncate(11); !errors.Is(err, engine.ErrOffsetOutOfRange) {
		t.Fatalf("truncate inside a batch: %v", err)
	}
	if err := l.Truncate(16); err != nil || l.EndOffset() != 16 {
		t.Fatalf("truncate in a gap: %v, end %d", err, l.EndOffset())
	}
	if sl, err := l.Read(14, 1<<20, -1); err != nil || sl.Len() != 0 {
		t.Fatalf("read in the trailing gap: %d bytes, %v", sl.Len(), err)
	}
	s.Close()
	s = open(t, dir)
	if l, err = s.OpenLog(pid, engine.LogConfig{SegmentBytes: 150}); err != nil {
		t.Fatalf("reopen after a truncate into a gap: %v", err)
	}
	if l.EndOffset() != 16 {
		t.Fatalf("end %d after reopen, want 16", l.EndOffset())
	}
	if _, err := l.Append(at(16, 1), follower); err != nil {
		t.Fatal(err)
	}
	if err := l.DeleteBefore(6); err != nil || l.StartOffset() != 6 {
		t.Fatalf("DeleteBefore in a gap: %v, start %d", err, l.StartOffset())
	}
	if off, _, ok, err := l.OffsetForTimestamp(0); err != nil || !ok || off != 10 {
		t.Fatalf("OffsetForTimestamp: %d %v %v, want 10", off, ok, err)
	}
	if err := l.Truncate(1); err != nil || l.EndOffset() != 1 {
		t.Fatalf("truncate below start: %v, end %d", err, l.EndOffset())
	}
}
