package segment

import (
	"bytes"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/record"
)

var tp = engine.PartitionID{Topic: "topic", Partition: 3}

// fakeClock is a settable Options.Now.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock { return &fakeClock{t: time.UnixMilli(1_700_000_000_000)} }
func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func openStore(t testing.TB, dir string, clock *fakeClock) *Store {
	t.Helper()
	opts := engine.Options{Dir: dir, Logger: quietLogger(t)}
	if clock != nil {
		opts.Now = clock.Now
	}
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// testCfg is a config with small segments and a dense index, so tests see
// rolls and index entries with little data.
func testCfg() engine.LogConfig {
	return engine.LogConfig{SegmentBytes: 4 << 10, IndexIntervalBytes: 256, IndexMaxBytes: 4096, RetentionMs: -1, RetentionBytes: -1}
}

// mkBatch builds an uncompressed batch of n records with timestamps ts,
// ts+1, ... and values of about size bytes.
func mkBatch(rng *rand.Rand, n int, ts int64, size int) []byte {
	recs := make([]record.BuildRecord, n)
	for i := range recs {
		v := make([]byte, size)
		rng.Read(v)
		recs[i] = record.BuildRecord{Key: []byte(fmt.Sprint(i)), Value: v, Timestamp: ts + int64(i)}
	}
	return record.AppendBatch(nil, record.BatchOptions{ProducerID: -1, BaseSequence: -1}, recs)
}

// fill appends count batches of random shape and returns each batch's
// bytes as stored (Append rewrites them in place).
func fill(t testing.TB, l engine.Log, rng *rand.Rand, count int, epoch int32) [][]byte {
	t.Helper()
	var out [][]byte
	for i := 0; i < count; i++ {
		b := mkBatch(rng, 1+rng.Intn(4), 1000+int64(i)*10, 10+rng.Intn(200))
		if _, err := l.Append(b, engine.AppendOptions{AssignOffsets: true, LeaderEpoch: epoch}); err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

func sliceBytes(t testing.TB, l engine.Log, offset int64, maxBytes int, upTo int64) []byte {
	t.Helper()
	s, err := l.Read(offset, maxBytes, upTo)
	if err != nil {
		t.Fatalf("Read(%d, %d, %d): %v", offset, maxBytes, upTo, err)
	}
	defer s.Release()
	b, err := s.AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkLog asserts that l holds exactly want (batches as appended): each
// reads back alone and in sequence, the end offset is right, and the next
// append gets the next offset.
func checkLog(t testing.TB, l engine.Log, want [][]byte) {
	t.Helper()
	next := l.StartOffset()
	for i, w := range want {
		b := record.Batch(w)
		got := sliceBytes(t, l, b.BaseOffset(), 1, -1)
		if !bytes.Equal(got, w) {
			t.Fatalf("batch %d (offset %d): read %d bytes, differ from the %d appended", i, b.BaseOffset(), len(got), len(w))
		}
		if b.BaseOffset() != next {
			t.Fatalf("batch %d has offset %d, want %d", i, b.BaseOffset(), next)
		}
		next = b.NextOffset()
	}
	if l.EndOffset() != next {
		t.Fatalf("EndOffset = %d, want %d", l.EndOffset(), next)
	}
	checkBytes(t, l, want) // a sequential read returns the same bytes
	nb := mkBatch(rand.New(rand.NewSource(1)), 2, 5000, 20)
	info, err := l.Append(nb, engine.AppendOptions{AssignOffsets: true})
	if err != nil {
		t.Fatal(err)
	}
	if info.FirstOffset != next {
		t.Fatalf("next append got offset %d, want %d", info.FirstOffset, next)
	}
	if got := sliceBytes(t, l, next, 1, -1); !bytes.Equal(got, nb) {
		t.Fatal("appended batch does not read back")
	}
}

func lastBatch(b []byte) record.Batch {
	var last record.Batch
	for len(b) > 0 {
		last = record.Batch(b)
		b = b[last.Size():]
	}
	return last
}

// copyDir copies a directory tree (a crashed store's files) to a new one.
// The store may still be open and writing: a file that vanishes between
// the directory read and its copy (a checkpoint's .tmp renamed into
// place) was not there at the moment of the "crash", and is skipped.
func copyDir(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.Walk(src, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			if path != src && os.IsNotExist(err) {
				return nil
			}
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		in, err := os.Open(path)
		if os.IsNotExist(err) {
			return nil
		}
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(target)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			return err
		}
		return out.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// segFiles lists the segment bases of the log dir.
func segBases(t testing.TB, logDir string) []int64 {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(logDir, "*.log"))
	var out []int64
	for _, p := range m {
		var b int64
		fmt.Sscanf(filepath.Base(p), "%d.log", &b)
		out = append(out, b)
	}
	return out
}

// noFsync turns fsync off for the test (see fsyncOff).
func noFsync(t testing.TB) {
	fsyncOff.Store(true)
	t.Cleanup(func() { fsyncOff.Store(false) })
}

// checkBytes asserts that a sequential read of l gives exactly want.
func checkBytes(t testing.TB, l engine.Log, want [][]byte) {
	t.Helper()
	var all, got []byte
	for _, w := range want {
		all = append(all, w...)
	}
	for off := l.StartOffset(); off < l.EndOffset(); {
		chunk := sliceBytes(t, l, off, 700, -1)
		if len(chunk) == 0 {
			t.Fatalf("empty read at %d", off)
		}
		got = append(got, chunk...)
		off = lastBatch(chunk).NextOffset()
	}
	if !bytes.Equal(got, all) {
		t.Fatalf("sequential read differs: %d bytes, want %d", len(got), len(all))
	}
}

// createLogs creates n logs of topic "t" (partitions 0..n-1) in st with cfg.
func createLogs(t testing.TB, st *Store, n int, cfg engine.LogConfig) []engine.Log {
	t.Helper()
	ls := make([]engine.Log, n)
	for i := range ls {
		l, err := st.CreateLog(engine.PartitionID{Topic: "t", Partition: int32(i)}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		ls[i] = l
	}
	return ls
}
