package zerocopy

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// testFile writes n pseudo-random bytes to a temp file and returns it open,
// with the test owning one reference (released at cleanup).
func testFile(t testing.TB, n int) (*File, []byte) {
	t.Helper()
	data := make([]byte, n)
	r := rand.New(rand.NewPCG(uint64(n), 7))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	path := filepath.Join(t.TempDir(), "00000000000000000000.log")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	zf := NewFile(f)
	t.Cleanup(func() { zf.Release() })
	return zf, data
}

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

// readAll reads exactly n bytes from c in a goroutine.
func readAll(c net.Conn, n int) <-chan []byte {
	ch := make(chan []byte, 1)
	go func() {
		b := make([]byte, n)
		m, _ := io.ReadFull(c, b)
		ch <- b[:m]
	}()
	return ch
}

// queue adds framing, a file slice, more framing, an in-memory slice and a
// tail to w, returning the bytes that must reach the wire.
func queue(w *Writer, f *File, data []byte) []byte {
	var want []byte
	w.Write([]byte("head"))
	want = append(want, "head"...)
	w.AddSlice(FileSlice(f, 3, int64(len(data)-3)))
	want = append(want, data[3:]...)
	b := w.Frame()
	b = append(b, "mid"...)
	w.SetFrame(b)
	want = append(want, "mid"...)
	w.AddSlice(BytesSlice([]byte("memory")))
	want = append(want, "memory"...)
	w.AddSlice(BytesSlice(nil))
	w.AddSlice(FileSlice(f, 0, 0))
	w.Write([]byte("tail"))
	want = append(want, "tail"...)
	return want
}

func TestWriterPaths(t *testing.T) {
	for _, tc := range []struct {
		name     string
		size     int
		tcp      bool
		sendfile bool
		inline   int64 // SetInlineMax
	}{
		{"dst=buffer/size=small", 100, false, false, 0},
		{"dst=buffer/size=4MiB", 4 << 20, false, false, 0},
		{"dst=tcp/path=sendfile/size=small", 100, true, true, 0},
		{"dst=tcp/path=sendfile/size=4MiB", 4 << 20, true, true, 0},
		{"dst=tcp/path=copy/size=4MiB", 4 << 20, true, false, 0},
		// inlined: the file bytes (97) are at most the limit
		{"dst=tcp/path=inline/size=small", 100, true, true, 97},
		{"dst=buffer/path=inline/size=small", 100, false, false, 97},
		// one byte over the limit: sendfile as usual
		{"dst=tcp/path=inline-over/size=small", 100, true, true, 96},
		{"dst=tcp/path=inline-over/size=4MiB", 4 << 20, true, true, 64 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, data := testFile(t, tc.size)
			var got []byte
			var w *Writer
			var want []byte
			if tc.tcp {
				c, s := tcpPair(t)
				w = NewWriter(s)
				if !tc.sendfile {
					w.DisableSendfile()
				}
				w.SetInlineMax(tc.inline)
				want = queue(w, f, data)
				ch := readAll(c, len(want))
				if err := w.Flush(); err != nil {
					t.Fatal(err)
				}
				got = <-ch
			} else {
				var buf bytes.Buffer
				w = NewWriter(&buf)
				w.SetInlineMax(tc.inline)
				want = queue(w, f, data)
				if err := w.Flush(); err != nil {
					t.Fatal(err)
				}
				got = buf.Bytes()
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("got %d bytes, want %d (equal prefix %d)", len(got), len(want), commonPrefix(got, want))
			}
			st := w.Stats()
			fileBytes := int64(len(data) - 3)
			inlined := fileBytes <= tc.inline
			if inlined {
				if st.InlineBytes != fileBytes || st.SendfileBytes != 0 || st.CopyBytes != 0 {
					t.Fatalf("stats %+v, want all %d file bytes inlined", st, fileBytes)
				}
				if st.WriteBytes != int64(len(want)) {
					t.Fatalf("WriteBytes %d, want %d (framing and inlined bytes)", st.WriteBytes, len(want))
				}
			} else if st.InlineBytes != 0 {
				t.Fatalf("stats %+v: %d file bytes are over the inline limit %d", st, fileBytes, tc.inline)
			} else if tc.sendfile {
				if st.SendfileBytes != fileBytes || st.CopyBytes != 0 {
					t.Fatalf("stats %+v, want all %d file bytes by sendfile", st, fileBytes)
				}
			} else if st.CopyBytes != fileBytes || st.SendfileBytes != 0 {
				t.Fatalf("stats %+v, want all %d file bytes copied", st, fileBytes)
			}
			if !inlined && st.WriteBytes != int64(len(want))-fileBytes {
				t.Fatalf("WriteBytes %d, want %d", st.WriteBytes, int64(len(want))-fileBytes)
			}
			if r := f.refs.Load(); r != 1 {
				t.Fatalf("file refs %d after Flush, want 1 (slices released)", r)
			}
			if w.Buffered() != 0 {
				t.Fatalf("Buffered %d after Flush", w.Buffered())
			}
		})
	}
}

// TestWriterInlinesSmallSlices: a flush whose file slices add up to more
// than the inline limit still reads each slice of at most a quarter of it
// into memory, while they fit the pooled buffer, and sends the others by
// sendfile; the wire carries every byte in order either way.
func TestWriterInlinesSmallSlices(t *testing.T) {
	for _, tc := range []struct {
		name         string
		inline       int64
		sizes        []int64
		inlined, snd int64
	}{
		// 100-byte slices are under 1000/4; the 10,000-byte one is not
		{"mixed", 1000, []int64{100, 10000, 100, 100}, 300, 10000},
		// 60 KiB slices are under 256/4 KiB; the fifth no longer fits
		// the 256 KiB buffer: the first four are written, and it is
		// read into the buffer again
		{"buffer-reused", 256 << 10, []int64{60 << 10, 60 << 10, 60 << 10, 60 << 10, 60 << 10}, 300 << 10, 0},
		// the same with slices by sendfile between them: each writes
		// what is pending first, the bytes stay in order
		{"buffer-reused-mixed", 256 << 10, []int64{60 << 10, 60 << 10, 70 << 10, 60 << 10, 60 << 10, 60 << 10, 70 << 10, 60 << 10}, 360 << 10, 140 << 10},
		// all under the limit together: inlined whatever their sizes
		{"whole", 1000, []int64{300, 600}, 900, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, data := testFile(t, 600<<10)
			c, s := tcpPair(t)
			w := NewWriter(s)
			w.SetInlineMax(tc.inline)
			var want []byte
			var off int64
			for i, n := range tc.sizes {
				hdr := []byte{'h', byte(i)}
				w.Write(hdr)
				want = append(want, hdr...)
				w.AddSlice(FileSlice(f, off, n))
				want = append(want, data[off:off+n]...)
				off += n
			}
			w.Write([]byte("end"))
			want = append(want, "end"...)
			ch := readAll(c, len(want))
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if got := <-ch; !bytes.Equal(got, want) {
				t.Fatalf("got %d bytes, want %d (equal prefix %d)", len(got), len(want), commonPrefix(got, want))
			}
			if st := w.Stats(); st.InlineBytes != tc.inlined || st.SendfileBytes != tc.snd || st.CopyBytes != 0 {
				t.Fatalf("stats %+v, want %d inlined and %d by sendfile", st, tc.inlined, tc.snd)
			}
			if r := f.refs.Load(); r != 1 {
				t.Fatalf("file refs %d after Flush, want 1 (slices released)", r)
			}
		})
	}
}

// cpuNanos is the process's user+system CPU time (sender, receiver and
// kernel work), so the paths compare by CPU spent, not only wall time.
func cpuNanos() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
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

func commonPrefix(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func TestWriterDeadline(t *testing.T) {
	for _, sendfile := range []bool{true, false} {
		name := map[bool]string{true: "path=sendfile", false: "path=copy"}[sendfile]
		t.Run(name, func(t *testing.T) {
			f, data := testFile(t, 1<<20)
			_, s := tcpPair(t)
			w := NewWriter(s)
			if !sendfile {
				w.DisableSendfile()
			}
			// An expired deadline fails the very first write, whatever the
			// socket buffer: no timing involved.
			if err := s.SetWriteDeadline(time.Unix(1, 0)); err != nil {
				t.Fatal(err)
			}
			w.AddSlice(FileSlice(f, 0, int64(len(data))))
			err := w.Flush()
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("Flush = %v, want deadline exceeded", err)
			}
			if r := f.refs.Load(); r != 1 {
				t.Fatalf("file refs %d after failed Flush, want 1", r)
			}
			// Sticky: later slices are released at once, Flush repeats the error.
			w.AddSlice(FileSlice(f, 0, 10))
			if r := f.refs.Load(); r != 1 {
				t.Fatalf("file refs %d after AddSlice on failed writer, want 1", r)
			}
			if err2 := w.Flush(); err2 != err {
				t.Fatalf("second Flush = %v, want sticky %v", err2, err)
			}
		})
	}
}

func TestWriterShortFile(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tcp    bool
		inline int64
	}{{"path=copy", false, 0}, {"path=sendfile", true, 0}, {"path=inline", true, 4096}} {
		t.Run(tc.name, func(t *testing.T) {
			f, data := testFile(t, 1000)
			var w *Writer
			if tc.tcp {
				c, s := tcpPair(t)
				go io.Copy(io.Discard, c)
				w = NewWriter(s)
			} else {
				w = NewWriter(io.Discard)
			}
			w.SetInlineMax(tc.inline)
			w.AddSlice(FileSlice(f, 500, int64(len(data)))) // 500 bytes past EOF
			if err := w.Flush(); !errors.Is(err, ErrShortFile) {
				t.Fatalf("Flush = %v, want ErrShortFile", err)
			}
			if r := f.refs.Load(); r != 1 {
				t.Fatalf("file refs %d, want 1", r)
			}
		})
	}
}

func TestWriterRollback(t *testing.T) {
	f, data := testFile(t, 100)
	var buf bytes.Buffer
	w := NewWriter(&buf)
	w.Write([]byte("keep"))
	w.AddSlice(BytesSlice([]byte("-kept")))
	m := w.Mark()
	w.Write([]byte("drop"))
	w.AddSlice(FileSlice(f, 0, int64(len(data))))
	if r := f.refs.Load(); r != 2 {
		t.Fatalf("refs %d, want 2", r)
	}
	w.Rollback(m)
	if r := f.refs.Load(); r != 1 {
		t.Fatalf("refs %d after Rollback, want 1", r)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); got != "keep-kept" {
		t.Fatalf("got %q", got)
	}
}

// BenchmarkFetchWrite sends a fetch-shaped frame (100 framing bytes, then a
// file slice of size) over loopback TCP, by sendfile or by copying.
func BenchmarkFetchWrite(b *testing.B) {
	const size = 1 << 20
	for _, path := range []string{"sendfile", "copy"} {
		b.Run("path="+path+"/size=1MiB", func(b *testing.B) {
			f, _ := testFile(b, size)
			c, s := tcpPair(b)
			done := make(chan struct{})
			go func() { discard(c); close(done) }()
			w := NewWriter(s)
			if path == "copy" {
				w.DisableSendfile()
			}
			frame := make([]byte, 100)
			b.SetBytes(size + int64(len(frame)))
			b.ReportAllocs()
			cpu0 := cpuNanos()
			for b.Loop() {
				w.Write(frame)
				w.AddSlice(FileSlice(f, 0, size))
				if err := w.Flush(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuNanos()-cpu0)/float64(b.N), "cpu-ns/op")
			b.StopTimer()
			s.Close()
			<-done
			st := w.Stats()
			if path == "sendfile" && st.CopyBytes != 0 || path == "copy" && st.SendfileBytes != 0 {
				b.Fatalf("wrong path taken: %+v", st)
			}
		})
	}
}

// TestGrowFrameBigFrames: frames larger than maxRetainFrame, written one
// after another through Writers that grow their buffer with GrowFrame
// (and so may reuse one a Flush let go), come out whole and in order, with
// nothing of an earlier frame in a later one; a Writer keeps no such
// buffer after its Flush.
func TestGrowFrameBigFrames(t *testing.T) {
	var out bytes.Buffer
	var want []byte
	for i, n := range []int{maxRetainFrame + 1, 3 * maxRetainFrame, 2 * maxRetainFrame, maxRetainFrame + 7} {
		w := NewWriter(&out)
		w.GrowFrame(n)
		if room := cap(w.Frame()) - len(w.Frame()); room < n {
			t.Fatalf("frame %d: room for %d bytes after GrowFrame(%d)", i, room, n)
		}
		frame := bytes.Repeat([]byte{byte('a' + i)}, n)
		w.SetFrame(append(w.Frame(), frame...))
		want = append(want, frame...)
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if w.Frame() != nil {
			t.Fatalf("frame %d: the Writer keeps a %d-byte buffer after Flush", i, cap(w.Frame()))
		}
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Fatalf("wrote %d bytes, want %d (or their content differs)", out.Len(), len(want))
	}
	// A small frame on a Writer with pending bytes grows by append.
	w := NewWriter(&out)
	w.SetFrame(append(w.Frame(), "x"...))
	w.GrowFrame(16)
	if string(w.Frame()) != "x" || cap(w.Frame()) < 17 {
		t.Fatalf("GrowFrame lost pending bytes: %q (cap %d)", w.Frame(), cap(w.Frame()))
	}
}
