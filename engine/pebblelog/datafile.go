package pebblelog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"golang.org/x/sys/unix"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/internal/clockring"
	"github.com/sluice/sluice/internal/fsutil"
	"github.com/sluice/sluice/zerocopy"
)

// dataDirName is the directory under Options.Dir holding the data files.
// Part of the on-disk format: do not change.
const dataDirName = "records"

// dataFilePath returns the path of log n's data file under dir.
func dataFilePath(dir string, n uint64) string {
	return filepath.Join(dir, strconv.FormatUint(n, 10)+".data")
}

// parseDataFileName returns the log id of a data file name.
func parseDataFileName(name string) (uint64, bool) {
	const ext = ".data"
	if len(name) <= len(ext) || name[len(name)-len(ext):] != ext {
		return 0, false
	}
	n, err := strconv.ParseUint(name[:len(name)-len(ext)], 10, 64)
	return n, err == nil
}

// dataFile is the data file of one log: the bytes of its batches whose
// 0x06 values are pointers. One dataFile exists per log id in a Store
// (Store.files) from the log's first load or append with data until
// DeleteLog, shared by every Log opened on that id.
//
// Positions. pos is the append position: the next batch goes there, and
// every byte at or after it is not indexed. It only grows (format.go), is
// written by the owning Log holding writeMu, and read atomically by
// flushes. flushed is a position below which every byte was fdatasync'd.
//
// Descriptors. The file is opened on demand and closed by the Store's
// fileCache (CLOCK) when more than its bound are open. A user takes a
// reference with acquire and drops it with Release on the zerocopy.File; a
// read hands its reference on inside a zerocopy.Slice, so an evicted
// descriptor stays open until the last slice of it is released.
//
// Punching. Bytes no longer indexed are punched out (fallocate
// PUNCH_HOLE|KEEP_SIZE) only while no reference but the cache's is held on
// any descriptor of the file: a Read takes its reference before it opens its
// Pebble iterator, and a trim commits its index change before it punches,
// so a reader either sees the new index or holds a reference that defers
// the punch. Deferred punches are retried by the store's punch worker
// (and by an eviction, while the file is open); a crash forgets those not
// stored by a Close before it (the space stays allocated, nothing indexed
// is lost).
//
// And only once the range has been unindexed for the store's delete delay
// (log.segment.delete.delay.ms, Kafka's 60 s before it deletes a segment
// file). A read releases its reference when sendfile(2) returns, but the
// socket still holds the file's pages until the peer has read them, and
// a punch that cuts through a large folio the socket holds, which then
// cannot be split, zeroes the punched part in place (pageAlign): the
// delay gives the consumer that long to take the bytes, as Kafka gives
// readers of a deleted segment. The store's punch worker (punchLoop)
// punches what comes due, appends never wait for it. Close punches what is
// due and stores what is not under metaPunch; the log's next load queues
// it again, to be punched a delay later (Kafka likewise finishes deleting
// its .deleted files at the next start).
type dataFile struct {
	n    uint64
	path string
	c    *fileCache

	pos      atomic.Int64 // append position; written holding the owning Log's writeMu
	flushed  atomic.Int64 // bytes known durable
	size     atomic.Int64 // bytes the file is known to hold: reads past it are corrupt
	dirty    atomic.Bool  // written since the last fdatasync
	used     atomic.Bool  // CLOCK reference bit
	pending  atomic.Bool  // punches wait: len(punches) > 0
	created  atomic.Bool  // created since the directory was last synced
	flushing atomic.Bool  // a background flush (Log.flushRolled) runs
	msgs     int64        // records appended since the last flush; REQUIRES: owning Log's writeMu
	// reserved is where the blocks reserved past the file's end end
	// (fsutil.Reserver; 0: none known). The writer raises it; closeLocked
	// hands the blocks back when nobody but the cache holds the file.
	reserved atomic.Int64
	// syncErr is the first failed sync of the file, sticky: see fail.
	syncErr atomic.Pointer[error]

	mu      sync.Mutex
	zf      *zerocopy.File   // the cache's reference, nil when closed
	f       *os.File         // zf's file
	old     []*zerocopy.File // evicted descriptors a reader may still hold
	punches []punchRange     // to punch once due and no reader holds the file
	// retryAt is when punches may next be tried (UnixNano): the first
	// range's due, or a punchRetry later when readers held the file.
	retryAt atomic.Int64
	// punchKey: metaPunch may hold ranges for this log (loaded, or
	// written by a Close); guarded by mu.
	punchKey bool
	gone     bool // deleted: never opened again
	slot     int  // index in c.ring, -1 when not there (clockring.Entry)
}

// punchRange is [lo, hi) of a data file, to be punched at due or later.
type punchRange struct {
	lo, hi int64
	due    time.Time
}

// punchRetry is how soon a punch that waited for readers is tried again,
// and how often the punch worker looks for what is due. Ranges queued
// within it of each other may merge into one.
const punchRetry = time.Second

// errGone is returned by acquire on a deleted data file.
var errGone = errors.New("pebblelog: data file deleted")

// acquire returns the open file with a reference the caller must Release,
// opening it (and creating it when create is set) if the cache closed it.
func (d *dataFile) acquire(create bool) (*zerocopy.File, *os.File, error) {
	d.mu.Lock()
	if d.gone {
		d.mu.Unlock()
		return nil, nil, errGone
	}
	opened := false
	if d.zf == nil {
		f, err := openFile(d.path, syscall.O_RDWR)
		if create && errors.Is(err, os.ErrNotExist) {
			// The directory entry is made durable by the next sync.
			f, err = openFile(d.path, syscall.O_RDWR|syscall.O_CREAT)
			if err == nil {
				d.created.Store(true)
			}
		}
		if err != nil {
			d.mu.Unlock()
			return nil, nil, fmt.Errorf("pebblelog: open data file: %w", err)
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			d.mu.Unlock()
			return nil, nil, fmt.Errorf("pebblelog: stat data file: %w", err)
		}
		d.grow(st.Size())
		d.zf, d.f, opened = zerocopy.NewFile(f), f, true
	}
	zf, f := d.zf, d.f
	zf.Acquire()
	d.used.Store(true)
	d.mu.Unlock()
	if opened {
		d.c.add(d)
	}
	return zf, f, nil
}

// punch queues [pos, pos+n) to be punched and punches what is queued if no
// reader holds the file.
func (d *dataFile) punch(pos, n int64) {
	if n <= 0 {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.gone {
		return
	}
	d.queueLocked(pos, n, time.Now().Add(d.c.delay))
	d.punchLocked()
}

// queueLocked queues [pos, pos+n) to be punched at due. A range that
// continues the last one merges into it when their dues are within
// punchRetry (the merged range waits for the later); otherwise a
// log trimmed more often than the delay would push its first bytes' due
// forward for ever. REQUIRES: d.mu held; due not before any queued due.
func (d *dataFile) queueLocked(pos, n int64, due time.Time) {
	if k := len(d.punches); k > 0 && d.punches[k-1].hi == pos && due.Sub(d.punches[k-1].due) < punchRetry {
		d.punches[k-1].hi, d.punches[k-1].due = pos+n, due
	} else {
		d.punches = append(d.punches, punchRange{pos, pos + n, due})
	}
	d.pending.Store(true)
}

// retryPunches punches what earlier punch calls deferred and is due, if no
// reader holds the file now.
func (d *dataFile) retryPunches() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.punchLocked()
}

// savePunches punches what is due and puts what is not under metaPunch in
// b (Store.closeFiles), or deletes a metaPunch left from before when
// nothing waits: the next load punches it a delay later.
func (d *dataFile) savePunches(b *pebble.Batch) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.punchLocked()
	if len(d.punches) == 0 {
		if d.punchKey {
			_ = b.Delete(metaKey(d.n, metaPunch), nil)
			d.punchKey = false
		}
		return
	}
	v := make([]byte, 0, 16*len(d.punches))
	for _, r := range d.punches {
		v = binary.BigEndian.AppendUint64(v, uint64(r.lo))
		v = binary.BigEndian.AppendUint64(v, uint64(r.hi))
	}
	_ = b.Set(metaKey(d.n, metaPunch), v, nil)
	d.punchKey = true
}

// loadPunches queues the ranges a Close stored under metaPunch (v), to be
// punched a delay from now. Only ranges below the append position pos,
// which no index entry can name again, are taken; a malformed value is
// reported and ignored (the space stays allocated, nothing is lost), and
// the next Close replaces it.
func (d *dataFile) loadPunches(v []byte, pos int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.punchKey = true
	if len(v)%16 != 0 {
		d.c.log.Warn("pebblelog: ignoring malformed ranges to punch", "file", d.path, "bytes", len(v))
		return
	}
	due := time.Now().Add(d.c.delay)
	for ; len(v) > 0; v = v[16:] {
		lo, hi := int64(binary.BigEndian.Uint64(v)), int64(binary.BigEndian.Uint64(v[8:]))
		if lo < 0 || lo >= hi || hi > pos {
			d.c.log.Warn("pebblelog: ignoring an invalid range to punch (empty, inverted or past the data file's append position)", "file", d.path, "lo", lo, "hi", hi, "pos", pos)
			continue
		}
		d.queueLocked(lo, hi-lo, due)
	}
	d.punchLocked()
}

// punchDue reports whether the queued punches may be tried at now (UnixNano).
func (d *dataFile) punchDue(now int64) bool {
	return d.pending.Load() && now >= d.retryAt.Load()
}

// punchLocked punches the queued ranges that are due unless a reference
// other than the cache's is held on any descriptor of the file, and sets
// when to try again (retryAt) and whether the punch worker should look at
// the file (fileCache.waiting). REQUIRES: d.mu held.
func (d *dataFile) punchLocked() {
	if len(d.punches) == 0 || d.gone {
		return
	}
	now := time.Now()
	// The ranges due: a prefix, since dues only grow.
	n := sort.Search(len(d.punches), func(i int) bool { return d.punches[i].due.After(now) })
	d.pruneLocked()
	if len(d.old) > 0 || (d.zf != nil && d.zf.Refs() > 1) {
		n = 0
	}
	defer func() {
		if len(d.punches) == 0 {
			d.pending.Store(false)
			d.c.unwait(d)
			return
		}
		retry := d.punches[0].due
		if !retry.After(now) { // readers held it past the first range's due
			retry = now.Add(punchRetry)
		}
		d.retryAt.Store(retry.UnixNano())
		d.pending.Store(true)
		d.c.wait(d)
	}()
	if n == 0 {
		return
	}
	f := d.f
	if f == nil {
		var err error
		if f, err = openFile(d.path, syscall.O_RDWR); err != nil {
			// Tried again a punchRetry later (say, out of descriptors);
			// a file that is not there has nothing to punch.
			d.c.log.Warn("pebblelog: cannot open data file to punch", "file", d.path, "err", err)
			if errors.Is(err, os.ErrNotExist) {
				d.punches = nil
			}
			return
		}
		defer f.Close()
	}
	due := d.punches[:n]
	if d.punches = d.punches[n:]; len(d.punches) == 0 {
		d.punches = nil
	}
	for _, r := range due {
		lo, hi := pageAlign(r.lo, r.hi)
		if lo >= hi {
			continue
		}
		err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, lo, hi-lo)
		if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOTSUP) {
			if d.c.noPunch.CompareAndSwap(false, true) {
				d.c.log.Warn("pebblelog: the file system cannot punch holes: space of deleted records is reclaimed only when their log is deleted", "file", d.path, "err", err)
			}
			break
		}
		if err != nil {
			d.c.log.Warn("pebblelog: punch hole in data file", "file", d.path, "pos", r.lo, "bytes", r.hi-r.lo, "err", err)
		}
	}
}

// pageAlign shrinks [lo, hi) to the whole pages it covers. Only whole
// pages may be punched: a hole punched through part of a page zeroes that
// part of the cached page in place, and a page sendfile(2) handed to a
// socket stays referenced by it after sendfile returns (and the reader's
// reference on the file is released) until TCP has sent it, so the zeroes
// would reach a consumer that read the batches before the index changed.
// Whole pages are dropped from the page cache instead, the socket keeping
// its copy intact. The at most two partial pages per range stay allocated.
// A large folio cut through by a punch is split or, failing that, zeroed
// in place over the punched pages: those pages hold only unindexed bytes,
// but a sendfile still in flight could have taken them; the e2e test
// (TestCompactionPerBackend/pebble, 1 run in 15-40 failed before) passes
// 75 runs in a row with this. The delete delay (punchRange.due) closes
// what is left: a socket holds a page only until its peer reads it, and a
// consumer that has not read a response for that long has timed it out.
func pageAlign(lo, hi int64) (int64, int64) {
	ps := int64(pageSize)
	return (lo + ps - 1) / ps * ps, hi / ps * ps
}

// pageSize is the unit punches are aligned to (see pageAlign).
var pageSize = max(os.Getpagesize(), 4096)

// fdatasync is unix.Fdatasync of f; tests replace it to inject failures.
var fdatasync = func(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }

// failure returns the error of the file's first failed sync, nil if none.
func (d *dataFile) failure() error {
	if p := d.syncErr.Load(); p != nil {
		return *p
	}
	return nil
}

// fail records a failed sync of the file, for good. After a failed
// fdatasync (or syncfs) the kernel may have dropped the dirty pages and
// cleared the error, so a retry would return 0 over lost bytes (the
// "fsyncgate" of PostgreSQL 2018): the file is never synced again, its
// flushed position never advances, and its log refuses appends
// (engine.ErrStorage), as a segment log does (segment/flush.go). Recovery
// at the next Open verifies what was written past the flushed position.
func (d *dataFile) fail(err error) {
	d.syncErr.CompareAndSwap(nil, &err)
}

// beginSync starts a sync of the file by other means (syncfs): it returns
// the position that sync will make durable, for endSync; ok is false when
// the file is not dirty or failed. A failed sync calls d.fail.
func (d *dataFile) beginSync() (p int64, ok bool) {
	if d.failure() != nil || !d.dirty.Swap(false) {
		return 0, false
	}
	return d.pos.Load(), true // every byte below was written before this load
}

// endSync records that a sync begun by beginSync succeeded.
func (d *dataFile) endSync(p int64) {
	d.created.Store(false)
	raise(&d.flushed, p)
}

// sync fdatasyncs the file if it was written since the last sync, and
// returns the position below which every byte is now durable. A failed
// sync fails the file for good (see fail): this and every later call
// return that error.
func (d *dataFile) sync() (int64, error) {
	if err := d.failure(); err != nil {
		return 0, err
	}
	if !d.dirty.Swap(false) {
		return d.flushed.Load(), nil
	}
	p := d.pos.Load() // every byte below was written before this load
	zf, f, err := d.acquire(false)
	if errors.Is(err, errGone) {
		return p, nil
	}
	if err != nil {
		d.dirty.Store(true)
		return 0, err
	}
	defer zf.Release()
	if err := fdatasync(f); err != nil {
		err = fmt.Errorf("pebblelog: fdatasync %s: %w", d.path, err)
		d.fail(err)
		return 0, err
	}
	if d.created.Swap(false) {
		if err := syncDir(filepath.Dir(d.path)); err != nil {
			d.fail(err)
			return 0, err
		}
	}
	return raise(&d.flushed, p), nil
}

// pruneLocked forgets the evicted descriptors no reader holds any more.
// REQUIRES: d.mu held.
func (d *dataFile) pruneLocked() {
	live := d.old[:0]
	for _, zf := range d.old {
		if zf.Refs() > 0 {
			live = append(live, zf)
		}
	}
	clear(d.old[len(live):])
	d.old = live
}

// closeLocked drops the cache's reference, keeping the descriptor in old
// while a reader holds it. REQUIRES: d.mu held; d not in the cache's ring.
func (d *dataFile) closeLocked() {
	if d.zf == nil {
		return
	}
	d.punchLocked()
	d.pruneLocked()
	d.releaseReservedLocked()
	if d.zf.Refs() > 1 {
		d.old = append(d.old, d.zf)
	}
	if err := d.zf.Release(); err != nil {
		d.c.log.Warn("pebblelog: close data file", "file", d.path, "err", err)
	}
	d.zf, d.f = nil, nil
}

// releaseReservedLocked truncates the file to its size, handing back the
// blocks reserved past its end, when nobody but the cache holds any of its
// descriptors: a writer holds one for as long as it writes, so no write is
// in flight, and none starts before d.mu is released (acquire). The bytes
// below the size are untouched. Otherwise the blocks stay reserved until a
// later close. REQUIRES: d.mu held, d.zf open, pruneLocked just run.
func (d *dataFile) releaseReservedLocked() {
	if d.reserved.Load() == 0 || len(d.old) > 0 || d.zf.Refs() > 1 {
		return
	}
	if err := fsutil.ReleaseReserved(d.f, d.size.Load()); err != nil {
		d.c.log.Warn("pebblelog: releasing blocks reserved past the data file's end", "file", d.path, "err", err)
	}
	d.reserved.Store(0)
}

// remove deletes the file: it is closed (readers holding a slice keep
// reading the unlinked file) and unlinked, and never opened again.
func (d *dataFile) remove() error {
	d.c.remove(d)
	d.mu.Lock()
	d.gone = true
	d.punches = nil
	d.pending.Store(false)
	d.c.unwait(d)
	if d.zf != nil {
		d.zf.Release()
		d.zf, d.f = nil, nil
	}
	d.old = nil
	d.mu.Unlock()
	if err := os.Remove(d.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("pebblelog: remove data file: %w", err)
	}
	return nil
}

// fileCache bounds the open data files of a Store. Replacement is CLOCK
// (internal/clockring, as segment's openCache): a hit sets the file's used
// bit without a global lock; the sweep clears set bits and closes the first
// file whose bit is clear. A file held by a reader is closed all the same:
// its descriptor lives on in the reader's slice, so the bound may be
// exceeded by the files of reads in flight.
//
// Locking: the ring's lock guards every file's slot; a file's mu is never
// taken while holding it.
type fileCache struct {
	ring *clockring.Ring[*dataFile]

	log     *slog.Logger
	noPunch atomic.Bool // the file system refused a punch (logged once)
	// delay is how long an unindexed range waits before it is punched
	// (engine.Options.DeleteDelay).
	delay time.Duration
	// waiting holds the files with punches queued, for the punch worker
	// (Store.punchLoop). Lock order: a file's mu before waitMu.
	waitMu  sync.Mutex
	waiting map[*dataFile]struct{}
	// reserve reserves blocks ahead of the data files' ends as they are
	// appended to (dataFile.write).
	reserve fsutil.Reserver
}

func newFileCache(max int, log *slog.Logger) *fileCache {
	if max <= 0 {
		max = engine.DefaultOpenFilesMax
	}
	return &fileCache{ring: clockring.New[*dataFile](max), log: log, waiting: map[*dataFile]struct{}{}}
}

// wait and unwait add d to and take it from the files the punch worker
// looks at.
func (c *fileCache) wait(d *dataFile) {
	c.waitMu.Lock()
	c.waiting[d] = struct{}{}
	c.waitMu.Unlock()
}

func (c *fileCache) unwait(d *dataFile) {
	c.waitMu.Lock()
	delete(c.waiting, d)
	c.waitMu.Unlock()
}

// due returns the waiting files whose punches may be tried at now.
func (c *fileCache) due(now time.Time) []*dataFile {
	c.waitMu.Lock()
	defer c.waitMu.Unlock()
	var out []*dataFile
	for d := range c.waiting {
		if d.punchDue(now.UnixNano()) {
			out = append(out, d)
		}
	}
	return out
}

// ClockSlot implements clockring.Entry.
func (d *dataFile) ClockSlot() *int { return &d.slot }

// ClockSkip implements clockring.Entry: used since the sweep last looked.
func (d *dataFile) ClockSkip() bool { return d.used.Swap(false) }

// open returns how many data files are open (in the ring) now.
func (c *fileCache) open() int { return c.ring.Len() }

// add puts d, just opened, in the ring and evicts while over the bound.
func (c *fileCache) add(d *dataFile) {
	if c.ring.Add(d) {
		c.evict()
	}
}

// remove takes d out of the ring, if it is there.
func (c *fileCache) remove(d *dataFile) { c.ring.Remove(d) }

// evict closes files, least recently used first, until within the bound.
func (c *fileCache) evict() {
	for {
		v, ok := c.ring.Victim()
		if !ok {
			return
		}
		v.mu.Lock()
		v.closeLocked()
		v.mu.Unlock()
	}
}

// closeAll closes every file (Store.Close), punching what is due if it can.
func (c *fileCache) closeAll() {
	for _, d := range c.ring.TakeAll() {
		d.mu.Lock()
		d.closeLocked()
		d.mu.Unlock()
	}
}

// write writes b at pos, the append position, and advances the append
// position past it. REQUIRES: the owning Log's writeMu held.
func (d *dataFile) write(b []byte, pos int64) error {
	zf, f, err := d.acquire(true)
	if err != nil {
		return err
	}
	defer zf.Release()
	d.reserved.Store(d.c.reserve.Reserve(f, pos, int64(len(b)), d.reserved.Load(), math.MaxInt64))
	if _, err := fsutil.WriteAt(f, b, pos); err != nil {
		return fmt.Errorf("pebblelog: write %s at %d: %w", d.path, pos, err)
	}
	end := pos + int64(len(b))
	d.grow(end)
	d.pos.Store(end)
	d.dirty.Store(true)
	return nil
}

// grow raises the known size of the file to n.
func (d *dataFile) grow(n int64) { raise(&d.size, n) }

// raise sets a (an *atomic.Int64 or *atomic.Uint64) to v if v is larger,
// and returns what a holds then.
func raise[T int64 | uint64](a interface {
	Load() T
	CompareAndSwap(old, new T) bool
}, v T) T {
	for {
		old := a.Load()
		if old >= v || a.CompareAndSwap(old, v) {
			return max(old, v)
		}
	}
}

// syncDir fsyncs a directory, making the entries created in it durable.
func syncDir(dir string) error {
	if err := fsutil.SyncDir(dir); err != nil {
		return fmt.Errorf("pebblelog: fsync %s: %w", dir, err)
	}
	return nil
}

// openFile opens path with open(2) (mode 0644 when flag creates it) and
// wraps the descriptor with os.NewFile: os.OpenFile also tries to register
// a regular file with the runtime's poller, five system calls that never
// succeed, and with more active partitions than the open data files
// allowed most appends and reads reopen one (segment/fs.go does the same).
func openFile(path string, flag int) (*os.File, error) {
	for {
		fd, err := syscall.Open(path, flag|syscall.O_CLOEXEC, 0o644)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: path, Err: err}
		}
		return os.NewFile(uintptr(fd), path), nil
	}
}
