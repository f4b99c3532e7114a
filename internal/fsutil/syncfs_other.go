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
