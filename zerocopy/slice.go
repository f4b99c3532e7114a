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

// Slice is a run of record-batch bytes: either [Pos, Pos+N) of a File, or Buf.
// The zero Slice is empty. A Slice from a backend must be Released once the
// caller is done with it; copies of a Slice share that one obligation.
type Slice struct {
	file *File
	pos  int64
	n    int64
	buf  []byte
}

// FileSlice returns a slice of f, taking a reference on it.
func FileSlice(f *File, pos, n int64) Slice {
	f.Acquire()
	return Slice{file: f, pos: pos, n: n}
}

// BytesSlice returns a slice over b. The caller promises b is not modified
// while the slice is in use.
func BytesSlice(b []byte) Slice { return Slice{buf: b, n: int64(len(b))} }

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

// Release drops the slice's file reference, if any.
func (s Slice) Release() {
	if s.file != nil {
		s.file.Release()
	}
}
