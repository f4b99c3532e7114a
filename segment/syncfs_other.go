//go:build !linux

package segment

import (
	"errors"
	"os"
)

// syncFS is Linux's syncfs(2); elsewhere a Store fsyncs each log at Close.
func syncFS(*os.File) error { return errors.New("segment: syncfs is Linux only") }

// syncFSReportsErrors is false: there is no syncFS to use.
func syncFSReportsErrors() bool { return false }
