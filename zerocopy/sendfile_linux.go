package zerocopy

import (
	"errors"
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// sendfileSupported reports whether this platform has a sendfile path.
const sendfileSupported = true

// maxSendfileChunk bounds one sendfile(2) call; Linux moves at most
// 0x7ffff000 bytes per call anyway.
const maxSendfileChunk = 1 << 30

// errNoSendfile marks a sendfile refused by the kernel for this file or
// socket (EINVAL, ENOSYS, EOPNOTSUPP): the caller copies the rest instead.
var errNoSendfile = errors.New("zerocopy: sendfile unsupported")

// sendfileSyscall is unix.Sendfile; tests replace it to inject errors.
var sendfileSyscall = unix.Sendfile

// sendfileState is the sendfile in progress, kept in the Writer so that the
// RawConn callback is a method value made once, not a closure per slice.
type sendfileState struct {
	src    int   // source file descriptor
	off    int64 // next file offset to send; sendfile(2) advances it
	remain int64 // bytes still to send
	err    error // errno that ended the loop, if any
}

// sendfile sends the file range of s with sendfile(2) on the socket behind
// w.raw. It returns how many bytes went; on a partial send it loops, and on
// EAGAIN it lets the RawConn wait for the socket to become writable (which
// honours the write deadline). An error wrapping errNoSendfile means the
// remaining bytes must go by the copy path.
func (w *Writer) sendfile(s Slice) (int64, error) {
	f, pos, n, _ := s.File()
	w.sf = sendfileState{src: int(f.Fd()), off: pos, remain: n}
	err := w.raw.Write(w.sfStep)
	runtime.KeepAlive(f)
	sent := n - w.sf.remain
	if err == nil {
		err = w.sf.err
	}
	w.sf = sendfileState{}
	switch {
	case err == nil:
		return sent, nil
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EOPNOTSUPP):
		return sent, fmt.Errorf("%w: %s: %w", errNoSendfile, f.Name(), err)
	default:
		return sent, fmt.Errorf("zerocopy: sendfile %s at %d+%d: %w", f.Name(), pos+sent, n-sent, err)
	}
}

// sendfileStep is the syscall.RawConn.Write callback: it returns false to
// wait for writability, true when done or failed (w.sf.err).
func (w *Writer) sendfileStep(fd uintptr) bool {
	for w.sf.remain > 0 {
		chunk := min(w.sf.remain, maxSendfileChunk)
		n, err := sendfileSyscall(int(fd), w.sf.src, &w.sf.off, int(chunk))
		if n > 0 {
			w.sf.remain -= int64(n)
			w.stats.SendfileBytes += int64(n)
		}
		switch {
		case err == unix.EAGAIN:
			return false
		case err == unix.EINTR:
		case err != nil:
			w.sf.err = err
			return true
		case n == 0:
			w.sf.err = ErrShortFile
			return true
		}
	}
	return true
}

// setCork sets TCP_CORK on the socket: while corked, the kernel sends only
// full segments, so the framing write and the sendfile of each partition
// of a wide fetch leave as a few full packets instead of two small ones per
// partition. Uncorking pushes out what is left. Errors are ignored: corking
// only changes packet boundaries, never the byte stream.
func (w *Writer) setCork(on bool) {
	w.corkOn = on
	w.raw.Control(w.corkFn)
}

func (w *Writer) corkStep(fd uintptr) {
	v := 0
	if w.corkOn {
		v = 1
	}
	unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_CORK, v)
}
