package memlog

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/record"
)

// TestAppendCopiesOnce: appending a chunk's worth of batches allocates
// about the bytes appended, not twice them as a buffer grown by doubling
// does (each growth copies everything before it into a new array, and the
// old array is fresh memory that was touched for nothing). The bound is
// 1.25x plus 1 MiB: the room left in the last block (under an eighth of a
// block per block, and the last block itself) and the index.
func TestAppendCopiesOnce(t *testing.T) {
	_, l := openLog(t, engine.LogConfig{SegmentBytes: 1 << 30})
	b := benchBatch(16 << 10)
	opts := engine.AppendOptions{AssignOffsets: true}
	const total = 48 << 20
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for n := 0; n < total; n += len(b) {
		if _, err := l.Append(b, opts); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	if limit := uint64(total)*5/4 + 1<<20; alloc > limit {
		t.Fatalf("appending %d MiB allocated %d MiB, want at most %d MiB", total>>20, alloc>>20, limit>>20)
	}
	if l.Size() < total {
		t.Fatalf("size %d, want at least %d", l.Size(), total)
	}
}

// TestBlocksModel appends batches of mixed sizes (small ones packed into
// shared blocks, large ones in blocks of their own), truncates at random
// batch boundaries, drops the log's head and reads everything back,
// comparing with the batches kept in a model. Readers' slices taken before
// a Truncate must not change after later appends. The seed is printed.
func TestBlocksModel(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	_, l := openLog(t, engine.LogConfig{SegmentBytes: 3 << 20})
	var model [][]byte // model[i]: batch i as stored, by append order
	var held [][2][]byte
	sizes := []int{200, 1 << 10, 6 << 10, 40 << 10, 300 << 10, 1 << 20}
	for step := 0; step < 400; step++ {
		switch r := rng.IntN(20); {
		case r < 16:
			b := sizedBatch(sizes[rng.IntN(len(sizes))], byte(step))
			if _, err := l.Append(b, engine.AppendOptions{AssignOffsets: true, LeaderEpoch: int32(step / 50)}); err != nil {
				t.Fatal(err)
			}
			model = append(model, b) // Append rewrote b's baseOffset in place
		case r < 18 && len(model) > 0:
			i := rng.IntN(len(model))
			s, err := l.Read(max(record.Batch(model[i]).BaseOffset(), l.StartOffset()), rng.IntN(2<<20), -1)
			if err != nil {
				t.Fatal(err)
			}
			if s.Len() > 0 {
				held = append(held, [2][]byte{s.Bytes(), bytes.Clone(s.Bytes())})
			}
			s.Release()
			cut := rng.IntN(len(model))
			if err := l.Truncate(record.Batch(model[cut]).BaseOffset()); err != nil {
				t.Fatal(err)
			}
			model = model[:cut]
		default:
			if len(model) > 2 {
				if err := l.DeleteBefore(record.Batch(model[2]).BaseOffset()); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for _, h := range held {
		if !bytes.Equal(h[0], h[1]) {
			t.Fatal("bytes returned by Read changed after Truncate and later appends")
		}
	}
	// Read back from the start offset: every model batch at or after it.
	var got []byte
	for next := l.StartOffset(); next < l.EndOffset(); {
		s, err := l.Read(next, 1<<20, -1)
		if err != nil {
			t.Fatal(err)
		}
		bs := s.Bytes()
		if len(bs) == 0 {
			t.Fatalf("Read(%d) returned nothing below end %d", next, l.EndOffset())
		}
		if _, _, err := record.ValidateAll(bs); err != nil {
			t.Fatal(err)
		}
		got = append(got, bs...)
		next = record.Batch(bs[len(bs)-lastSize(bs):]).LastOffset() + 1
		s.Release()
	}
	var want []byte
	var size int64
	for _, b := range model {
		if record.Batch(b).LastOffset() >= l.StartOffset() {
			want = append(want, b...)
		}
		size += int64(len(b))
	}
	if !bytes.Equal(want, got) {
		t.Fatalf("read back %d bytes that differ from the %d the model holds", len(got), len(want))
	}
	if l.Size() > size {
		t.Fatalf("size %d, more than the %d bytes appended and kept", l.Size(), size)
	}
}

// sizedBatch builds one batch of about size bytes of 1 KiB records (one
// smaller record when size is below that) whose values are all tag.
func sizedBatch(size int, tag byte) []byte {
	n := max(1, size/(1<<10))
	val := bytes.Repeat([]byte{tag}, max(1, size/n-30))
	recs := make([]record.BuildRecord, n)
	for i := range recs {
		recs[i] = record.BuildRecord{Value: val, Timestamp: int64(tag)}
	}
	return record.AppendBatch(nil, record.BatchOptions{ProducerID: -1}, recs)
}

// lastSize returns the size of the last batch in bs.
func lastSize(bs []byte) int {
	n := 0
	for len(bs) > 0 {
		n = record.Batch(bs).Size()
		bs = bs[n:]
	}
	return n
}

// TestTruncateRoomBounded: a Truncate takes away the room of the block it
// cuts, so the next append starts a new block; repeated append-truncate
// cycles must not leave a mostly empty block per batch. The blocks held
// stay under twice the bytes plus minBlock.
func TestTruncateRoomBounded(t *testing.T) {
	_, el := openLog(t, engine.LogConfig{SegmentBytes: 1 << 30})
	l := el.(*Log)
	for i := 0; i < 300; i++ {
		mustAppend(t, l, batch(1, 1, "keep"), 0)
		info := mustAppend(t, l, batch(1, 1, "cut"), 0)
		if err := l.Truncate(info.FirstOffset); err != nil {
			t.Fatal(err)
		}
	}
	c := l.chunks[len(l.chunks)-1]
	if len(l.chunks) != 1 || c.capacity > 2*c.bytes+minBlock {
		t.Fatalf("%d chunks; the last holds %d bytes in %d blocks of %d bytes in all, want at most %d",
			len(l.chunks), c.bytes, len(c.blocks), c.capacity, 2*c.bytes+minBlock)
	}
	var capacity int64
	for _, blk := range c.blocks {
		capacity += int64(len(blk))
	}
	if capacity != c.capacity || c.bytes != l.Size() {
		t.Fatalf("capacity field %d, blocks %d; bytes %d, size %d", c.capacity, capacity, c.bytes, l.Size())
	}
}

// TestConcurrentBlocks runs one writer that appends batches of mixed sizes
// (packed into shared blocks and in blocks of their own) and now and then
// truncates its last batch, beside readers that read from offsets they
// have seen and check every batch's CRC, also after the writer went on
// (run with -race: a block byte written under a reader shows up there).
func TestConcurrentBlocks(t *testing.T) {
	_, l := openLog(t, engine.LogConfig{SegmentBytes: 8 << 20})
	sizes := []int{300, 2 << 10, 20 << 10, 300 << 10}
	const appends = 300
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < appends; i++ {
			info, err := l.Append(sizedBatch(sizes[i%len(sizes)], byte(i)), engine.AppendOptions{AssignOffsets: true})
			if err != nil {
				t.Error(err)
				return
			}
			if i%7 == 3 {
				if err := l.Truncate(info.FirstOffset); err != nil {
					t.Error(err)
					return
				}
			}
		}
	}()
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			var held [][]byte
			for i := 0; i < 2*appends; i++ {
				end := l.EndOffset()
				if end == 0 {
					continue
				}
				s, err := l.Read(int64(i*(r+1))%end, 1<<20, -1)
				if errors.Is(err, engine.ErrOffsetOutOfRange) {
					continue // truncated away since EndOffset
				}
				if err != nil {
					t.Error(err)
					return
				}
				if s.Len() > 0 {
					held = append(held, s.Bytes())
				}
				s.Release()
			}
			for _, b := range held {
				if _, _, err := record.ValidateAll(b); err != nil {
					t.Errorf("a batch read earlier changed: %v", err)
					return
				}
			}
		}(r)
	}
	wg.Wait()
}
