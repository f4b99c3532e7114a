package fetchresp_test

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/sluice/sluice/server/fetchresp"
	"github.com/sluice/sluice/zerocopy"
)

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(t testing.TB) (client, server *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type res struct {
		c   net.Conn
		err error
	}
	ch := make(chan res, 1)
	go func() { c, err := ln.Accept(); ch <- res{c, err} }()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	t.Cleanup(func() { c.Close(); r.c.Close() })
	return c.(*net.TCPConn), r.c.(*net.TCPConn)
}

// readFrames reads n size-prefixed frames from c in a goroutine.
func readFrames(c net.Conn, n int) <-chan []byte {
	ch := make(chan []byte, 1)
	go func() {
		var all []byte
		for range n {
			var size [4]byte
			if _, err := io.ReadFull(c, size[:]); err != nil {
				break
			}
			frame := make([]byte, binary.BigEndian.Uint32(size[:]))
			if _, err := io.ReadFull(c, frame); err != nil {
				break
			}
			all = append(append(all, size[:]...), frame...)
		}
		ch <- all
	}()
	return ch
}

// TestWriteOverTCP sends responses whose records are file slices over a
// loopback TCP connection and checks that they went by sendfile and that the
// bytes received equal those of the copy path (a net.Pipe and a buffer).
func TestWriteOverTCP(t *testing.T) {
	log := batches(64, 200) // a few MiB: many partial sends
	f := logFile(t, log)
	versions := []int16{4, 11, 12, 13, 16}
	build := func(v int16) *fetchresp.Response {
		r, _ := fixture(v, log, fileSource(f))
		return r
	}

	// Copy path into a buffer.
	var want bytes.Buffer
	cw := zerocopy.NewWriter(&want)
	for i, v := range versions {
		if err := fetchresp.Write(cw, v, int32(i), build(v)); err != nil {
			t.Fatal(err)
		}
	}
	if err := cw.Flush(); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		conn func(t *testing.T) (net.Conn, net.Conn)
		send bool // sendfile expected
	}{
		{"dst=tcp", func(t *testing.T) (net.Conn, net.Conn) { c, s := tcpPair(t); return c, s }, true},
		{"dst=pipe", func(t *testing.T) (net.Conn, net.Conn) {
			c, s := net.Pipe()
			t.Cleanup(func() { c.Close(); s.Close() })
			return c, s
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, s := tc.conn(t)
			w := zerocopy.NewWriter(s)
			if w.Sendfile() != tc.send {
				t.Fatalf("Sendfile() = %v, want %v", w.Sendfile(), tc.send)
			}
			ch := readFrames(c, len(versions))
			// A generous deadline so a bug cannot hang the test; it never
			// decides the outcome.
			if err := s.SetWriteDeadline(time.Now().Add(time.Minute)); err != nil {
				t.Fatal(err)
			}
			for i, v := range versions {
				if err := fetchresp.Write(w, v, int32(i), build(v)); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			got := <-ch
			if !bytes.Equal(got, want.Bytes()) {
				t.Fatalf("received %d bytes, copy path wrote %d; first difference at %d", len(got), want.Len(), commonPrefix(got, want.Bytes()))
			}
			st := w.Stats()
			t.Logf("stats %+v", st)
			if tc.send && (st.SendfileBytes == 0 || st.CopyBytes != 0) {
				t.Fatalf("stats %+v: want records by sendfile only", st)
			}
			if !tc.send && (st.SendfileBytes != 0 || st.CopyBytes == 0) {
				t.Fatalf("stats %+v: want records copied", st)
			}
			if st.SendfileBytes+st.CopyBytes+st.WriteBytes != int64(want.Len()) {
				t.Fatalf("stats %+v do not add up to %d", st, want.Len())
			}
		})
	}
}

// discard reads c until it fails, in 1 MiB reads so the receiver costs
// little next to the sender being measured (io.Discard reads 8 KiB at a time).
func discard(c net.Conn) {
	buf := make([]byte, 1<<20)
	for {
		if _, err := c.Read(buf); err != nil {
			return
		}
	}
}

// cpuNanos is the process's user+system CPU time: sender, receiver and
// kernel work alike, so that paths compare by CPU spent and not only by
// wall time on a shared machine.
func cpuNanos() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkFetchWrite encodes and sends a Fetch v16 response over loopback
// TCP, by sendfile or by copying; a reader goroutine discards what arrives.
// size=1MiB is one partition with a 1 MiB file slice of records;
// size=4KiB/parts=100 is a wide fetch of 100 partitions with 4 KiB each, where
// per-slice syscalls rather than copies dominate. path=inline reads the
// file slices into memory and sends each response with one writev
// (zerocopy.Writer.SetInlineMax), what the broker does for small responses;
// the size=1KiB..64KiB shapes find where that stops paying. path=server is
// the broker's setting (64 KiB): inline up to that in all, else each slice
// of up to 16 KiB, the larger ones by sendfile.
func BenchmarkFetchWrite(b *testing.B) {
	const logSize = 1 << 20
	log := batches(logSize/(16<<10), 200)[:logSize] // a trailing partial batch is allowed
	for _, shape := range []struct {
		name  string
		parts int
		size  int64
	}{
		{"size=1KiB", 1, 1 << 10},
		{"size=4KiB", 1, 4 << 10},
		{"size=8KiB", 1, 8 << 10},
		{"size=16KiB", 1, 16 << 10},
		{"size=64KiB", 1, 64 << 10},
		{"size=256KiB", 1, 256 << 10},
		{"size=1MiB", 1, 1 << 20},
		{"size=1KiB/parts=100", 100, 1 << 10},
		{"size=4KiB/parts=100", 100, 4 << 10},
		// the OMB shape over 10,000 partitions: a consumer's fetch of
		// 2,500 partitions carries a batch or two from each of hundreds
		{"size=1KiB/parts=1000", 1000, 1 << 10},
	} {
		for _, path := range []string{"sendfile", "copy", "inline", "server"} {
			b.Run("path="+path+"/"+shape.name, func(b *testing.B) {
				f := logFile(b, log)
				c, s := tcpPair(b)
				done := make(chan struct{})
				go func() { discard(c); close(done) }()
				w := zerocopy.NewWriter(s)
				switch path {
				case "copy":
					w.DisableSendfile()
				case "inline":
					if shape.size*int64(shape.parts) > 256<<10 {
						b.Skip("over the 256 KiB cap of zerocopy.Writer.SetInlineMax")
					}
					w.SetInlineMax(shape.size * int64(shape.parts))
				case "server":
					w.SetInlineMax(64 << 10) // the broker's fetchInlineMax
				}
				parts := make([]fetchresp.Partition, shape.parts)
				topics := []fetchresp.Topic{{ID: [16]byte{1}, Partitions: parts}}
				r := &fetchresp.Response{Topics: topics}
				b.SetBytes(int64(shape.parts) * shape.size)
				b.ReportAllocs()
				cpu0 := cpuNanos()
				n := 0
				for b.Loop() {
					for i := range parts {
						parts[i] = fetchresp.Partition{Partition: int32(i), HighWatermark: 1 << 20, LastStableOffset: 1 << 20, LogStartOffset: 0,
							PreferredReadReplica: -1, Records: zerocopy.FileSlice(f, int64(i)*shape.size%logSize, shape.size)}
					}
					if err := fetchresp.Write(w, 16, int32(n), r); err != nil {
						b.Fatal(err)
					}
					if err := w.Flush(); err != nil {
						b.Fatal(err)
					}
					n++
				}
				b.ReportMetric(float64(cpuNanos()-cpu0)/float64(n), "cpu-ns/op")
				b.StopTimer()
				s.Close()
				<-done
				st := w.Stats()
				if path == "sendfile" && st.CopyBytes+st.InlineBytes != 0 || path == "copy" && st.SendfileBytes != 0 ||
					path == "inline" && st.SendfileBytes+st.CopyBytes != 0 {
					b.Fatalf("wrong path taken: %+v", st)
				}
			})
		}
	}
}
