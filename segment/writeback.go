package segment

import (
	"errors"
	"os"
	"sync/atomic"

	"github.com/sluice/sluice/internal/fsutil"
	"github.com/sluice/sluice/zerocopy"
)

// Incremental writeback of the active segments.
//
// Left to itself, the kernel writes a file's dirty pages back when they
// are dirty_expire_centisecs (30 s) old or when the dirty pages of the
// whole machine pass dirty_background_ratio, and a segment's roll fsyncs
// everything it still holds (Log.roll, as Kafka flushes a rolled segment).
// At 96 MB/s over 100 partitions (the OMB shape at 87,000 records/s) that
// is gigabytes written in bursts, and the produce path slowed at each: a
// run with the roll's fsyncs off still had seconds of 140-370 ms publish
// p99 when the kernel's flusher ran (issue 33; what stalled the produce
// path at the rolls themselves is in flush.go, rollFlusher and
// fsyncUnflushed).
//
// So an append that leaves writebackChunk bytes of a segment not yet
// handed to the kernel queues that page-aligned range, and one goroutine of
// the store starts its writeback (fsutil.StartWriteback, sync_file_range(2)
// with SYNC_FILE_RANGE_WRITE) off the append path: the dirty bytes of a
// segment stay under a chunk or two, written as they arrive, and the
// fsync at the roll has almost nothing left to write. It makes nothing
// durable and moves no recovery point; RocksDB (bytes_per_sync) and
// Pebble (BytesPerSync, 512 KiB) do the same for their files.
const writebackChunk = 1 << 20

// writebackQueue is how many ranges may wait for the writeback goroutine;
// an append that finds it full leaves its range to the next append (or
// the roll's fsync).
const writebackQueue = 256

// pageSize is the granularity the ranges are cut at: a range ending inside
// a page would start writing a page the next append still fills.
const pageSize = 4096

type writebackRange struct {
	f      *zerocopy.File // a reference of the range's own, released after
	off, n int64
}

// writeback starts the kernel's writeback of the ranges appends queue
// (maybeStart) on one goroutine.
type writeback struct {
	reqs chan writebackRange
	stop chan struct{}
	done chan struct{}
	// off is set once the file system refused (fsutil.ErrNoWriteback):
	// nothing is queued from then on.
	off atomic.Bool
	// started counts the bytes handed to the kernel (tests).
	started atomic.Int64
	// start is the system call; tests replace it before the goroutine
	// runs.
	start func(f *os.File, off, n int64) error
}

func newWriteback() *writeback {
	w := &writeback{
		reqs:  make(chan writebackRange, writebackQueue),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
		start: fsutil.StartWriteback,
	}
	go w.run()
	return w
}

// maybeStart queues the writeback of [from, end) of f, cut down to a page
// boundary, once that holds writebackChunk bytes, and returns where the
// next range starts: the new end when it queued one, else from. f must be
// open (the caller holds the segment pinned). REQUIRES: the log's
// appendMu (from is the segment's, end its size after an append).
func (w *writeback) maybeStart(f *zerocopy.File, from, end int64) int64 {
	to := end &^ (pageSize - 1)
	if w == nil || to-from < writebackChunk || w.off.Load() {
		return from
	}
	f.Acquire()
	select {
	case w.reqs <- writebackRange{f: f, off: from, n: to - from}:
		return to
	default:
		f.Release()
		return from
	}
}

func (w *writeback) run() {
	defer close(w.done)
	for {
		select {
		case <-w.stop:
			w.drop()
			return
		default:
		}
		select {
		case r := <-w.reqs:
			w.do(r)
		case <-w.stop:
			w.drop()
			return
		}
	}
}

// drop gives back the references of the ranges still queued once the
// store closes: appends have stopped (the logs are closed), and their
// bytes are the closing store's to make durable.
func (w *writeback) drop() {
	for {
		select {
		case r := <-w.reqs:
			r.f.Release()
		default:
			return
		}
	}
}

func (w *writeback) do(r writebackRange) {
	defer r.f.Release()
	if w.off.Load() {
		return
	}
	// An error other than the refusal is the kernel's to report again:
	// writeback failures surface at the next fsync of the file, which
	// fails the log.
	if err := w.start(r.f.OS(), r.off, r.n); errors.Is(err, fsutil.ErrNoWriteback) {
		w.off.Store(true)
		return
	}
	w.started.Add(r.n)
}

// close stops the goroutine and drops what it had not started. REQUIRES:
// no append runs or will (the store's logs are closed).
func (w *writeback) close() {
	if w == nil {
		return
	}
	close(w.stop)
	<-w.done
}
