package zerocopy

import (
	"bytes"
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// TestWriterSendfileFallback makes sendfile(2) refuse (EINVAL, as for a file
// whose filesystem cannot splice) at the start or half way through a slice,
// and checks that the rest goes by the copy path with the stream intact.
func TestWriterSendfileFallback(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after int64 // bytes sendfile moves before refusing
		errno error
	}{
		{"refuse=at-start/errno=EINVAL", 0, unix.EINVAL},
		{"refuse=half-way/errno=EINVAL", 300 << 10, unix.EINVAL},
		{"refuse=at-start/errno=ENOSYS", 0, unix.ENOSYS},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, data := testFile(t, 1<<20)
			sent := int64(0)
			sendfileSyscall = func(out, in int, off *int64, count int) (int, error) {
				if sent >= tc.after {
					return -1, tc.errno
				}
				n, err := unix.Sendfile(out, in, off, int(min(int64(count), tc.after-sent)))
				if n > 0 {
					sent += int64(n)
				}
				return n, err
			}
			t.Cleanup(func() { sendfileSyscall = unix.Sendfile })
			c, s := tcpPair(t)
			w := NewWriter(s)
			w.Write([]byte("frame"))
			w.AddSlice(FileSlice(f, 0, int64(len(data))))
			want := append([]byte("frame"), data...)
			ch := readAll(c, len(want))
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if got := <-ch; !bytes.Equal(got, want) {
				t.Fatalf("stream differs at %d", commonPrefix(got, want))
			}
			st := w.Stats()
			if st.SendfileBytes != tc.after || st.CopyBytes != int64(len(data))-tc.after || st.Fallbacks != 1 {
				t.Fatalf("stats %+v, want %d by sendfile, the rest copied, 1 fallback", st, tc.after)
			}
		})
	}
}

// TestWriterSendfileError checks that another errno fails the Flush.
func TestWriterSendfileError(t *testing.T) {
	f, data := testFile(t, 1000)
	sendfileSyscall = func(int, int, *int64, int) (int, error) { return -1, unix.EPIPE }
	t.Cleanup(func() { sendfileSyscall = unix.Sendfile })
	_, s := tcpPair(t)
	w := NewWriter(s)
	w.AddSlice(FileSlice(f, 0, int64(len(data))))
	if err := w.Flush(); !errors.Is(err, unix.EPIPE) {
		t.Fatalf("Flush = %v, want EPIPE", err)
	}
	if r := f.refs.Load(); r != 1 {
		t.Fatalf("refs %d, want 1", r)
	}
}
