package segment

import (
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
)

// fsOp names a File operation an errorFS can fail.
type fsOp string

const (
	opWrite    fsOp = "write"
	opSync     fsOp = "fsync"
	opTruncate fsOp = "truncate"
)

// errorFS is OSFS with injected failures, in the spirit of pebble's
// vfs/errorfs: inject(op) arms op, and the next call of op on any file the
// FS opened fails with an error wrapping syscall.EIO (a write after writing
// the first half of its bytes, as a torn write would). Each injection fires
// once; the file then works again, so a log that recovers by retrying,
// instead of staying failed, is caught. Safe for concurrent use.
type errorFS struct {
	mu    sync.Mutex
	armed map[fsOp]bool
	skip  map[fsOp]int // calls of an armed op that still succeed first
	fired []error      // the injected errors, in order
	reads atomic.Int64 // ReadAt calls on the files it opened
}

func newErrorFS() *errorFS { return &errorFS{armed: map[fsOp]bool{}, skip: map[fsOp]int{}} }

// injectAfter arms op to fail once, after n more calls of it succeed: a
// write torn in a later pwrite of one append (fsutil.WriteAt).
func (fs *errorFS) injectAfter(op fsOp, n int) {
	fs.mu.Lock()
	fs.armed[op] = true
	fs.skip[op] = n
	fs.mu.Unlock()
}

// inject arms op to fail once.
func (fs *errorFS) inject(op fsOp) {
	fs.mu.Lock()
	fs.armed[op] = true
	fs.mu.Unlock()
}

// take disarms op and returns its injected error, or nil when op was not
// armed.
func (fs *errorFS) take(op fsOp, path string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if !fs.armed[op] {
		return nil
	}
	if fs.skip[op] > 0 {
		fs.skip[op]--
		return nil
	}
	delete(fs.armed, op)
	err := fmt.Errorf("errorfs: injected %s failure on %s: %w", op, path, syscall.EIO)
	fs.fired = append(fs.fired, err)
	return err
}

// injected returns the errors injected so far.
func (fs *errorFS) injected() []error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return append([]error(nil), fs.fired...)
}

func (fs *errorFS) OpenFile(path string) (File, error) {
	f, err := OSFS.OpenFile(path)
	if err != nil {
		return nil, err
	}
	return &errorFile{File: f, fs: fs, path: path}, nil
}

// errorFile wraps a File, failing the operations its errorFS arms. Reads
// (counted) and OS (the sendfile side) pass through untouched.
type errorFile struct {
	File
	fs   *errorFS
	path string
}

func (f *errorFile) ReadAt(p []byte, off int64) (int, error) {
	f.fs.reads.Add(1)
	return f.File.ReadAt(p, off)
}

func (f *errorFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.fs.take(opWrite, f.path); err != nil {
		n, _ := f.File.WriteAt(p[:len(p)/2], off)
		return n, err
	}
	return f.File.WriteAt(p, off)
}

func (f *errorFile) Sync() error {
	if err := f.fs.take(opSync, f.path); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f *errorFile) Truncate(size int64) error {
	if err := f.fs.take(opTruncate, f.path); err != nil {
		return err
	}
	return f.File.Truncate(size)
}
