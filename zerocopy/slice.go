// Package zerocopy holds the byte ranges a storage backend hands out for a
// read, and the writer that puts them on a socket. A range is either a slice
// of a file (then the writer uses sendfile(2), and no record byte passes
// through user space) or bytes in memory (then it is an ordinary write).
package zerocopy

import (
	"fmt"
	"io"
	"os"
	"sync/atomic"
)

// File is a reference-counted read handle on a file. The owner (a segment)
// holds one reference; every Slice handed to a reader holds another. The
// descriptor is closed when the last reference goes, so a segment deleted by
// retention while a fetch still holds a slice of it stays readable: the file
// is unlinked at once, and its bytes live until the fetch is done.
type File struct {
	f    *os.File
	refs atomic.Int64
}

// NewFile wraps f with one reference, owned by the caller.
func NewFile(f *os.File) *File {
	zf := &File{f: f}
	zf.refs.Store(1)
	return zf
}

// Acquire takes another reference; it panics if the file is already closed,
// which would be a reference-counting bug in the caller.
func (f *File) Acquire() {
	if f.refs.Add(1) <= 1 {
		panic("zerocopy: Acquire on a released file")
	}
}

// Release drops a reference and closes the file when it was the last one.
func (f *File) Release() error {
	switch n := f.refs.Add(-1); {
	case n == 0:
		return f.f.Close()
	case n < 0:
		panic("zerocopy: Release of a released file")
	}
	return nil
}

// OS returns the file. It is open while the caller holds a reference.
func (f *File) OS() *os.File { return f.f }

// Refs returns the number of references held now: 0 once the file is
// closed. A backend that must not change the file's bytes under a reader
// (punching a hole) checks it while no new reference can be taken.
func (f *File) Refs() int64 { return f.refs.Load() }

// Shared is a reference-counted byte buffer that its owner reuses once the
// last slice of it is released (a backend's cache of recent bytes): free
// is called when the last reference goes. A reader that finds a Shared
// through a pointer its owner may replace takes a reference with
// TryAcquire, then checks that the pointer still leads to it; only then
// are the bytes the ones it looked for.
type Shared struct {
	B    []byte
	refs atomic.Int64
	free func(*Shared)
}

// NewShared returns a Shared over b with one reference, the owner's.
func NewShared(b []byte, free func(*Shared)) *Shared {
	sh := &Shared{B: b, free: free}
	sh.refs.Store(1)
	return sh
}

// Reuse gives a freed Shared one reference again, for its owner.
func (sh *Shared) Reuse() { sh.refs.Store(1) }

// TryAcquire takes a reference unless the last one is gone.
func (sh *Shared) TryAcquire() bool {
	for {
		n := sh.refs.Load()
		if n <= 0 {
			return false
		}
		if sh.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// Release drops a reference; the last one hands the buffer to free.
func (sh *Shared) Release() {
	switch n := sh.refs.Add(-1); {
	case n == 0:
		if sh.free != nil {
			sh.free(sh)
		}
	case n < 0:
		panic("zerocopy: Release of a released buffer")
	}
}

// Slice is a run of record-batch bytes: either [Pos, Pos+N) of a File, or Buf.
// The zero Slice is empty. A Slice from a backend must be Released once the
// caller is done with it; copies of a Slice share that one obligation.
type Slice struct {
	file   *File
	pos    int64
	n      int64
	buf    []byte
	shared *Shared // buf's owner when it is a Shared's, else nil
}

// FileSlice returns a slice of f, taking a reference on it.
func FileSlice(f *File, pos, n int64) Slice {
	f.Acquire()
	return Slice{file: f, pos: pos, n: n}
}

// BytesSlice returns a slice over b. The caller promises b is not modified
// while the slice is in use.
func BytesSlice(b []byte) Slice { return Slice{buf: b, n: int64(len(b))} }

// SharedSlice returns a slice of sh's bytes [off, off+n), taking over a
// reference the caller holds (TryAcquire): Release gives it back.
func SharedSlice(sh *Shared, off, n int) Slice {
	return Slice{buf: sh.B[off : off+n : off+n], n: int64(n), shared: sh}
}

// Len is the number of bytes in the slice.
func (s Slice) Len() int64 { return s.n }

// File reports the file range behind s, when there is one.
func (s Slice) File() (f *os.File, pos, n int64, ok bool) {
	if s.file == nil {
		return nil, 0, 0, false
	}
	return s.file.f, s.pos, s.n, true
}

// Bytes returns the in-memory bytes of s, or nil for a file slice.
func (s Slice) Bytes() []byte { return s.buf }

// AppendTo appends the bytes of s to dst (reading the file for a file slice):
// the copy path, used where sendfile cannot be.
func (s Slice) AppendTo(dst []byte) ([]byte, error) {
	if s.file == nil {
		return append(dst, s.buf...), nil
	}
	start := len(dst)
	dst = append(dst, make([]byte, s.n)...)
	if _, err := s.file.f.ReadAt(dst[start:], s.pos); err != nil {
		return dst[:start], fmt.Errorf("zerocopy: read %s at %d+%d: %w", s.file.f.Name(), s.pos, s.n, err)
	}
	return dst, nil
}

// ReadAt implements io.ReaderAt over the slice's bytes.
func (s Slice) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off >= s.n {
		if len(p) == 0 && off == s.n {
			return 0, nil
		}
		return 0, io.EOF
	}
	want := len(p)
	if rem := s.n - off; int64(want) > rem {
		p = p[:rem]
	}
	var n int
	var err error
	if s.file == nil {
		n = copy(p, s.buf[off:])
	} else {
		n, err = s.file.f.ReadAt(p, s.pos+off)
	}
	if err == nil && n < want {
		err = io.EOF
	}
	return n, err
}

// Release drops the slice's file or buffer reference, if any.
func (s Slice) Release() {
	switch {
	case s.file != nil:
		s.file.Release()
	case s.shared != nil:
		s.shared.Release()
	}
}
