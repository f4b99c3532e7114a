package fsutil

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// recorder is an io.WriterAt that notes each call and can fail or write
// short on the call numbered failAt.
type recorder struct {
	calls  [][2]int64 // offset, length
	buf    []byte
	failAt int
	short  bool
}

var errDisk = errors.New("disk full")

func (r *recorder) WriteAt(p []byte, off int64) (int, error) {
	r.calls = append(r.calls, [2]int64{off, int64(len(p))})
	n := len(p)
	if len(r.calls) == r.failAt {
		n /= 2
	}
	if end := int(off) + n; end > len(r.buf) {
		r.buf = append(r.buf, make([]byte, end-len(r.buf))...)
	}
	copy(r.buf[off:], p[:n])
	if len(r.calls) == r.failAt && !r.short {
		return n, errDisk
	}
	return n, nil
}

func TestWriteAtChunks(t *testing.T) {
	for _, size := range []int{0, 1, WriteChunk - 1, WriteChunk, WriteChunk + 1, 4*WriteChunk + 17} {
		p := bytes.Repeat([]byte{0xab}, size)
		for i := range p {
			p[i] = byte(i * 31)
		}
		var r recorder
		const off = 100
		n, err := WriteAt(&r, p, off)
		if err != nil || n != size {
			t.Fatalf("size %d: WriteAt = %d, %v", size, n, err)
		}
		next := int64(off)
		for _, c := range r.calls {
			if c[0] != next || c[1] > WriteChunk || c[1] == 0 {
				t.Fatalf("size %d: calls %v: not contiguous pieces of at most %d bytes", size, r.calls, WriteChunk)
			}
			next += c[1]
		}
		if want := (size + WriteChunk - 1) / WriteChunk; len(r.calls) != want {
			t.Fatalf("size %d: %d calls, want %d", size, len(r.calls), want)
		}
		if size > 0 && !bytes.Equal(r.buf[off:], p) {
			t.Fatalf("size %d: bytes differ", size)
		}
	}
}

// An error or a short write stops at once and counts what was written
// before it, as io.WriterAt's contract asks.
func TestWriteAtStopsAtFailure(t *testing.T) {
	p := make([]byte, 3*WriteChunk)
	r := recorder{failAt: 2}
	n, err := WriteAt(&r, p, 0)
	if !errors.Is(err, errDisk) || n != WriteChunk+WriteChunk/2 || len(r.calls) != 2 {
		t.Fatalf("WriteAt = %d, %v after %d calls; want %d, %v after 2", n, err, len(r.calls), WriteChunk+WriteChunk/2, errDisk)
	}
	r = recorder{failAt: 3, short: true}
	n, err = WriteAt(&r, p, 0)
	if !errors.Is(err, io.ErrShortWrite) || n != 2*WriteChunk+WriteChunk/2 || len(r.calls) != 3 {
		t.Fatalf("short write: WriteAt = %d, %v after %d calls", n, err, len(r.calls))
	}
}

func TestWriteAtFile(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := make([]byte, 2*WriteChunk+5)
	for i := range p {
		p[i] = byte(i)
	}
	if n, err := WriteAt(f, p, 7); err != nil || n != len(p) {
		t.Fatalf("WriteAt = %d, %v", n, err)
	}
	got := make([]byte, len(p))
	if _, err := f.ReadAt(got, 7); err != nil || !bytes.Equal(got, p) {
		t.Fatalf("read back: %v, equal %v", err, bytes.Equal(got, p))
	}
}
