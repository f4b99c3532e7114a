package floor

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sluice/sluice/record"
)

// The splice modes land each batch in its partition's file without a
// user-space copy (issue 33 point 5, "one copy instead of two"):
//
//	splice-land     per batch: recv(MSG_PEEK) of the batch's first 12
//	                bytes (baseOffset, batchLength: where a broker parses
//	                the request framing), then splice(2) socket -> pipe ->
//	                file at the partition's end. Landing only: no CRC.
//	splice          splice-land, then CRC-32C of the landed batch read
//	                through a shared mapping of the file (the bytes must be
//	                read once anyway: from the page cache instead of a user
//	                buffer), then baseOffset and partitionLeaderEpoch, which
//	                the CRC does not cover, patched in place through the
//	                mapping.
//	splice-reserve  splice into blocks reserved ahead of each file's end
//	                (fsutil.Reserver), beside the reserve mode.
//
// read+pwrite copies every byte twice: socket buffer -> user buffer
// (read), user buffer -> page cache (pwrite). splice(2) from a TCP socket
// into a pipe takes references to the socket buffer's pages; from the pipe
// into a regular file the kernel copies them into the page cache (there is
// no page moving into the page cache: SPLICE_F_MOVE is a no-op since Linux
// 2.6.21). So a splice path copies once, in the kernel, and then reads the
// bytes once more for the CRC.

// spliceModes are the modes read by spliceRead instead of read.
var spliceModes = map[string]bool{"splice-land": true, "splice": true, "splice-reserve": true}

// pipeBytes is the pipe's capacity asked for with F_SETPIPE_SZ: 1 MiB,
// Linux's default /proc/sys/fs/pipe-max-size. A smaller grant is used as is.
const pipeBytes = 1 << 20

// spliceState is the splice reader's pipe.
type spliceState struct {
	pr, pw int // the pipe's read and write ends
	size   int // its capacity
}

func newSplicePipe() (*spliceState, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, fmt.Errorf("floor: pipe2: %w", err)
	}
	s := &spliceState{pr: p[0], pw: p[1], size: 1 << 16}
	if n, err := unix.FcntlInt(uintptr(p[1]), unix.F_SETPIPE_SZ, pipeBytes); err == nil {
		s.size = n
	}
	return s, nil
}

func (s *spliceState) close() {
	unix.Close(s.pr)
	unix.Close(s.pw)
}

// Socket operations of the splice reader, run by sockOp through the
// RawConn without a closure per call.
const (
	opRead = iota
	opPeek
	opSplice
)

// sockOp is one socket call in progress; its method value is made once.
type sockOp struct {
	kind  int
	buf   []byte // opRead, opPeek
	want  int    // opSplice
	pipe  int    // opSplice: the pipe's write end
	n     int
	err   error
	calls int64
}

func (o *sockOp) run(fd uintptr) bool {
	switch o.kind {
	case opRead:
		o.n, o.err = unix.Read(int(fd), o.buf)
	case opPeek:
		o.n, _, o.err = unix.Recvfrom(int(fd), o.buf, unix.MSG_PEEK)
		if o.err == nil && o.n > 0 && o.n < len(o.buf) {
			// Part of the header is queued: wait for more (the
			// writer always sends whole frames).
			o.err = unix.EAGAIN
		}
	case opSplice:
		var n int64
		n, o.err = unix.Splice(int(fd), nil, o.pipe, nil, o.want, unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
		o.n = int(n)
	}
	o.calls++
	return !errors.Is(o.err, unix.EAGAIN)
}

// spliceRead is read for the splice modes: every frame's 4-byte size by
// read(2), then each batch peeked, landed and (modes splice and
// splice-reserve) checked and patched in place. Reads counts the read(2),
// recv and splice(2) calls on the socket.
func spliceRead(c syscall.RawConn, frames int64, cfg Config, sink *sink) (Result, error) {
	Pin(cfg.ReaderCPU)
	sp, err := newSplicePipe()
	if err != nil {
		return Result{}, err
	}
	defer sp.close()
	o := &sockOp{pipe: sp.pw}
	run := o.run
	do := func() (int, error) {
		if err := c.Read(run); err != nil {
			return 0, err
		}
		if o.err != nil {
			return 0, o.err
		}
		if o.n == 0 {
			return 0, io.EOF
		}
		return o.n, nil
	}
	var hdr [record.LogOverhead]byte
	var size [4]byte
	readFull := func(p []byte) error {
		for len(p) > 0 {
			o.kind, o.buf = opRead, p
			n, err := do()
			if err != nil {
				return err
			}
			p = p[n:]
		}
		return nil
	}
	// land moves n bytes from the socket into fd at off through the pipe.
	land := func(fd int, off int64, n int) error {
		for n > 0 {
			o.kind, o.want = opSplice, min(n, sp.size)
			got, err := do()
			if err != nil {
				return fmt.Errorf("floor: splice from socket: %w", err)
			}
			n -= got
			for got > 0 {
				w, err := unix.Splice(sp.pr, nil, fd, &off, got, unix.SPLICE_F_MOVE)
				if err != nil {
					return fmt.Errorf("floor: splice to file: %w", err)
				}
				got -= int(w)
			}
		}
		return nil
	}

	var before unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &before); err != nil {
		return Result{}, err
	}
	start := time.Now()
	var total int64
	for range frames {
		if err := readFull(size[:]); err != nil {
			return Result{}, err
		}
		left := int(binary.BigEndian.Uint32(size[:]))
		total += 4 + int64(left)
		for p := 0; left > 0; p++ {
			o.kind, o.buf = opPeek, hdr[:]
			if _, err := do(); err != nil {
				return Result{}, err
			}
			n := record.LogOverhead + int(binary.BigEndian.Uint32(hdr[8:]))
			if n < record.HeaderSize || n > left || p >= cfg.Partitions {
				return Result{}, fmt.Errorf("floor: batch of %d bytes in a frame with %d left", n, left)
			}
			if err := sink.prepare(p, n); err != nil {
				return Result{}, err
			}
			pos := sink.ends[p]
			if err := land(int(sink.files[p].Fd()), pos, n); err != nil {
				return Result{}, err
			}
			if err := sink.check(p, pos, n); err != nil {
				return Result{}, err
			}
			sink.ends[p] += int64(n)
			left -= n
		}
	}
	elapsed := time.Since(start).Seconds()
	var after unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &after); err != nil {
		return Result{}, err
	}
	cpu := tv(after.Utime) + tv(after.Stime) - tv(before.Utime) - tv(before.Stime)
	return Result{
		Bytes:      total,
		Seconds:    elapsed,
		CPUSeconds: cpu,
		MBPerSec:   float64(total) / elapsed / 1e6,
		CPUPerGB:   cpu / (float64(total) / 1e9),
		Reads:      o.calls,
	}, nil
}

// prepare rolls partition p's file if it is full and reserves room for n
// more bytes (mode splice-reserve), as pwrite and reserve do before a write.
func (s *sink) prepare(p, n int) error {
	if s.ends[p] >= s.cfg.FileBytes {
		if err := s.rotate(p); err != nil {
			return err
		}
	}
	if s.cfg.Mode == "splice-reserve" {
		s.reserved[p] = s.reserver.Reserve(s.files[p], s.ends[p], int64(n), s.reserved[p], s.cfg.FileBytes)
	}
	return nil
}

// check is what the splice and splice-reserve modes do with a landed batch
// at pos in partition p's file: CRC-32C over the mapped page-cache bytes,
// then baseOffset and partitionLeaderEpoch written in place. A batch that
// fails the CRC is an error here; the broker would have to erase it
// (docs/one-copy-produce.md).
func (s *sink) check(p int, pos int64, n int) error {
	if s.cfg.Mode == "splice-land" {
		return nil
	}
	m := s.maps[p]
	if pos+int64(n) > int64(len(m)) {
		return fmt.Errorf("floor: batch at %d+%d past the %d-byte mapping", pos, n, len(m))
	}
	b := record.Batch(m[pos : pos+int64(n)])
	if b.ComputeCRC() != b.CRC() {
		return fmt.Errorf("floor: CRC mismatch in the landed batch at %d", pos)
	}
	binary.BigEndian.PutUint64(b[0:], uint64(s.next[p]))
	binary.BigEndian.PutUint32(b[12:], 0) // partitionLeaderEpoch
	s.next[p] += int64(uint32(b.LastOffsetDelta())) + 1
	return nil
}
