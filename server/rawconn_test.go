package server_test

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawConn speaks the protocol by hand, for requests kgo would never send
// and for looking at exact responses.
type rawConn struct {
	t    testing.TB
	c    net.Conn
	corr int32
	f    *kmsg.RequestFormatter
}

func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, c: c, f: kmsg.NewRequestFormatter(kmsg.FormatterClientID("rawconn"))}
}

// send writes req at its set version and returns its correlation id.
func (rc *rawConn) send(req kmsg.Request) int32 {
	rc.t.Helper()
	rc.corr++
	rc.writeRaw(rc.f.AppendRequest(nil, req, rc.corr))
	return rc.corr
}

func (rc *rawConn) writeRaw(b []byte) {
	rc.t.Helper()
	rc.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := rc.c.Write(b); err != nil {
		rc.t.Fatalf("write: %v", err)
	}
}

// readFrame reads one response frame; err on EOF or timeout.
func (rc *rawConn) readFrame(timeout time.Duration) ([]byte, error) {
	rc.c.SetReadDeadline(time.Now().Add(timeout))
	var size [4]byte
	if _, err := io.ReadFull(rc.c, size[:]); err != nil {
		return nil, err
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err := io.ReadFull(rc.c, body)
	return body, err
}

// recv reads the response for corr into resp (whose version must be set).
func (rc *rawConn) recv(corr int32, resp kmsg.Response) {
	rc.t.Helper()
	body, err := rc.readFrame(10 * time.Second)
	if err != nil {
		rc.t.Fatalf("read response: %v", err)
	}
	rd := kbin.Reader{Src: body}
	if got := rd.Int32(); got != corr {
		rc.t.Fatalf("correlation id %d, want %d", got, corr)
	}
	if resp.IsFlexible() && resp.Key() != 18 {
		kmsg.SkipTags(&rd)
	}
	if err := resp.ReadFrom(rd.Src); err != nil {
		rc.t.Fatalf("decode %T: %v", resp, err)
	}
}

// do sends req and returns its decoded response.
func (rc *rawConn) do(req kmsg.Request) kmsg.Response {
	rc.t.Helper()
	corr := rc.send(req)
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	rc.recv(corr, resp)
	return resp
}

// expectClosed checks that the server closes the connection without
// answering.
func (rc *rawConn) expectClosed() {
	rc.t.Helper()
	b, err := rc.readFrame(10 * time.Second)
	if err == nil {
		rc.t.Fatalf("got a %d-byte response, want the connection closed", len(b))
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		rc.t.Fatalf("connection still open after 10s")
	}
}
