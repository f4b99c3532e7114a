package server

import (
	"bufio"
	"errors"
	"net"
	"syscall"
	"testing"
	"time"
)

// failingRaw is a syscall.RawConn whose Control always fails.
type failingRaw struct{ syscall.RawConn }

func (failingRaw) Control(func(fd uintptr)) error { return errors.New("closed") }

// TestRcvLowatSetFailure: failing to raise the mark only turns the marks
// off for the connection; failing to lower a raised one is an error (the
// reader closes the connection rather than let a small request wait on a
// high mark).
func TestRcvLowatSetFailure(t *testing.T) {
	l := rcvLowat{raw: failingRaw{}, cur: 1}
	if err := l.set(1 << 20); err != nil || l.raw != nil || l.cur != 1 {
		t.Fatalf("raise failed: err %v, raw %v, cur %d; want no error and marks off", err, l.raw, l.cur)
	}
	if err := l.reset(); err != nil {
		t.Fatalf("reset with marks off: %v", err)
	}
	l = rcvLowat{raw: failingRaw{}, cur: 1 << 20}
	if err := l.reset(); err == nil {
		t.Fatal("lowering a raised mark failed without an error")
	}
}

// TestRcvLowatWaitsForTheBufferOnly: a reader whose buffer is smaller than
// the rest of the frame is woken once the buffer can be filled, not once
// the whole frame has arrived. Before, the mark was the frame's rest: a
// client that sent 100 KiB, then 100 KiB more of a 1 MiB frame (or any
// frame it stops short of its end) left the reader asleep with a
// half-filled 128 KiB buffer until its read deadline, and the request
// memory pool charged for 128 KiB of a frame whose bytes had arrived
// (server TestSmallRequestsServedWhilePoolFull failed on it under load).
func TestRcvLowatWaitsForTheBufferOnly(t *testing.T) {
	client, srv := tcpLoopbackPair(t)
	l := newRcvLowat(srv)
	if l.raw == nil {
		t.Skip("not a TCP connection with a raw descriptor")
	}
	const bufLen, piece = 128 << 10, 100 << 10 // of a frame of 1 MiB or more
	go func() {
		client.Write(make([]byte, piece))
		time.Sleep(100 * time.Millisecond) // the reader drains the first piece and waits
		client.Write(make([]byte, piece))
	}()
	srv.SetReadDeadline(time.Now().Add(5 * time.Second))
	rd := bufio.NewReaderSize(srv, 16<<10)
	buf := make([]byte, bufLen)
	start := time.Now()
	got, err := l.readFrame(rd, buf, 0, &crcScan{off: true})
	if err != nil || got != bufLen {
		t.Fatalf("read %d of a %d-byte buffer after %v: %v (the mark waited for the rest of the frame)", got, bufLen, time.Since(start).Round(time.Millisecond), err)
	}
	if err := l.reset(); err != nil {
		t.Fatal(err)
	}
}

// tcpLoopbackPair returns both ends of a TCP connection over loopback,
// closed when the test ends.
func tcpLoopbackPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	server, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	return client, server
}
