package fsutil

import (
	"errors"
	"os"
	"sync/atomic"
	"syscall"
)

// Block reservation ahead of an append-only file's end.
//
// A buffered write into blocks the file does not have yet makes ext4 (and
// other delayed-allocation file systems) reserve space, charge quota and
// record a delayed extent for every block the write touches, and
// writeback then allocates the blocks. Writes into blocks already
// allocated (fallocate(2)) skip that: on this project's machines 64 MiB
// files written in 1 MiB pwrites (WriteChunk) cost the writing thread
// 0.235 s/GB without and 0.203 with blocks reserved as below, and the
// whole machine, writeback and its fdatasync included, 0.446 against
// 0.362 (BenchmarkWriteReserved, medians of 4; in 256 KiB pwrites 0.42
// against 0.33 and 0.62 against 0.50), so the work is saved, not moved
// to the flusher threads (BENCHMARKS.md,
// "Block reservation"). FALLOC_FL_KEEP_SIZE leaves the file's size alone,
// so the file still ends where its data does, as recovery, readers and
// Kafka's tools expect; the blocks past the end show only in du, and
// truncating the file to its size (ReleaseReserved) hands them back.
//
// The reservation starts once a file holds ReserveFrom bytes, so a
// partition that is barely written reserves nothing, and runs at most
// ReserveMax ahead of the end, as much as the file already holds below
// that: a file written at full speed reserves 4 MiB at a time, a slow
// one little more than it has. 4 and 16 MiB steps cost the same here
// (bench/floor's reserve mode, alternating: 0.548 and 0.535 s/GB); the
// smaller bounds what an open segment holds past its end, and so what du
// shows beyond the data: at most 4 MiB, and no more than it holds, for
// each file open in log.segment.open.files.max's cache, released as the
// segments roll or close.
const (
	ReserveFrom = 1 << 20
	ReserveMax  = 4 << 20
)

// Reserver reserves blocks ahead of append-only files of one file system
// (fallocate(2), FALLOC_FL_KEEP_SIZE). Once the file system refuses (no
// fallocate support), it stops trying. Its zero value is ready to use.
type Reserver struct {
	off atomic.Bool
	// fallocate is the system call; tests replace it.
	fallocate func(f *os.File, off, n int64) error
}

// Reserve makes sure the n bytes about to be written at pos lie in blocks
// reserved for f, given that the blocks below reserved are (0: none known)
// and that the file is not meant to grow past limit (segment.bytes; an
// append larger than that is still covered). It returns the new reserved
// end. It is best effort: a refusal (no space, or no support) only costs
// the writes their speed, never their bytes, and is not retried below the
// end it aimed at. REQUIRES: the caller serializes writes to f.
func (r *Reserver) Reserve(f *os.File, pos, n, reserved, limit int64) int64 {
	end := pos + n
	if end <= reserved || pos < ReserveFrom || r.off.Load() {
		return reserved
	}
	ahead := min(ReserveMax, pos)
	to := max(end, min(pos+max(n, ahead), limit))
	from := max(pos, reserved)
	call := r.fallocate
	if call == nil {
		call = fallocateKeepSize
	}
	if err := call(f, from, to-from); errors.Is(err, errNoFallocate) {
		r.off.Store(true)
	}
	return to
}

// ReleaseReserved truncates f to size, the end of its data, which returns
// the blocks reserved past it to the file system. The bytes below size are
// untouched, so readers of f are not disturbed.
func ReleaseReserved(f *os.File, size int64) error {
	return f.Truncate(size)
}

// Off reports whether the file system refused fallocate(2), so nothing is
// reserved any more.
func (r *Reserver) Off() bool { return r.off.Load() }

// Allocated returns the size of the file at path and the bytes of disk
// blocks it holds (st_blocks), which exceed the size by what is reserved
// past the end. ok is false where the system does not count blocks.
func Allocated(path string) (size, blocks int64, ok bool, err error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, 0, false, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fi.Size(), 0, false, nil
	}
	return fi.Size(), st.Blocks * 512, true, nil
}
