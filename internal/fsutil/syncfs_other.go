//go:build !linux

package fsutil

import (
	"errors"
	"os"
)

// SyncFS is Linux's syncfs(2); elsewhere callers fsync each file.
func SyncFS(*os.File) error { return errors.New("fsutil: syncfs is Linux only") }

// SyncFSReportsErrors is false: there is no SyncFS to use.
func SyncFSReportsErrors() bool { return false }

// errNoFallocate marks a file system without fallocate(2).
var errNoFallocate = errors.New("fsutil: fallocate unsupported")

// fallocateKeepSize is Linux's fallocate(2); elsewhere nothing is reserved.
func fallocateKeepSize(*os.File, int64, int64) error { return errNoFallocate }

// StartWriteback is Linux's sync_file_range(2); elsewhere the kernel's
// flusher writes the pages when it will.
func StartWriteback(*os.File, int64, int64) error { return ErrNoWriteback }
