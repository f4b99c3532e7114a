package zerocopy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"syscall"
)

// ErrShortFile is returned by Flush when a file holds fewer bytes than a
// Slice of it promised (the file was truncated under the slice). The bytes
// already on the wire then disagree with the size prefix the encoder wrote,
// so the connection must be closed.
var ErrShortFile = errors.New("zerocopy: file shorter than slice")

// copyChunk is the size of the pooled buffer the copy path reads file slices
// into. 256 KiB keeps a 1 MiB fetch to four read/write pairs.
const copyChunk = 256 << 10

// maxRetainFrame bounds the framing buffer kept between responses, so one
// huge response does not pin its buffer for the life of the connection.
const maxRetainFrame = 1 << 20

var copyPool = sync.Pool{New: func() any { b := make([]byte, copyChunk); return &b }}

// bigFrames holds framing buffers larger than maxRetainFrame that a Flush
// let go, for the next GrowFrame that needs that much, on any Writer. A
// client asking for Metadata of 100,000 partitions in a loop otherwise
// made a 2.6 MB buffer of garbage per request. The pool lets go of what
// stays unused for two GC cycles.
var bigFrames sync.Pool // *[]byte, len 0

// Stats counts the bytes a Writer has put on its destination, by the path
// they took. The counts only grow; they include bytes of a Flush that later
// failed.
type Stats struct {
	// SendfileBytes are file-slice bytes moved by sendfile(2): kernel to
	// kernel, never in user space.
	SendfileBytes int64
	// CopyBytes are file-slice bytes read into user space and written with
	// write(2): the fallback when the destination is not a TCP connection,
	// sendfile is disabled, or the kernel refused sendfile for that file.
	CopyBytes int64
	// WriteBytes are framing bytes and in-memory slice bytes, written with
	// write(2)/writev(2).
	WriteBytes int64
	// Fallbacks counts file slices that went (wholly or partly) by the
	// copy path although sendfile was enabled.
	Fallbacks int64
	// InlineBytes are file-slice bytes of small responses, and small
	// slices of larger ones, read into user space and written together
	// with their framing by writev(2) (see Writer.SetInlineMax). They are
	// also counted in WriteBytes.
	InlineBytes int64
}

// Writer collects responses for one connection as a sequence of framing bytes
// (appended by an encoder) and Slices, and sends them on Flush: framing and
// in-memory slices with one writev(2) per run between file slices, file
// slices with sendfile(2) when the destination is a *net.TCPConn, and by
// copying through a pooled buffer otherwise. A Flush with two or more file
// slices corks the socket (TCP_CORK) for its duration, so a wide fetch leaves
// as full segments rather than two small packets per partition: measured on
// loopback with 100 partitions of 4 KiB, 25-30% less CPU per response
// (BenchmarkFetchWrite/path=sendfile/size=4KiB/parts=100 in server/fetchresp).
//
// Ownership: a Slice given to AddSlice belongs to the Writer from then on.
// The Writer Releases it after it is sent, when the Flush fails, or when it
// is dropped by Rollback or Reset. The caller never Releases it.
//
// Deadlines: Flush honours the destination's write deadline (set it with
// net.Conn.SetWriteDeadline before calling Flush); an expired deadline fails
// the Flush with an error for which errors.Is(err, os.ErrDeadlineExceeded).
//
// Errors: a Writer whose Flush failed stays failed: later Flushes return the
// same error and later slices are released at once. Part of a response may
// be on the wire, so the connection must be closed.
//
// A Writer is not safe for concurrent use; one goroutine (the connection's
// writer) owns it.
type Writer struct {
	dst io.Writer
	raw syscall.RawConn // non-nil when dst is a TCP conn and sendfile is on

	buf  []byte // framing bytes of the pending responses
	segs []seg  // pending slices in order; segs[i].s follows buf[:segs[i].at]

	iov     net.Buffers // scratch for writev, reused across Flushes
	iovSend net.Buffers // what WriteTo consumes; aliases iov's array

	sf     sendfileState // state of the sendfile in progress
	sfStep func(fd uintptr) bool
	corkOn bool // argument of corkFn
	corkFn func(fd uintptr)

	inlineMax int64 // a Flush with at most this many file-slice bytes reads them

	stats Stats
	err   error // sticky
}

// seg is one pending Slice. Invariant: segs[i].at <= segs[i+1].at <= len(buf).
type seg struct {
	at int
	s  Slice
}

// Mark is a position in a Writer's pending output, for Rollback.
type Mark struct{ buf, segs int }

// NewWriter returns a Writer sending to dst. When dst is a *net.TCPConn, file
// slices go by sendfile(2); for any other io.Writer they are copied.
func NewWriter(dst io.Writer) *Writer {
	w := &Writer{}
	w.sfStep = w.sendfileStep
	w.corkFn = w.corkStep
	w.Reset(dst)
	return w
}

// Reset drops (and Releases) anything pending, clears the sticky error and
// the stats, and points the Writer at dst, so a Writer can be reused for
// another connection. Sendfile is re-enabled when dst is a *net.TCPConn.
func (w *Writer) Reset(dst io.Writer) {
	w.Rollback(Mark{})
	w.dst, w.raw, w.err, w.stats = dst, nil, nil, Stats{}
	if tc, ok := dst.(*net.TCPConn); ok && sendfileSupported {
		if raw, err := tc.SyscallConn(); err == nil {
			w.raw = raw
		}
	}
}

// DisableSendfile makes the Writer copy file slices even on a TCP conn. It
// exists for benchmarks that compare the two paths and for an operator escape
// hatch; it has no effect on pending output.
func (w *Writer) DisableSendfile() { w.raw = nil }

// SetInlineMax makes a Flush whose file slices add up to at most n bytes
// read them into memory and send the whole response with one writev(2),
// instead of a write, a sendfile and a write for each slice. On a small
// response the read from the page cache costs less than the extra system
// calls, and the response leaves as one TCP segment instead of three, which
// matters to a consumer tailing the log one small batch at a time. A larger
// flush still reads each slice of at most n/4 bytes into memory and sends
// the larger ones by sendfile. 0 (the default) never inlines; n is capped
// at 256 KiB, the size of the pooled buffer the bytes are read into: held
// only for the Flush (idle connections keep nothing), and written out
// whenever the next slice does not fit, so a flush of any size needs one.
func (w *Writer) SetInlineMax(n int64) { w.inlineMax = min(max(n, 0), copyChunk) }

// Sendfile reports whether file slices will go by sendfile(2).
func (w *Writer) Sendfile() bool { return w.raw != nil }

// Stats returns the byte counts so far.
func (w *Writer) Stats() Stats { return w.stats }

// Err returns the sticky error of a failed Flush, or nil.
func (w *Writer) Err() error { return w.err }

// Frame returns the pending framing bytes so an encoder can append to them
// (and patch bytes it appended earlier, such as a size prefix). The encoder
// must hand the extended buffer back with SetFrame before calling any other
// method of w. Bytes before the length at the last SetFrame must not shrink.
func (w *Writer) Frame() []byte { return w.buf }

// GrowFrame makes room for n more framing bytes, so that an encoder that
// knows about how much it will write (a large response) appends to one
// buffer rather than growing it by append. With no framing bytes pending
// it reuses a large buffer a Flush let go (bigFrames) when one is big
// enough.
func (w *Writer) GrowFrame(n int) {
	if cap(w.buf)-len(w.buf) >= n {
		return
	}
	if len(w.buf) == 0 && n > maxRetainFrame {
		if bp, _ := bigFrames.Get().(*[]byte); bp != nil && cap(*bp) >= n {
			w.buf = (*bp)[:0]
			return
		}
		// None, or too small: dropped (the GC frees it).
	}
	w.buf = slices.Grow(w.buf, n)
}

// SetFrame stores b, an extension of the buffer returned by Frame, as the
// pending framing bytes.
func (w *Writer) SetFrame(b []byte) { w.buf = b }

// Write appends a copy of p to the pending framing bytes; it never fails. It
// lets small framing pieces come from any io.Writer-shaped encoder.
func (w *Writer) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	return len(p), nil
}

// AddSlice appends s after the framing bytes written so far, and takes
// ownership of it (see Writer). An empty slice is released at once.
func (w *Writer) AddSlice(s Slice) {
	if w.err != nil || s.Len() == 0 {
		s.Release()
		return
	}
	w.segs = append(w.segs, seg{at: len(w.buf), s: s})
}

// Buffered returns the number of bytes pending: framing plus slice lengths.
func (w *Writer) Buffered() int64 {
	n := int64(len(w.buf))
	for i := range w.segs {
		n += w.segs[i].s.Len()
	}
	return n
}

// Mark returns the current end of the pending output.
func (w *Writer) Mark() Mark { return Mark{buf: len(w.buf), segs: len(w.segs)} }

// Rollback drops the output added after m (releasing its slices), for an
// encoder that fails half way. Mark{} drops everything pending.
func (w *Writer) Rollback(m Mark) {
	for i := m.segs; i < len(w.segs); i++ {
		w.segs[i].s.Release()
		w.segs[i] = seg{}
	}
	if m.segs <= len(w.segs) {
		w.segs = w.segs[:m.segs]
	}
	if m.buf <= len(w.buf) {
		w.buf = w.buf[:m.buf]
	}
}

// Flush sends everything pending, in order, and Releases every slice. On
// error the Writer is failed (see Writer) and the error wraps the cause: an
// errno from write/sendfile, os.ErrDeadlineExceeded, ErrShortFile, or a read
// error of the copy path.
func (w *Writer) Flush() error {
	if w.err != nil {
		w.Rollback(Mark{})
		return w.err
	}
	inl := w.inlineLimit()
	if w.raw != nil && w.sendfileSlices(inl) > 1 {
		w.setCork(true)
		defer w.setCork(false)
	}
	// The inlined slices are read into *bp, and the iovecs point into it
	// until they are written: when it fills, what is pending is written
	// and the buffer reused.
	var bp *[]byte
	var room []byte
	defer func() {
		if bp != nil {
			copyPool.Put(bp)
		}
	}()
	prev := 0
	w.iov = w.iov[:0]
	for i := range w.segs {
		sg := &w.segs[i]
		if sg.at > prev {
			w.iov = append(w.iov, w.buf[prev:sg.at])
			prev = sg.at
		}
		if sg.s.file == nil {
			w.iov = append(w.iov, sg.s.buf)
			continue
		}
		if sg.s.n <= inl {
			if bp == nil {
				bp = copyPool.Get().(*[]byte)
				room = (*bp)[:cap(*bp)]
			}
			if sg.s.n > int64(len(room)) {
				if err := w.writeIOV(); err != nil {
					return w.fail(err)
				}
				room = (*bp)[:cap(*bp)]
			}
			dst := room[:sg.s.n]
			room = room[sg.s.n:]
			if err := w.readInline(sg.s, dst); err != nil {
				return w.fail(err)
			}
			w.iov = append(w.iov, dst)
			sg.s.Release()
			sg.s = Slice{}
			continue
		}
		if err := w.writeIOV(); err != nil {
			return w.fail(err)
		}
		err := w.sendSlice(sg.s)
		sg.s.Release()
		sg.s = Slice{}
		if err != nil {
			return w.fail(err)
		}
	}
	if prev < len(w.buf) {
		w.iov = append(w.iov, w.buf[prev:])
	}
	if err := w.writeIOV(); err != nil {
		return w.fail(err)
	}
	w.Rollback(Mark{})
	if cap(w.buf) > maxRetainFrame {
		b := w.buf[:0] // written: nothing refers to it past this Flush
		bigFrames.Put(&b)
		w.buf = nil
	}
	return nil
}

// inlineLimit returns the size up to which this Flush reads a file slice
// into memory and writes it with the framing around it (see SetInlineMax):
// every slice when they add up to at most inlineMax bytes, otherwise each
// one of at most inlineMax/4 bytes, the larger ones going by sendfile; -1
// when nothing is inlined.
//
// Why the second rule: a wide fetch of a consumer tailing many partitions
// (the OMB shape: 25 partitions of a few KiB each per response over 100
// partitions, hundreds of 1 KiB batches over 10,000) adds up to more than
// inlineMax, and then each small slice cost a writev of the framing before
// it and a sendfile, where one pread each and one writev per 256 KiB do
// (BenchmarkFetchWrite in server/fetchresp, size=1KiB/parts=100,
// size=4KiB/parts=100 and size=1KiB/parts=1000, path=server).
func (w *Writer) inlineLimit() int64 {
	if w.inlineMax <= 0 {
		return -1
	}
	var total int64
	for i := range w.segs {
		if w.segs[i].s.file != nil {
			total += w.segs[i].s.n
		}
	}
	if total <= w.inlineMax {
		return w.inlineMax
	}
	return w.inlineMax / 4
}

// readInline reads file slice s into dst (len(dst) == s.n), for a Flush
// that writes it inline.
func (w *Writer) readInline(s Slice, dst []byte) error {
	if m, err := s.ReadAt(dst, 0); int64(m) < s.n {
		if err == nil || errors.Is(err, io.EOF) {
			err = ErrShortFile
		}
		return fmt.Errorf("zerocopy: read %s at %d+%d: %w", s.file.f.Name(), s.pos, s.n, err)
	}
	w.stats.InlineBytes += s.n
	return nil
}

// sendfileSlices counts the pending file slices larger than inl, which go
// by sendfile.
func (w *Writer) sendfileSlices(inl int64) int {
	n := 0
	for i := range w.segs {
		if w.segs[i].s.file != nil && w.segs[i].s.n > inl {
			n++
		}
	}
	return n
}

// fail makes err sticky and drops what is pending.
func (w *Writer) fail(err error) error {
	w.err = err
	w.Rollback(Mark{})
	clear(w.iov[:cap(w.iov)])
	return err
}

// writeIOV writes w.iov with one writev(2) where dst supports it, and empties
// it.
func (w *Writer) writeIOV() error {
	if len(w.iov) == 0 {
		return nil
	}
	w.iovSend = w.iov
	n, err := w.iovSend.WriteTo(w.dst)
	w.stats.WriteBytes += n
	w.iov = w.iov[:0]
	if err != nil {
		return fmt.Errorf("zerocopy: write: %w", err)
	}
	return nil
}

// sendSlice sends one file slice: by sendfile when possible, the rest (or all
// of it) by copying.
func (w *Writer) sendSlice(s Slice) error {
	var off int64
	if w.raw != nil {
		sent, err := w.sendfile(s)
		off = sent
		switch {
		case err == nil:
			return nil
		case errors.Is(err, errNoSendfile):
			w.stats.Fallbacks++
		default:
			return err
		}
	}
	return w.copySlice(s, off)
}

// copySlice sends s[off:] through a pooled buffer.
func (w *Writer) copySlice(s Slice, off int64) error {
	bp := copyPool.Get().(*[]byte)
	defer copyPool.Put(bp)
	buf := *bp
	for off < s.n {
		n := min(int64(len(buf)), s.n-off)
		m, err := s.ReadAt(buf[:n], off)
		if int64(m) < n {
			if err == nil || errors.Is(err, io.EOF) {
				err = ErrShortFile
			}
			return fmt.Errorf("zerocopy: copy %s at %d+%d: %w", s.file.f.Name(), s.pos+off, n, err)
		}
		wn, err := w.dst.Write(buf[:n])
		w.stats.CopyBytes += int64(wn)
		if err != nil {
			return fmt.Errorf("zerocopy: write: %w", err)
		}
		off += n
	}
	return nil
}
