package segment

import (
	"bytes"
	"math/rand"
	"sync"
	"testing"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/engine/tailcache"
	"github.com/sluice/sluice/record"
)

// readSlice reads [offset, ...) and reports whether the bytes came from
// memory (the tail cache) rather than a file.
func readSlice(t *testing.T, l engine.Log, offset int64, maxBytes int) (b []byte, fromMemory bool) {
	t.Helper()
	s, err := l.Read(offset, maxBytes, -1)
	if err != nil {
		t.Fatalf("Read(%d): %v", offset, err)
	}
	defer s.Release()
	_, _, _, isFile := s.File()
	b, err = s.AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b, !isFile && s.Len() > 0
}

// appendSmall appends count batches of one record of about size bytes and
// returns them as stored.
func appendSmall(t *testing.T, l engine.Log, rng *rand.Rand, count, size int) [][]byte {
	t.Helper()
	var out [][]byte
	for i := 0; i < count; i++ {
		b := mkBatch(rng, 1, int64(1000+i), size)
		if _, err := l.Append(b, engine.AppendOptions{AssignOffsets: true}); err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// Reads at the tail of the active segment come from memory, with the
// bytes the file holds, through many buffer switches; a read that starts
// before the buffer reads the file.
func TestTailCacheServesTheTail(t *testing.T) {
	st, l := newLog(t, engine.LogConfig{SegmentBytes: 64 << 20, RetentionMs: -1, RetentionBytes: -1}, nil)
	rng := rand.New(rand.NewSource(1))
	var all [][]byte
	for round := 0; round < 200; round++ {
		got := appendSmall(t, l, rng, 1+rng.Intn(3), 100+rng.Intn(900))
		all = append(all, got...)
		first := record.Batch(got[0]).BaseOffset()
		b, mem := readSlice(t, l, first, 1<<20)
		if want := bytes.Join(got, nil); !bytes.Equal(b, want) {
			t.Fatalf("round %d: read %d bytes at %d, differ from the %d appended", round, len(b), first, len(want))
		}
		if !mem {
			t.Fatalf("round %d: the tail read went to the file", round)
		}
	}
	// A consumer 3 KiB behind still reads from memory (the carry).
	back, n := len(all)-1, 0
	for ; back > 0 && n+len(all[back]) < 3<<10; back-- {
		n += len(all[back])
	}
	back++
	if b, mem := readSlice(t, l, record.Batch(all[back]).BaseOffset(), 1<<20); !mem || !bytes.Equal(b, bytes.Join(all[back:], nil)) {
		t.Fatalf("read 3 KiB behind the end: from memory %v, bytes equal %v", mem, bytes.Equal(b, bytes.Join(all[back:], nil)))
	}
	_, missesBefore, _ := st.TailCache()
	b, mem := readSlice(t, l, 0, 1<<20)
	if mem {
		t.Fatal("a read from the start came from memory")
	}
	if !bytes.HasPrefix(bytes.Join(all, nil), b) || len(b) == 0 {
		t.Fatal("the read from the start returned the wrong bytes")
	}
	if _, misses, held := st.TailCache(); misses != missesBefore+1 || held != tailcache.BufBytes {
		t.Fatalf("misses %d (want %d), held %d (want %d)", misses, missesBefore+1, held, tailcache.BufBytes)
	}
	checkLog(t, l, all)
}

// A large append drops the buffer (its bytes would no longer reach the
// end): reads go to the file, until small appends start a new one.
func TestTailCacheLargeAppendDrops(t *testing.T) {
	st, l := newLog(t, engine.LogConfig{SegmentBytes: 64 << 20, RetentionMs: -1, RetentionBytes: -1}, nil)
	rng := rand.New(rand.NewSource(2))
	small := appendSmall(t, l, rng, 3, 200)
	big := mkBatch(rng, 8, 2000, 1000) // > tailcache.AppendMax
	if _, err := l.Append(big, engine.AppendOptions{AssignOffsets: true}); err != nil {
		t.Fatal(err)
	}
	if _, _, held := st.TailCache(); held != 0 {
		t.Fatalf("held %d bytes after a large append", held)
	}
	if b, mem := readSlice(t, l, record.Batch(big).BaseOffset(), 1<<20); mem || !bytes.Equal(b, big) {
		t.Fatalf("large batch: from memory %v, bytes equal %v", mem, bytes.Equal(b, big))
	}
	if b, mem := readSlice(t, l, 0, 1<<20); mem || !bytes.Equal(b, bytes.Join(append(small, big), nil)) {
		t.Fatalf("whole log: from memory %v", mem)
	}
	after := appendSmall(t, l, rng, 2, 300)
	if b, mem := readSlice(t, l, record.Batch(after[0]).BaseOffset(), 1<<20); !mem || !bytes.Equal(b, bytes.Join(after, nil)) {
		t.Fatalf("after: from memory %v", mem)
	}
	// A read that spans the large batch and the new buffer reads the file.
	if b, mem := readSlice(t, l, record.Batch(big).BaseOffset(), 1<<20); mem || !bytes.Equal(b, bytes.Join(append([][]byte{big}, after...), nil)) {
		t.Fatalf("spanning read: from memory %v", mem)
	}
}

// A truncation drops the buffer: the bytes appended at the same positions
// afterwards read back, never the ones cut; and a slice handed out before
// the cut keeps the bytes it had.
func TestTailCacheTruncation(t *testing.T) {
	st, l := newLog(t, engine.LogConfig{SegmentBytes: 64 << 20, RetentionMs: -1, RetentionBytes: -1}, nil)
	rng := rand.New(rand.NewSource(3))
	kept := appendSmall(t, l, rng, 4, 300)
	cut := appendSmall(t, l, rng, 3, 300)
	at := record.Batch(cut[0]).BaseOffset()
	old, err := l.Read(at, 1<<20, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Release()
	if err := l.Truncate(at); err != nil {
		t.Fatal(err)
	}
	if _, _, held := st.TailCache(); held != 0 {
		t.Fatalf("held %d bytes after a truncation", held)
	}
	repl := appendSmall(t, l, rng, 3, 300)
	if record.Batch(repl[0]).BaseOffset() != at {
		t.Fatal("the appends after the truncation did not reuse its offsets")
	}
	b, mem := readSlice(t, l, at, 1<<20)
	if !mem || !bytes.Equal(b, bytes.Join(repl, nil)) {
		t.Fatalf("after the truncation: from memory %v, bytes equal %v", mem, bytes.Equal(b, bytes.Join(repl, nil)))
	}
	ob, err := old.AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ob, bytes.Join(cut, nil)) {
		t.Fatal("a slice handed out before the truncation changed")
	}
	checkLog(t, l, append(kept, repl...))
}

// A roll drops the old segment's buffer; the new segment gets its own.
// Closing the store gives every buffer back.
func TestTailCacheRollAndClose(t *testing.T) {
	st, l := newLog(t, engine.LogConfig{SegmentBytes: 8 << 10, RetentionMs: -1, RetentionBytes: -1}, nil)
	rng := rand.New(rand.NewSource(4))
	all := appendSmall(t, l, rng, 40, 500) // several rolls
	drainRolls(t, st)
	l.mu.RLock()
	segs := len(l.segs)
	withBuf := 0
	for _, s := range l.segs {
		if s.recent.Has() {
			withBuf++
		}
	}
	active := l.segs[len(l.segs)-1]
	l.mu.RUnlock()
	if segs < 3 || withBuf != 1 || !active.recent.Has() {
		t.Fatalf("%d segments, %d with a buffer (want only the active one)", segs, withBuf)
	}
	if _, _, held := st.TailCache(); held != tailcache.BufBytes {
		t.Fatalf("held %d", held)
	}
	checkLog(t, l, all)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, held := st.TailCache(); held != 0 {
		t.Fatalf("held %d bytes after the log closed", held)
	}
}

// The store's budget bounds the buffers: a log that finds it spent reads
// its file; a deleted log's buffer goes back to the budget.
func TestTailCacheBudget(t *testing.T) {
	st, err := Open(engine.Options{Dir: t.TempDir(), Logger: quietLogger(t), TailCacheBytes: 2 * tailcache.BufBytes})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cfg := engine.LogConfig{SegmentBytes: 64 << 20, RetentionMs: -1, RetentionBytes: -1}
	logs := createLogs(t, st, 3, cfg)
	rng := rand.New(rand.NewSource(5))
	var mem []bool
	for _, l := range logs {
		got := appendSmall(t, l, rng, 2, 100)
		_, m := readSlice(t, l, record.Batch(got[0]).BaseOffset(), 1<<20)
		mem = append(mem, m)
	}
	if !mem[0] || !mem[1] || mem[2] {
		t.Fatalf("from memory %v: want the first two only", mem)
	}
	if _, _, held := st.TailCache(); held != 2*tailcache.BufBytes {
		t.Fatalf("held %d", held)
	}
	if err := st.DeleteLog(logs[0].(*Log).id); err != nil {
		t.Fatal(err)
	}
	got := appendSmall(t, logs[2], rng, 1, 100)
	if _, m := readSlice(t, logs[2], record.Batch(got[0]).BaseOffset(), 1<<20); !m {
		t.Fatal("the budget a deleted log gave back was not used")
	}

	off, err := Open(engine.Options{Dir: t.TempDir(), Logger: quietLogger(t), TailCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer off.Close()
	l := createLogs(t, off, 1, cfg)[0]
	got = appendSmall(t, l, rng, 1, 100)
	if _, m := readSlice(t, l, record.Batch(got[0]).BaseOffset(), 1<<20); m {
		t.Fatal("a store with the cache off read from memory")
	}
}

// Readers at the tail racing an appender (run with -race) always see the
// bytes that were appended.
func TestTailCacheConcurrentReaders(t *testing.T) {
	_, l := newLog(t, engine.LogConfig{SegmentBytes: 256 << 10, RetentionMs: -1, RetentionBytes: -1}, nil)
	rng := rand.New(rand.NewSource(6))
	const n = 2000
	batches := make([][]byte, n)
	for i := range batches {
		batches[i] = mkBatch(rng, 1, int64(i), 50+rng.Intn(700))
	}
	var mu sync.Mutex
	stored := make([][]byte, 0, n) // as stored, by offset (one record a batch)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, b := range batches {
			if _, err := l.Append(b, engine.AppendOptions{AssignOffsets: true}); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			stored = append(stored, b)
			mu.Unlock()
		}
	}()
	var wg sync.WaitGroup
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			next := int64(0)
			for next < n {
				s, err := l.Read(next, 8<<10, -1)
				if err != nil {
					t.Error(err)
					return
				}
				b, err := s.AppendTo(nil)
				s.Release()
				if err != nil {
					t.Error(err)
					return
				}
				for len(b) > 0 {
					bt := record.Batch(b)
					var want []byte
					for want == nil { // the read may see it before Append returns
						mu.Lock()
						if int(bt.BaseOffset()) < len(stored) {
							want = stored[bt.BaseOffset()]
						}
						mu.Unlock()
					}
					if bt.BaseOffset() != next || !bytes.Equal(b[:bt.Size()], want) {
						t.Errorf("offset %d: read a batch that differs from the one appended", next)
						return
					}
					next = bt.NextOffset()
					b = b[bt.Size():]
				}
			}
		}()
	}
	wg.Wait()
	<-done
}
