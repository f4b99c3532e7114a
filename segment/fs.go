package segment

import (
	"io"
	"os"
	"syscall"

	"github.com/sluice/sluice/internal/fsutil"
)

// FS opens the .log files of segments: the seam through which tests inject
// I/O failures (an error-injecting wrapper, in the spirit of pebble's
// vfs/errorfs). OSFS, the default, is the operating system's file system.
//
// Only the .log files go through it. The indexes are memory-mapped by
// package mmapindex, and checkpoints are written to a temp file and
// renamed (writeFileAtomic); both use package os directly.
type FS interface {
	// OpenFile opens path for reading and writing, creating it (mode
	// 0644) when it does not exist. An error means no file was opened.
	OpenFile(path string) (File, error)
}

// File is a segment's handle on its .log file, shaped like the parts of
// *os.File a segment uses. Each method has *os.File's contract; the
// segment serializes WriteAt, Truncate and Sync (its log's appendMu and
// syncer), while ReadAt and Stat run concurrently with them.
type File interface {
	// ReadAt reads the batch headers and, in recovery, whole batches.
	io.ReaderAt
	// WriteAt writes appended batches at the segment's end. An error,
	// even with n == len(p), fails the log for good (see Log).
	io.WriterAt
	// Sync makes what was written durable (fsync(2)); an error fails
	// the log for good, as the page cache may have dropped the data.
	Sync() error
	// Truncate cuts the file (Log.Truncate, recovery, and taking back
	// a failed write).
	Truncate(size int64) error
	// Stat gives the size at open and the modification time that
	// retention falls back on.
	Stat() (os.FileInfo, error)
	// OS returns the operating-system file holding the same bytes: reads
	// hand out ranges of it (zerocopy.FileSlice) that the server sends
	// with sendfile(2), which needs a real descriptor. The segment owns
	// it: it closes it once no slice holds it (so a File has no Close;
	// a wrapper must not close it either). Bytes written through the
	// File must be visible through the OS file when WriteAt returns.
	OS() *os.File
}

// OSFS is the operating system's file system: its Files are *os.File.
var OSFS FS = osFS{}

type osFS struct{}

// osFile is an *os.File as a File.
type osFile struct{ *os.File }

func (f osFile) OS() *os.File { return f.File }

// OpenFile opens path with open(2), without the runtime's poller
// (fsutil.OpenRaw: a segment the open-file cache closed reopens its .log
// on its next use), and wraps the descriptor with os.NewFile.
func (osFS) OpenFile(path string) (File, error) {
	fd, err := fsutil.OpenRaw(path, syscall.O_CREAT)
	if err != nil {
		return nil, err
	}
	return osFile{os.NewFile(uintptr(fd), path)}, nil
}
