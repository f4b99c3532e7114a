// Package faultfs is a segment.FS for tests whose disks fail on demand:
// after Fail(dir), every open of a segment's .log file under dir, and
// every write, fsync and truncate of one already open, fails with an
// error wrapping syscall.EIO, as a dead disk's would; the rest of the
// file system works. It lets a broker-level test take one log dir of
// several offline without root (chmod does not stop root, and a
// read-only remount is refused while files are open for writing).
package faultfs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/sluice/sluice/segment"
)

// FS is segment.OSFS with per-dir failures. Safe for concurrent use.
type FS struct {
	mu     sync.Mutex
	failed []string // dirs whose files fail, cleaned and absolute
}

// New returns an FS on which nothing fails yet.
func New() *FS { return &FS{} }

// Fail makes every file under dir fail from now on.
func (fs *FS) Fail(dir string) {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	fs.mu.Lock()
	fs.failed = append(fs.failed, filepath.Clean(dir)+string(filepath.Separator))
	fs.mu.Unlock()
}

// check returns the injected error for op on path, nil when path's dir
// has not failed.
func (fs *FS) check(op, path string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for _, d := range fs.failed {
		if strings.HasPrefix(path, d) {
			return &os.PathError{Op: op, Path: path, Err: fmt.Errorf("faultfs: injected failure: %w", syscall.EIO)}
		}
	}
	return nil
}

// OpenFile implements segment.FS.
func (fs *FS) OpenFile(path string) (segment.File, error) {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if err := fs.check("open", path); err != nil {
		return nil, err
	}
	f, err := segment.OSFS.OpenFile(path)
	if err != nil {
		return nil, err
	}
	return &file{File: f, fs: fs, path: path}, nil
}

type file struct {
	segment.File
	fs   *FS
	path string
}

func (f *file) WriteAt(p []byte, off int64) (int, error) {
	if err := f.fs.check("write", f.path); err != nil {
		return 0, err
	}
	return f.File.WriteAt(p, off)
}

func (f *file) Sync() error {
	if err := f.fs.check("fsync", f.path); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f *file) Truncate(size int64) error {
	if err := f.fs.check("truncate", f.path); err != nil {
		return err
	}
	return f.File.Truncate(size)
}
