// Package mmapindex holds the two sparse indexes of a Kafka log segment, kept
// in memory-mapped files exactly as Kafka lays them out:
//
//	.index (OffsetIndex), 8-byte entries, big-endian (part of the on-disk
//	format: do not change):
//	+-----------------------------+-----------------------------+
//	| relativeOffset int32 (4)    | position int32 (4)          |
//	+-----------------------------+-----------------------------+
//	relativeOffset = offset - segment base offset; position = byte position
//	of the batch in the segment's .log.
//
//	.timeindex (TimeIndex), 12-byte entries, big-endian:
//	+----------------------------------------+------------------------------+
//	| timestamp int64 (8)                    | relativeOffset int32 (4)     |
//	+----------------------------------------+------------------------------+
//
// An index file is preallocated to its maximum size while its segment is
// active, so appends are stores into the mapping, and trimmed to its real
// size when the segment rolls or closes. Preallocation is ftruncate, which
// leaves a sparse file (as Kafka's RandomAccessFile.setLength does on
// Linux), not fallocate: allocating 20 MiB of blocks per active segment for
// indexes that typically hold a few hundred KiB would cost disk and write
// time for nothing, and the zero-filled hole is what the open scan relies
// on.
//
// Reopening never trusts the file size: after a crash the file still has its
// preallocated length, its tail zero-filled. The entry count comes from a
// scan for the last entry that is not all zeros, and Check decides whether
// the entries are consistent enough to use; callers rebuild the index from
// the log when they are not. A real entry is never all zeros in an offset
// index (the writer never indexes position 0); in a time index only an entry
// (timestamp 0, relative offset 0) is, and losing it only makes a lookup
// start earlier.
//
// Concurrency: one writer (Append, TruncateTo, Resize, Trim, Close) and any
// number of concurrent Lookups. Lookup may run concurrently with Append (it
// sees the entries published before it loaded the count) but not with the
// other writer methods, which remap or cut the file; the caller (a segment)
// excludes them with its own lock.
package mmapindex

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/sluice/sluice/internal/fsutil"
)

// Errors. Classify with errors.Is.
var (
	// ErrFull: the preallocated file has no room for another entry; the
	// segment should roll.
	ErrFull = errors.New("mmapindex: index full")
	// ErrNotMonotonic: an appended entry is not above the last one.
	ErrNotMonotonic = errors.New("mmapindex: entry out of order")
	// ErrCorrupt: Check found entries that cannot be right.
	ErrCorrupt = errors.New("mmapindex: corrupt index")
	// ErrClosed: the index was closed.
	ErrClosed = errors.New("mmapindex: closed")
	// ErrFault: the kernel refused a store into the mapping with SIGBUS
	// (no disk block for a page of the sparse file; see storeMapped).
	ErrFault = errors.New("mmapindex: fault writing the mapped file")
)

// warmBytes is the size of the warm section searched first (see floor).
// Kafka's AbstractIndex uses 8192 bytes: small enough to stay in the page
// cache and the CPU cache on every architecture, large enough that a
// follower or a caught-up consumer (which look up offsets within the last
// few MiB of log) always lands in it.
const warmBytes = 8192

// file is what both index kinds share: the file's identity, its mapping
// and the count.
//
// It holds no descriptor: the file is opened to be mapped and closed at
// once (as Kafka's AbstractIndex does), so an open segment costs one
// descriptor, its .log, and two mappings. The few operations that need a
// descriptor (Resize, Trim, Close's trim) open the file by path again and
// act only if it is still the file that was mapped (same device and inode):
// a file renamed or replaced behind the index is not touched. Flush is
// msync(2) of the mapping.
//
// Invariant: entries n <= len(mm)/entrySize; bytes [n*entrySize, len(mm))
// are zero (TruncateTo zeroes what it cuts), so a crash leaves a tail that
// the open scan recognizes as the end.
type file struct {
	path      string
	dev, ino  uint64 // the mapped file's identity
	open      bool
	released  bool   // unmapped by Release, not trimmed yet
	mm        []byte // the mapping; len is a multiple of entrySize
	entrySize int
	n         atomic.Int64 // published entry count
}

func openFile(path string, entrySize, maxBytes int) (*file, error) {
	fd, err := fsutil.OpenRaw(path, unix.O_CREAT)
	if err != nil {
		return nil, fmt.Errorf("mmapindex: open: %w", err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("mmapindex: stat %s: %w", path, err)
	}
	x := &file{path: path, dev: st.Dev, ino: st.Ino, open: true, entrySize: entrySize}
	size := st.Size - st.Size%int64(entrySize)
	// Entries can only lie in the data the file had, before any hole:
	// the writer fills it from the start, and preallocation (here or
	// before a crash) extends it with a hole. SEEK_HOLE finds the end of
	// that data without touching the zero pages (on file systems without
	// holes it returns the file size).
	scan := size
	if hole, err := unix.Seek(fd, 0, unix.SEEK_HOLE); err == nil && hole < scan {
		scan = hole
	}
	if want := int64(roundDown(maxBytes, entrySize)); want > size {
		size = want
	}
	if err := x.mapFD(fd, size); err != nil {
		return nil, err
	}
	x.adviseRandom(scan)
	n := x.scanEntries(int(scan))
	x.n.Store(int64(n))
	x.zeroRange(fd, int64(n*entrySize), st.Size)
	return x, nil
}

// errReplaced: the path no longer names the file that was mapped.
var errReplaced = errors.New("mmapindex: file renamed or replaced since it was mapped")

// reopen opens the mapped file again by its path for an operation that
// needs a descriptor, and fails with errReplaced (or a not-exist error)
// when the path now names another file, or none.
func (x *file) reopen() (int, error) {
	fd, err := fsutil.OpenRaw(x.path, 0)
	if err != nil {
		return -1, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("mmapindex: stat %s: %w", x.path, err)
	}
	if st.Dev != x.dev || st.Ino != x.ino {
		unix.Close(fd)
		return -1, fmt.Errorf("%w: %s", errReplaced, x.path)
	}
	return fd, nil
}

// zeroRange zeroes bytes [from, to) of the file, restoring the invariant
// that everything after the entries is zero: a crash can leave pages of
// old entries after a page that never reached the disk (a hole, which the
// scan stops at). Whole pages are punched out, so the file stays sparse;
// where hole punching is not supported, zeros are written instead.
func (x *file) zeroRange(fd int, from, to int64) {
	to = min(to, int64(len(x.mm)))
	if from >= to {
		return
	}
	page := int64(os.Getpagesize())
	mid := min((from+page-1)/page*page, to)
	clear(x.mm[from:mid])
	if mid < to {
		if err := unix.Fallocate(fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, mid, to-mid); err != nil {
			// No hole punching here: write zeros, which may need
			// blocks the file system no longer has (storeMapped);
			// then the pages stay as the crash left them, past the
			// entries this open counted, and the next open tries
			// again.
			_ = storeMapped(func() { clear(x.mm[mid:to]) })
		}
	}
}

func roundDown(v, m int) int {
	if v <= 0 {
		return 0
	}
	return v - v%m
}

// mapSize unmaps, sets the file length to size and maps it again.
func (x *file) mapSize(size int64) error {
	fd, err := x.reopen()
	if err != nil {
		return fmt.Errorf("mmapindex: resize %s: %w", x.path, err)
	}
	defer unix.Close(fd)
	return x.mapFD(fd, size)
}

// mapFD unmaps, sets the length of the file open as fd to size and maps it
// again.
func (x *file) mapFD(fd int, size int64) error {
	if err := x.unmap(); err != nil {
		return err
	}
	if size > 1<<31-1 {
		return fmt.Errorf("mmapindex: %s: size %d too large", x.path, size)
	}
	if err := unix.Ftruncate(fd, size); err != nil {
		return fmt.Errorf("mmapindex: ftruncate %s to %d: %w", x.path, size, err)
	}
	if size == 0 {
		return nil
	}
	mm, err := unix.Mmap(fd, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("mmapindex: mmap %s (%d bytes): %w", x.path, size, err)
	}
	x.mm = mm
	return nil
}

// adviseRandom marks the mapping from the page holding byte from to its
// end MADV_RANDOM: the preallocated room past the entries, a hole in the
// file. Without it the first touch of a page there (the next entry, the
// open's scan, the closing time entry) reads ahead a whole window of the
// hole into large folios and zeroes them: 2.1-2.2 ms per first write on
// this machine's kernel (6.18, ext4) against ~10 us with the advice,
// measured with 300 fresh 10 MiB sparse files each way. That made a
// clean stop of 1,000 open segments spend 1.8 s CPU in finishIndexes.
// The entries before from keep the default readahead (a sanity check
// reads them in order). The advice is a hint: an error is ignored.
func (x *file) adviseRandom(from int64) {
	page := int64(os.Getpagesize())
	from = from / page * page
	if from < int64(len(x.mm)) {
		_ = unix.Madvise(x.mm[from:], unix.MADV_RANDOM)
	}
}

func (x *file) unmap() error {
	if x.mm == nil {
		return nil
	}
	err := unix.Munmap(x.mm)
	x.mm = nil
	if err != nil {
		return fmt.Errorf("mmapindex: munmap %s: %w", x.path, err)
	}
	return nil
}

// scanEntries counts entries up to the last one that is not all zeros in
// the first limit bytes, scanning backwards (a trimmed file ends with a real
// entry, so the common case reads one entry).
func (x *file) scanEntries(limit int) int {
	last := (min(limit, len(x.mm)) + x.entrySize - 1) / x.entrySize
	last = min(last, len(x.mm)/x.entrySize)
	for i := last - 1; i >= 0; i-- {
		e := x.mm[i*x.entrySize : (i+1)*x.entrySize]
		for _, c := range e {
			if c != 0 {
				return i + 1
			}
		}
	}
	return 0
}

// Entries is the number of entries.
func (x *file) Entries() int { return int(x.n.Load()) }

// Full reports whether there is no room for another entry.
func (x *file) Full() bool { return int(x.n.Load()) >= len(x.mm)/x.entrySize }

func (x *file) key(i, field int, wide bool) int64 {
	p := i*x.entrySize + field
	if wide {
		return int64(binary.BigEndian.Uint64(x.mm[p : p+8]))
	}
	return int64(int32(binary.BigEndian.Uint32(x.mm[p : p+4])))
}

// floor returns the greatest i < n whose key (at byte field of the entry,
// int64 when wide, else int32) is <= target, or -1 if there is none. Keys
// must be non-decreasing.
//
// Like Kafka's AbstractIndex.indexSlotRangeFor, it first checks whether the
// target falls in the warm section, the last warmBytes of entries, and
// searches only there if so. Most lookups are for recent offsets (appends,
// followers, tailing consumers); a plain binary search over a large index
// touches pages spread across the whole file on each lookup (about log2(n)
// pages: 17 for a full 10 MiB index), and pages not touched for a while may
// have been evicted, turning a lookup into page faults. The warm section
// keeps recent lookups in two or three pages that stay hot.
func (x *file) floor(n, field int, wide bool, target int64) int {
	if wide {
		return floor64(x.mm, x.entrySize, field, n, target)
	}
	return floor32(x.mm, x.entrySize, field, n, target)
}

// floor32 is floor for int32 keys.
func floor32(mm []byte, es, field, n int, target int64) int {
	key := func(i int) int64 {
		p := i*es + field
		return int64(int32(binary.BigEndian.Uint32(mm[p : p+4 : p+4])))
	}
	if n == 0 || n*es > len(mm) || key(0) > target {
		return -1
	}
	lo, hi := 0, n-1
	if warm := warmBytes / es; n > warm {
		first := n - warm
		if key(first) <= target {
			lo = first
		} else {
			hi = first - 1
		}
	}
	// Invariant: key(lo) <= target, and the answer lies in [lo, hi].
	for lo < hi {
		mid := int(uint(lo+hi+1) >> 1)
		if key(mid) <= target {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// floor64 is floor for int64 keys.
func floor64(mm []byte, es, field, n int, target int64) int {
	key := func(i int) int64 {
		p := i*es + field
		return int64(binary.BigEndian.Uint64(mm[p : p+8 : p+8]))
	}
	if n == 0 || n*es > len(mm) || key(0) > target {
		return -1
	}
	lo, hi := 0, n-1
	if warm := warmBytes / es; n > warm {
		first := n - warm
		if key(first) <= target {
			lo = first
		} else {
			hi = first - 1
		}
	}
	for lo < hi {
		mid := int(uint(lo+hi+1) >> 1)
		if key(mid) <= target {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// put writes entry i (already encoded in e) and publishes it.
func (x *file) put(e []byte) error {
	n := int(x.n.Load())
	if !x.open {
		return ErrClosed
	}
	if n >= len(x.mm)/x.entrySize {
		return fmt.Errorf("%w: %s has %d entries", ErrFull, x.path, n)
	}
	if err := storeMapped(func() { copy(x.mm[n*x.entrySize:], e) }); err != nil {
		return fmt.Errorf("mmapindex: write %s entry %d: %w", x.path, n, err)
	}
	x.n.Store(int64(n + 1))
	return nil
}

// storeMapped runs store, which writes into the mapping, turning a memory
// fault into ErrFault. The index files are sparse (sized by ftruncate, as
// Kafka's are), so a page gets its disk block when it is first written, and
// when the file system has none left the kernel answers the store with
// SIGBUS; so does a store past the end of a file something else truncated.
// Unhandled, that killed the broker the moment its disk filled (the log
// write beside it fails with ENOSPC, which it handles: the log is failed and
// its partitions go offline). An index entry is a hint: the caller drops it,
// the log stays consistent and recovery rebuilds the index.
func storeMapped(store func()) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if f, ok := r.(interface{ Addr() uintptr }); ok {
				err = fmt.Errorf("%w at %#x", ErrFault, f.Addr())
				return
			}
			panic(r)
		}
	}()
	store()
	return nil
}

// truncateEntries keeps the first n entries and zeroes the rest.
func (x *file) truncateEntries(n int) {
	old := int(x.n.Load())
	if n >= old {
		return
	}
	x.n.Store(int64(n))
	clear(x.mm[n*x.entrySize : old*x.entrySize])
}

// Resize sets the file's room to maxBytes (rounded down to whole entries,
// never below the entries it holds) and remaps it: a segment that becomes
// active again (after Truncate) or is rebuilt grows its index back.
func (x *file) Resize(maxBytes int) error {
	if !x.open {
		return ErrClosed
	}
	size := int64(roundDown(maxBytes, x.entrySize))
	if min := x.n.Load() * int64(x.entrySize); size < min {
		size = min
	}
	if err := x.mapSize(size); err != nil {
		return err
	}
	x.adviseRandom(x.n.Load() * int64(x.entrySize))
	return nil
}

// Trim shrinks the file to the entries it holds (a rolled or closing
// segment), so that a reopen finds exactly them.
func (x *file) Trim() error {
	if !x.open {
		return ErrClosed
	}
	if int64(len(x.mm)) == x.n.Load()*int64(x.entrySize) {
		return nil
	}
	return x.mapSize(x.n.Load() * int64(x.entrySize))
}

// Flush writes the mapped entries to disk: msync(MS_SYNC) of the mapping,
// which on Linux syncs the file's data and the metadata needed to read it
// back, its size included (fdatasync). A file mapped at size 0 has no
// mapping; then the file is opened again and fsynced.
func (x *file) Flush() error {
	if !x.open {
		return ErrClosed
	}
	if len(x.mm) > 0 {
		if err := unix.Msync(x.mm, unix.MS_SYNC); err != nil {
			return fmt.Errorf("mmapindex: msync %s: %w", x.path, err)
		}
		return nil
	}
	fd, err := x.reopen()
	if err != nil {
		return fmt.Errorf("mmapindex: fsync %s: %w", x.path, err)
	}
	defer unix.Close(fd)
	if err := unix.Fsync(fd); err != nil {
		return fmt.Errorf("mmapindex: fsync %s: %w", x.path, err)
	}
	return nil
}

// Close unmaps the file and trims it to its entries. Closing an index
// that Release unmapped trims the file (unless an open of the same file
// since, which maps it again, made that its business: see Forget).
func (x *file) Close() error {
	want := x.n.Load() * int64(x.entrySize)
	if x.released {
		x.released = false
		return x.truncate(want)
	}
	if !x.open {
		return nil
	}
	x.open = false
	mapped := int64(len(x.mm))
	err := x.unmap()
	if mapped != want {
		if terr := x.truncate(want); err == nil {
			err = terr
		}
	}
	return err
}

// Release unmaps the file without trimming it: an active segment whose
// files are closed for a while (its segment left the open-file cache) and
// will be mapped again at the same size. The file is left as a crash
// leaves it, preallocated with a zero tail, which a reopen scans past; a
// later Close trims it, if nothing opened it again before (Forget).
func (x *file) Release() error {
	if !x.open {
		return nil
	}
	x.open, x.released = false, true
	return x.unmap()
}

// Forget drops a released index without trimming its file: the file was
// opened again (a new index owns it now) or removed.
func (x *file) Forget() { x.released = false }

// truncate sets the length of the mapped file, unmapped, to size. A file
// renamed or removed since it was mapped is left alone: it is not this
// index's any more.
func (x *file) truncate(size int64) error {
	fd, err := x.reopen()
	if errors.Is(err, errReplaced) || errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("mmapindex: trim %s: %w", x.path, err)
	}
	defer unix.Close(fd)
	if err := unix.Ftruncate(fd, size); err != nil {
		return fmt.Errorf("mmapindex: ftruncate %s to %d: %w", x.path, size, err)
	}
	return nil
}

// Remove unmaps and deletes the file.
func (x *file) Remove() error {
	var err error
	if x.open {
		err = x.unmap()
		x.open = false
	}
	x.released = false
	if rerr := os.Remove(x.path); rerr != nil && !os.IsNotExist(rerr) && err == nil {
		err = fmt.Errorf("mmapindex: remove: %w", rerr)
	}
	return err
}
