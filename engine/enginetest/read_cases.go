package enginetest

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/record"
)

func readCases() []testCase {
	return []testCase{
		{"ReadMiddleOfBatch", testReadMiddleOfBatch},
		{"ReadMaxBytes", testReadMaxBytes},
		{"ReadUpTo", testReadUpTo},
		{"ReadOutOfRange", testReadOutOfRange},
		{"ReadAcrossSegments", testReadAcrossSegments},
	}
}

// tenBatches fills l with 10 batches of 3 records (offsets 0..29), batch i
// having values of 20*(i+1) bytes so batch sizes differ.
func tenBatches(t *testing.T, l engine.Log, m *model) {
	t.Helper()
	for i := 0; i < 10; i++ {
		appendOK(t, l, m, MakeBatch(3, baseTs+int64(10*i), 20*(i+1), byte(i)), leader(0))
	}
}

// testReadMiddleOfBatch: any offset inside a batch returns that batch
// first (the consumer skips the records before its position).
func testReadMiddleOfBatch(t *testing.T, h *harness) {
	l := h.create(engine.LogConfig{})
	var m model
	tenBatches(t, l, &m)
	for off := int64(0); off < 30; off++ {
		data, bs := mustRead(t, l, off, 1<<20, -1)
		if bs[0].base != off/3*3 {
			t.Fatalf("Read(%d) starts at batch %d, want %d", off, bs[0].base, off/3*3)
		}
		// One segment, room for all: everything to the end.
		if !bytes.Equal(data, m.from(off)) {
			t.Fatalf("Read(%d) bytes differ from the log's batches from %d", off, off/3*3)
		}
	}
}

// testReadMaxBytes checks KIP-74 and whole batches: at least one whole
// batch even when it alone exceeds maxBytes, never a partial batch, and
// (within one segment) as many whole batches as fit.
func testReadMaxBytes(t *testing.T, h *harness) {
	l := h.create(engine.LogConfig{})
	var m model
	tenBatches(t, l, &m)
	sizes := make([]int, len(m.batches))
	for i, b := range m.batches {
		sizes[i] = len(b)
	}
	for _, start := range []int{0, 4, 9} {
		for _, maxBytes := range []int{0, 1, sizes[start] - 1, sizes[start], sizes[start] + 1, sizes[start] + sizes[min(start+1, 9)], 1 << 20} {
			t.Run(fmt.Sprintf("from=%d/max=%d", start*3, maxBytes), func(t *testing.T) {
				data, bs := mustRead(t, l, int64(start*3), maxBytes, -1)
				if len(bs) == 0 {
					t.Fatalf("empty read below the end: KIP-74 wants at least one whole batch")
				}
				// Kafka (KIP-74): the first batch even past maxBytes; after it,
				// only batches that fit. Within one segment, every one that fits.
				want := sizes[start]
				n := 1
				for i := start + 1; i < len(sizes) && want+sizes[i] <= maxBytes; i++ {
					want += sizes[i]
					n++
				}
				if len(data) != want || len(bs) != n {
					t.Fatalf("read %d bytes in %d batches, want %d bytes in %d batches", len(data), len(bs), want, n)
				}
				if len(bs) > 1 && len(data) > maxBytes {
					t.Fatalf("read %d bytes > maxBytes %d with more than one batch", len(data), maxBytes)
				}
			})
		}
	}
}

// testReadUpTo: upTo (the high watermark) bounds reads to batches that end
// before it; at or past it the read is empty, not an error.
func testReadUpTo(t *testing.T, h *harness) {
	l := h.create(engine.LogConfig{})
	var m model
	tenBatches(t, l, &m)
	tests := []struct {
		offset, upTo int64
		wantBatches  int
	}{
		{0, 30, 10},
		{0, -1, 10},
		{0, 15, 5},
		{4, 15, 4},
		{14, 15, 1},
		{15, 15, 0},
		{20, 15, 0},
		{29, 30, 1},
		{0, 3, 1},
		{0, 0, 0},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("offset=%d/upTo=%d", tc.offset, tc.upTo), func(t *testing.T) {
			data, bs := mustRead(t, l, tc.offset, 1<<20, tc.upTo)
			if len(bs) != tc.wantBatches {
				t.Fatalf("read %d batches, want %d", len(bs), tc.wantBatches)
			}
			if tc.upTo >= 0 && len(bs) > 0 && bs[len(bs)-1].last >= tc.upTo {
				t.Fatalf("read a batch ending at %d, at/after upTo %d", bs[len(bs)-1].last, tc.upTo)
			}
			_ = data
		})
	}
	// KIP-74 still holds under the bound: maxBytes 1 below upTo gives one.
	if _, bs := mustRead(t, l, 3, 1, 15); len(bs) != 1 {
		t.Fatalf("Read(3, 1, 15) returned %d batches, want 1", len(bs))
	}
}

// testReadOutOfRange: EndOffset reads empty; past it or below StartOffset
// is ErrOffsetOutOfRange; an empty log reads empty at 0.
func testReadOutOfRange(t *testing.T, h *harness) {
	l := h.create(engine.LogConfig{})
	if _, bs := mustRead(t, l, 0, 1<<20, -1); len(bs) != 0 {
		t.Fatalf("empty log: Read(0) returned %d batches", len(bs))
	}
	_, err := read(t, l, 1, 1<<20, -1)
	wantErr(t, "empty log: Read(1)", err, engine.ErrOffsetOutOfRange)
	var m model
	tenBatches(t, l, &m)
	if _, bs := mustRead(t, l, 30, 1<<20, -1); len(bs) != 0 {
		t.Fatalf("Read(EndOffset) returned %d batches, want none", len(bs))
	}
	for _, off := range []int64{31, 1000, -1} {
		_, err := read(t, l, off, 1<<20, -1)
		wantErr(t, fmt.Sprintf("Read(%d)", off), err, engine.ErrOffsetOutOfRange)
	}
	noErr(t, "DeleteBefore(6)", l.DeleteBefore(6))
	for _, off := range []int64{0, 5} {
		_, err := read(t, l, off, 1<<20, -1)
		wantErr(t, fmt.Sprintf("Read(%d) below StartOffset 6", off), err, engine.ErrOffsetOutOfRange)
	}
	mustRead(t, l, 6, 1<<20, -1)
}

// testReadAcrossSegments: with small segments a whole scan still yields
// every batch once, dense, and reads from every offset start at the batch
// that holds it (reads may stop at a segment end, as Kafka's do).
func testReadAcrossSegments(t *testing.T, h *harness) {
	l := h.create(engine.LogConfig{SegmentBytes: 1024})
	var m model
	for i := 0; i < 40; i++ {
		appendOK(t, l, &m, MakeBatch(1+i%3, baseTs+int64(i), 60+7*i%50, byte(i)), leader(0))
	}
	if got := scan(t, l, 0); !bytes.Equal(got, m.from(0)) {
		t.Fatalf("scan across segments differs from the appended batches")
	}
	for off := int64(0); off < l.EndOffset(); off++ {
		data, bs := mustRead(t, l, off, 1<<20, -1)
		if !bytes.HasPrefix(m.from(off), data) {
			t.Fatalf("Read(%d) is not a prefix of the log from there", off)
		}
		_ = bs
	}
	if l.Size() != m.size() {
		t.Fatalf("Size %d, want %d", l.Size(), m.size())
	}
	// The last batch of the log, in the active segment, is readable.
	last := record.Batch(m.batches[len(m.batches)-1])
	if _, bs := mustRead(t, l, last.LastOffset(), 1, -1); bs[0].base != last.BaseOffset() {
		t.Fatalf("Read(last offset) starts at %d, want %d", bs[0].base, last.BaseOffset())
	}
}
