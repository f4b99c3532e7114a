package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/sluice/sluice/bench/floor"
)

func freeport() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	fmt.Println(ln.Addr().(*net.TCPAddr).Port)
	return nil
}

// limits measures what loopback TCP can carry on this machine, the ceiling
// for a broker's consume path:
//
//   - sendfile: a file already in the page cache is sent with sendfile(2)
//     (net.TCPConn.ReadFrom with an *os.File, which is sendfile on Linux)
//     over and over for -seconds;
//   - tcp: a 1 MiB buffer in memory is written with write(2) over and over.
//
// The reader discards into a 1 MiB buffer. Sender and reader run on OS
// threads pinned to CPU 0 and CPU 1, the cores the broker and the load
// generator get in bench-report.sh. MB/s is 10^6 bytes per second, counted
// by the reader from the first byte to EOF.
func limits(args []string) error {
	fs := flag.NewFlagSet("limits", flag.ContinueOnError)
	dir := fs.String("dir", "", "directory for the sendfile source file (required)")
	sizeMiB := fs.Int("size-mib", 256, "size of the sendfile source file")
	seconds := fs.Float64("seconds", 2, "length of one run")
	runs := fs.Int("runs", 3, "runs of each measurement")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return fmt.Errorf("-dir is required")
	}
	path := filepath.Join(*dir, "sendfile.bin")
	if err := writeWarmFile(path, int64(*sizeMiB)<<20); err != nil {
		return err
	}
	defer os.Remove(path)
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()

	d := time.Duration(*seconds * float64(time.Second))
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte('a' + i%26)
	}
	enc := json.NewEncoder(os.Stdout)
	for range *runs {
		mbps, err := loopback(d, func(c *net.TCPConn) (int64, error) {
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				return 0, err
			}
			return c.ReadFrom(f)
		})
		if err != nil {
			return fmt.Errorf("sendfile: %w", err)
		}
		if err := enc.Encode(record{Kind: "limit", Name: "sendfile", MBps: mbps}); err != nil {
			return err
		}
		mbps, err = loopback(d, func(c *net.TCPConn) (int64, error) {
			n, err := c.Write(buf)
			return int64(n), err
		})
		if err != nil {
			return fmt.Errorf("tcp: %w", err)
		}
		if err := enc.Encode(record{Kind: "limit", Name: "tcp", MBps: mbps}); err != nil {
			return err
		}
	}
	return nil
}

// writeWarmFile writes size bytes of letters to path and reads them back
// once, so the file is in the page cache.
func writeWarmFile(path string, size int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	chunk := make([]byte, 1<<20)
	for i := range chunk {
		chunk[i] = byte('a' + i%26)
	}
	for n := int64(0); n < size; n += int64(len(chunk)) {
		if _, err := f.Write(chunk); err != nil {
			f.Close()
			return err
		}
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return err
	}
	if _, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{f}, chunk); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// loopback connects a sender calling send until d has passed to a reader
// that discards, and returns the reader's MB/s.
func loopback(d time.Duration, send func(*net.TCPConn) (int64, error)) (float64, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	type result struct {
		n       int64
		elapsed time.Duration
		err     error
	}
	got := make(chan result, 1)
	go func() {
		floor.Pin(1)
		c, err := ln.Accept()
		if err != nil {
			got <- result{err: err}
			return
		}
		defer c.Close()
		buf := make([]byte, 1<<20)
		var n int64
		var start time.Time
		for {
			m, err := c.Read(buf)
			if n == 0 && m > 0 {
				start = time.Now()
			}
			n += int64(m)
			if err == io.EOF {
				got <- result{n: n, elapsed: time.Since(start)}
				return
			}
			if err != nil {
				got <- result{err: err}
				return
			}
		}
	}()
	sent := make(chan error, 1)
	go func() {
		floor.Pin(0)
		c, err := net.DialTCP("tcp", nil, ln.Addr().(*net.TCPAddr))
		if err != nil {
			sent <- err
			return
		}
		defer c.Close()
		for start := time.Now(); time.Since(start) < d; {
			if _, err := send(c); err != nil {
				sent <- err
				return
			}
		}
		sent <- c.CloseWrite()
	}()
	if err := <-sent; err != nil {
		return 0, err
	}
	r := <-got
	if r.err != nil {
		return 0, r.err
	}
	return float64(r.n) / 1e6 / r.elapsed.Seconds(), nil
}
