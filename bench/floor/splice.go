package floor

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sluice/sluice/record"
)

// The splice modes land each batch's records in its partition's file
// without a user-space copy (issue 33 point 5, "one copy instead of two"):
//
//	splice-land     per batch: read(2) of the 61-byte batch header (where a
//	                broker parses and validates it), splice(2) of the rest
//	                socket -> pipe -> file at the partition's end + 61, then
//	                pwrite(2) of the header. Landing only: no CRC.
//	splice          splice-land with, before the header's pwrite, CRC-32C
//	                of the header's covered bytes and of the landed records
//	                read through a shared read-only mapping of the file as
//	                each pipeful lands (the bytes must be read once anyway:
//	                from the page cache instead of a user buffer), and
//	                baseOffset and partitionLeaderEpoch, which the CRC does
//	                not cover, set in the header before it is written.
//	splice-reserve  splice into blocks reserved ahead of each file's end
//	                (fsutil.Reserver), beside the reserve mode.
//
// A first version peeked each header with recv(MSG_PEEK) and spliced the
// whole batch, patching through a writable mapping; on 16 KiB and 1 KiB
// batches it sometimes never finished (the reader waiting in the peek for
// the rest of the header, the writer blocked on a full socket: 4 of ~13
// runs; not diagnosed further), and a broker has to read and check the
// header before it lands anything anyway.
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
	opSplice
)

// sockOp is one socket call in progress; its method value is made once.
type sockOp struct {
	kind  int
	buf   []byte // opRead
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
	var hdr [record.HeaderSize]byte
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
	crcOn := sink.cfg.Mode != "splice-land"
	var crc uint32
	land := func(fd int, m []byte, off int64, n int) error {
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
				if crcOn {
					// CRC what just landed while it is in cache.
					crc = crc32.Update(crc, castagnoli, m[off-w:off])
				}
			}
		}
		return nil
	}

	m, err := startMeter()
	if err != nil {
		return Result{}, err
	}
	var total int64
	for range frames {
		if err := readFull(size[:]); err != nil {
			return Result{}, err
		}
		left := int(binary.BigEndian.Uint32(size[:]))
		total += 4 + int64(left)
		for p := 0; left > 0; p++ {
			// The batch header by read(2), where a broker parses and
			// validates it; only the records are spliced.
			if err := readFull(hdr[:]); err != nil {
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
			f := sink.files[p]
			if crcOn {
				if pos+int64(n) > int64(len(sink.maps[p])) {
					return Result{}, fmt.Errorf("floor: batch at %d+%d past the %d-byte mapping", pos, n, len(sink.maps[p]))
				}
				crc = crc32.Update(0, castagnoli, hdr[crcStart:])
			}
			if err := land(int(f.Fd()), sink.maps[p], pos+record.HeaderSize, n-record.HeaderSize); err != nil {
				return Result{}, err
			}
			if err := sink.check(p, hdr[:], crc); err != nil {
				return Result{}, err
			}
			// The header last, patched: until it lands the batch's
			// length in the file is whatever was there (a hole: zero),
			// so a batch that fails validation, or a crash before
			// this write, leaves nothing a recovery scan would accept.
			if _, err := f.WriteAt(hdr[:], pos); err != nil {
				return Result{}, err
			}
			sink.ends[p] += int64(n)
			left -= n
		}
	}
	return m.result(total, o.calls)
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

// castagnoli is CRC-32C's table, as record.Batch.ComputeCRC uses.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// check is what the splice and splice-reserve modes do with a batch whose
// header hdr was read and whose records landed in partition p's file: crc
// is CRC-32C over the header's covered bytes and the records, read through
// the file's mapping (page cache, not a user buffer) as each piece landed.
// Then baseOffset and partitionLeaderEpoch, which the CRC does not cover,
// are set in hdr before it is written. A batch that fails is an error
// here; a broker would leave the end where it was
// (docs/one-copy-produce.md).
func (s *sink) check(p int, hdr []byte, crc uint32) error {
	if s.cfg.Mode == "splice-land" {
		return nil
	}
	h := record.Batch(hdr)
	if crc != h.CRC() {
		return fmt.Errorf("floor: CRC mismatch in a batch landed in partition %d", p)
	}
	binary.BigEndian.PutUint64(hdr[0:], uint64(s.next[p]))
	binary.BigEndian.PutUint32(hdr[12:], 0) // partitionLeaderEpoch
	s.next[p] += int64(h.LastOffsetDelta()) + 1
	return nil
}

// crcStart is where a batch's CRC-32C coverage starts: attributes, after
// the crc field (record/format.go).
const crcStart = 21
