// Package floor measures the least CPU a produce can cost on this machine:
// a reader that takes size-prefixed frames off a loopback TCP socket, checks
// each record batch's CRC-32C and writes the batches into the page cache.
// Nothing a broker does for a produce is cheaper than that, so the broker's
// produce CPU per GB is judged against it (BENCHMARKS.md, "The floor").
//
// Modes, each adding one step:
//
//	read     read(2) of every frame into one reused buffer
//	crc      read, then CRC-32C of every batch (record.Batch.ComputeCRC)
//	pwrite   read, CRC, then pwrite(2) of every batch to the end of its
//	         partition's file (one file per partition, a new file every
//	         FileBytes, as a log rolls segments)
//	reserve  pwrite into blocks reserved ahead of each file's end
//	         (fsutil.Reserver, fallocate(2) that keeps the size), as the
//	         segment backend writes: the floor of a write path that
//	         reserves, beside the (pwrite)
//	segment  read, then segment.Log.Append of every batch: the segment
//	         backend's real write path (validation, offset assignment,
//	         pwrite, sparse indexes, rolling)
//
// SpliceModes (splice.go), run only when asked for, land the records with
// splice(2) instead of read+pwrite (issue 33 point 5).
//
// The reader runs on its own OS thread, pinned to ReaderCPU; its CPU is that
// thread's rusage (RUSAGE_THREAD), so the writer feeding the socket from
// another thread pinned to WriterCPU is not counted.
package floor

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/internal/fsutil"
	"github.com/sluice/sluice/record"
	"github.com/sluice/sluice/segment"
)

// Modes in the order they add work.
var Modes = []string{"read", "crc", "pwrite", "reserve", "segment"}

// SpliceModes land batches with splice(2) instead of read+pwrite
// (splice.go). Run only when asked for (-modes), beside Modes.
var SpliceModes = []string{"splice-land", "splice", "splice-reserve"}

// Config is one measurement.
type Config struct {
	Mode       string
	Dir        string // files of the pwrite, reserve and segment modes
	FrameBytes int    // size of one frame (a produce request's batches); default 1 MiB
	Partitions int    // batches per frame, each to its own file or log; default 4
	RecordSize int    // value bytes per record; default 1024
	TotalBytes int64  // bytes to read; default 2 GiB
	// FileBytes: pwrite starts a new file per partition after this many
	// bytes, and it is the segment mode's segment.bytes; default 1 GiB,
	// Kafka's segment.bytes.
	FileBytes int64
	ReaderCPU int // -1: not pinned
	WriterCPU int // -1: not pinned
}

// Result of one measurement.
type Result struct {
	Mode       string  `json:"mode"`
	Bytes      int64   `json:"bytes"`
	Seconds    float64 `json:"seconds"`
	CPUSeconds float64 `json:"cpu_seconds"` // the reader thread's utime+stime
	MBPerSec   float64 `json:"mb_per_sec"`  // 10^6 B/s
	CPUPerGB   float64 `json:"cpu_s_per_gb"`
	Reads      int64   `json:"reads"` // read(2) calls
}

func (c *Config) defaults() {
	if c.FrameBytes <= 0 {
		c.FrameBytes = 1 << 20
	}
	if c.Partitions <= 0 {
		c.Partitions = 4
	}
	if c.RecordSize <= 0 {
		c.RecordSize = 1024
	}
	if c.TotalBytes <= 0 {
		c.TotalBytes = 2 << 30
	}
	if c.FileBytes <= 0 {
		c.FileBytes = 1 << 30
	}
}

// Frame builds the body of one frame: cfg.Partitions record batches of
// RecordSize-byte values filling about FrameBytes, with valid CRCs, as a
// producer with 1 MB batches sends them.
func Frame(cfg Config) []byte {
	cfg.defaults()
	per := cfg.FrameBytes / cfg.Partitions
	n := max(1, per/(cfg.RecordSize+24))
	val := make([]byte, cfg.RecordSize)
	for i := range val {
		val[i] = byte(i * 7)
	}
	recs := make([]record.BuildRecord, n)
	ts := time.Now().UnixMilli()
	for i := range recs {
		recs[i] = record.BuildRecord{Value: val, Timestamp: ts}
	}
	var body []byte
	for range cfg.Partitions {
		body = record.AppendBatch(body, record.BatchOptions{ProducerID: -1, BaseSequence: -1}, recs)
	}
	return body
}

// Run measures cfg.Mode.
func Run(cfg Config) (Result, error) {
	cfg.defaults()
	if !valid(cfg.Mode) {
		return Result{}, fmt.Errorf("floor: unknown mode %q (want one of %v or %v)", cfg.Mode, Modes, SpliceModes)
	}
	body := Frame(cfg)
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	frame = append(frame, body...)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return Result{}, err
	}
	defer ln.Close()
	// At least one frame: none would make every per-GB figure NaN, which
	// encoding/json refuses.
	frames := max(1, cfg.TotalBytes/int64(len(body)))
	werr := make(chan error, 1)
	go func() { werr <- feed(ln.Addr().String(), frame, frames, cfg.WriterCPU) }()
	c, err := ln.Accept()
	if err != nil {
		return Result{}, err
	}
	defer c.Close()

	sink, err := newSink(cfg)
	if err != nil {
		return Result{}, err
	}
	defer sink.close()

	// The reader pins its own goroutine's thread, which exits with it.
	type out struct {
		res Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		var res Result
		var err error
		if spliceModes[cfg.Mode] {
			var raw syscall.RawConn
			if raw, err = c.(*net.TCPConn).SyscallConn(); err == nil {
				res, err = spliceRead(raw, frames, cfg, sink)
			}
		} else {
			res, err = read(c.(*net.TCPConn), len(body), frames, cfg, sink)
		}
		done <- out{res, err}
	}()
	o := <-done
	res, err := o.res, o.err
	if err != nil {
		return res, err
	}
	if err := <-werr; err != nil {
		return res, err
	}
	res.Mode = cfg.Mode
	return res, nil
}

func valid(mode string) bool {
	if spliceModes[mode] {
		return true
	}
	for _, m := range Modes {
		if m == mode {
			return true
		}
	}
	return false
}

// feed writes frame n times to addr from a pinned thread.
func feed(addr string, frame []byte, n int64, cpu int) error {
	Pin(cpu)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	for range n {
		if _, err := c.Write(frame); err != nil {
			return err
		}
	}
	return nil
}

// read is the measured reader: frames of size n, n frames' worth.
func read(c *net.TCPConn, size int, frames int64, cfg Config, sink *sink) (Result, error) {
	Pin(cfg.ReaderCPU)
	raw, err := c.SyscallConn()
	if err != nil {
		return Result{}, err
	}
	buf := make([]byte, 4+size)
	var reads int64
	// Counting reads means reading through the raw fd: one read(2) per
	// call, as the broker's bufio-wrapped socket does for large bodies.
	rd := func(p []byte) (int, error) {
		var n int
		var rerr error
		err := raw.Read(func(fd uintptr) bool {
			n, rerr = unix.Read(int(fd), p)
			return !errors.Is(rerr, unix.EAGAIN)
		})
		reads++
		if err != nil {
			return n, err
		}
		if rerr != nil {
			return 0, rerr
		}
		if n == 0 {
			return 0, io.EOF
		}
		return n, nil
	}
	m, err := startMeter()
	if err != nil {
		return Result{}, err
	}
	var total int64
	for range frames {
		if _, err := io.ReadFull(readerFunc(rd), buf); err != nil {
			return Result{}, err
		}
		if err := sink.put(buf[4:]); err != nil {
			return Result{}, err
		}
		total += int64(len(buf))
	}
	return m.result(total, reads)
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

func tv(t unix.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }

// Pin locks the calling goroutine to its OS thread and that thread to cpu
// (none when cpu is negative or the machine lacks it). The thread is never
// unlocked: it exits with the goroutine, so no other goroutine inherits its
// affinity.
func Pin(cpu int) {
	runtime.LockOSThread()
	if cpu < 0 || cpu >= runtime.NumCPU() {
		return
	}
	var set unix.CPUSet
	set.Set(cpu)
	_ = unix.SchedSetaffinity(0, &set) // best effort: unpinned still measures
}

// sink is what a mode does with one frame's batches after reading them.
type sink struct {
	cfg   Config
	files []*os.File
	ends  []int64
	// reserved and reserver: the reserve mode's blocks reserved ahead of
	// each file's end (fsutil.Reserver, as the segment backend does).
	reserved []int64
	reserver fsutil.Reserver
	gen      int
	store    *segment.Store
	logs     []engine.Log
	// maps: the splice modes' shared mapping of each partition's file,
	// mapLen bytes from offset 0, through which landed batches are checked
	// and patched; next: each partition's next offset.
	maps   [][]byte
	mapLen int
	next   []int64
}

func newSink(cfg Config) (*sink, error) {
	s := &sink{cfg: cfg}
	switch cfg.Mode {
	case "pwrite", "reserve", "splice-land", "splice", "splice-reserve":
		if spliceModes[cfg.Mode] {
			page := os.Getpagesize()
			s.mapLen = int(cfg.FileBytes+int64(cfg.FrameBytes)+int64(page)-1) / page * page
			s.maps = make([][]byte, cfg.Partitions)
			s.next = make([]int64, cfg.Partitions)
		}
		s.files = make([]*os.File, cfg.Partitions)
		s.ends = make([]int64, cfg.Partitions)
		s.reserved = make([]int64, cfg.Partitions)
		for p := range s.files {
			if err := s.rotate(p); err != nil {
				s.close()
				return nil, err
			}
		}
	case "segment":
		st, err := segment.Open(engine.Options{Dir: cfg.Dir})
		if err != nil {
			return nil, err
		}
		s.store = st
		for p := range cfg.Partitions {
			lc := engine.DefaultLogConfig()
			lc.SegmentBytes = cfg.FileBytes
			l, err := st.CreateLog(engine.PartitionID{Topic: "floor", Partition: int32(p)}, lc)
			if err != nil {
				s.close()
				return nil, err
			}
			s.logs = append(s.logs, l)
		}
	}
	return s, nil
}

// rotate starts partition p's next file and removes its previous one, so
// writes keep allocating new page-cache pages, as appending to a log does.
func (s *sink) rotate(p int) error {
	if s.maps != nil && s.maps[p] != nil {
		unix.Munmap(s.maps[p])
		s.maps[p] = nil
	}
	if f := s.files[p]; f != nil {
		f.Close()
		os.Remove(f.Name())
	}
	s.gen++
	f, err := os.OpenFile(filepath.Join(s.cfg.Dir, fmt.Sprintf("p%d-%d.log", p, s.gen)), os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	s.files[p], s.ends[p], s.reserved[p] = f, 0, 0
	if s.maps != nil {
		// Mapped past the file's end: only landed bytes are touched,
		// and landing extends the file first.
		m, err := unix.Mmap(int(f.Fd()), 0, s.mapLen, unix.PROT_READ, unix.MAP_SHARED)
		if err != nil {
			return fmt.Errorf("floor: mmap %s: %w", f.Name(), err)
		}
		s.maps[p] = m
	}
	return nil
}

func (s *sink) put(body []byte) error {
	if s.cfg.Mode == "read" {
		return nil
	}
	p := 0
	for pos := 0; pos < len(body); p++ {
		b := record.Batch(body[pos:])
		size := b.Size()
		b = b[:size]
		switch s.cfg.Mode {
		case "crc", "pwrite", "reserve":
			if b.ComputeCRC() != b.CRC() {
				return errors.New("floor: CRC mismatch")
			}
			if s.cfg.Mode != "crc" {
				if s.ends[p] >= s.cfg.FileBytes {
					if err := s.rotate(p); err != nil {
						return err
					}
				}
				if s.cfg.Mode == "reserve" {
					s.reserved[p] = s.reserver.Reserve(s.files[p], s.ends[p], int64(size), s.reserved[p], s.cfg.FileBytes)
				}
				if _, err := s.files[p].WriteAt(b, s.ends[p]); err != nil {
					return err
				}
				s.ends[p] += int64(size)
			}
		case "segment":
			if _, err := s.logs[p].Append(b, engine.AppendOptions{AssignOffsets: true}); err != nil {
				return err
			}
		}
		pos += size
	}
	return nil
}

func (s *sink) close() {
	for _, m := range s.maps {
		if m != nil {
			unix.Munmap(m)
		}
	}
	for _, f := range s.files {
		if f != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}
	if s.store != nil {
		s.store.Close()
	}
}

// meter measures a reader's wall time and its thread's CPU (the caller is
// locked to its OS thread).
type meter struct {
	start  time.Time
	before unix.Rusage
}

func startMeter() (meter, error) {
	var m meter
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &m.before); err != nil {
		return meter{}, err
	}
	m.start = time.Now()
	return m, nil
}

// result is the Result of total bytes taken with reads calls since start.
func (m meter) result(total, reads int64) (Result, error) {
	elapsed := time.Since(m.start).Seconds()
	var after unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &after); err != nil {
		return Result{}, err
	}
	cpu := tv(after.Utime) + tv(after.Stime) - tv(m.before.Utime) - tv(m.before.Stime)
	return Result{
		Bytes:      total,
		Seconds:    elapsed,
		CPUSeconds: cpu,
		MBPerSec:   float64(total) / elapsed / 1e6,
		CPUPerGB:   cpu / (float64(total) / 1e9),
		Reads:      reads,
	}, nil
}
