package server

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// Reading a large produce request as it trickles in costs a wake-up and a
// read(2) per loopback segment or two (64 KiB): a producer slower than the
// broker hands over a 1 MiB frame in about 16 pieces, and the reads then
// cost three times what reading the frame whole costs (bench/floor's read
// mode against the broker's profile, in BENCHMARKS.md's "what the run
// above shows, and what remains"). While the rest of a large frame is still to come, the connection raises the
// socket's SO_RCVLOWAT, so the poller wakes the reader only once that much
// has arrived; the kernel still returns whatever is there to a read (the
// socket is non-blocking), so a low-water mark never makes a read wait for
// bytes the client will not send: it is lowered as the frame's end nears
// and put back to 1 before the next frame.
const (
	// lowatMin: below this many bytes still to come, the mark is 1.
	lowatMin = 64 << 10
	// lowatMax caps the mark: well under the receive buffer the kernel
	// grows to (it raises sk_rcvbuf to twice the mark when it can), so the
	// sender's window never closes waiting for a reader that waits for it.
	lowatMax = 1 << 20
)

// rcvLowat sets a TCP socket's SO_RCVLOWAT; the zero value (not TCP, e.g.
// TLS or a pipe) does nothing.
type rcvLowat struct {
	raw syscall.RawConn
	cur int // the mark set now; 0 and 1 both mean the kernel's default
}

func newRcvLowat(nc net.Conn) rcvLowat {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return rcvLowat{}
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return rcvLowat{}
	}
	return rcvLowat{raw: raw, cur: 1}
}

// set makes the mark v (v >= 1) unless it is already. A failure to raise
// it only ends the marks on this connection (reads are correct either
// way); a failure to lower a raised mark is an error, since the poller
// could then sit on a small request until the read timeout: the
// connection is closed instead.
func (l *rcvLowat) set(v int) error {
	if l.raw == nil || v == l.cur {
		return nil
	}
	var serr error
	err := l.raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVLOWAT, v)
	})
	if err = errors.Join(err, serr); err != nil {
		raised := l.cur > 1
		l.raw = nil // not worth retrying per frame
		if raised {
			return fmt.Errorf("server: lowering SO_RCVLOWAT from %d: %w", l.cur, err)
		}
		return nil
	}
	l.cur = v
	return nil
}

// readFrame reads into frame[from:], up to the end of the buffer (which
// may be short of the frame: the caller grows it and calls again),
// holding the mark at what the buffer still takes beyond what the
// bufio.Reader holds, within [lowatMin, lowatMax], while that is large.
// Not at what the frame still lacks: a reader whose buffer is smaller
// than the rest of the frame (the first frames of a connection, while
// the buffer doubles) would then wait for bytes it cannot take yet, and
// for a frame whose client stops short of its end (by a byte, even) it
// would wait for the read timeout with most of what arrived unread.
// scan, unless off, goes on with each piece as it arrives, and pieces
// are then at most scanPiece bytes, so that it checks them while they
// are in the CPU's cache.
func (l *rcvLowat) readFrame(rd *bufio.Reader, frame []byte, from int, scan *crcScan) (int, error) {
	got := 0
	p := frame[from:]
	for got < len(p) {
		if l.raw != nil {
			mark := 1
			if toCome := len(p) - got - rd.Buffered(); toCome >= lowatMin {
				mark = min(toCome, lowatMax)
			}
			if err := l.set(mark); err != nil {
				return got, err
			}
		}
		end := len(p)
		if !scan.off {
			end = min(end, got+scanPiece)
		}
		n, err := rd.Read(p[got:end])
		got += n
		if n > 0 && !scan.off {
			scan.advance(frame[:from+got])
		}
		if err == io.EOF {
			return got, io.ErrUnexpectedEOF // the frame's size was read
		}
		if err != nil {
			return got, err
		}
	}
	return got, nil
}

// reset puts the mark back to 1 between frames.
func (l *rcvLowat) reset() error { return l.set(1) }
