// Package kraw speaks the Kafka protocol by hand over one TCP connection,
// for tests that send requests no client would send (spoofed inter-broker
// requests, malformed frames) and look at exact responses.
package kraw

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Conn is one connection; every failure fails the test.
type Conn struct {
	t    testing.TB
	c    net.Conn
	corr int32
	f    *kmsg.RequestFormatter
}

// NetConn returns the underlying connection.
func (rc *Conn) NetConn() net.Conn { return rc.c }

// Close closes the connection.
func (rc *Conn) Close() error { return rc.c.Close() }

// Dial connects to addr (closed at the test's cleanup).
func Dial(t testing.TB, addr string) *Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &Conn{t: t, c: c, f: kmsg.NewRequestFormatter(kmsg.FormatterClientID("rawconn"))}
}

// Send writes req at its set version and returns its correlation id.
func (rc *Conn) Send(req kmsg.Request) int32 {
	rc.t.Helper()
	rc.corr++
	rc.WriteRaw(rc.f.AppendRequest(nil, req, rc.corr))
	return rc.corr
}

// WriteRaw writes b as it is (a whole frame, size prefix included, or any
// bytes at all).
func (rc *Conn) WriteRaw(b []byte) {
	rc.t.Helper()
	rc.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := rc.c.Write(b); err != nil {
		rc.t.Fatalf("write: %v", err)
	}
}

// ReadFrame reads one response frame; err on EOF or timeout.
func (rc *Conn) ReadFrame(timeout time.Duration) ([]byte, error) {
	rc.c.SetReadDeadline(time.Now().Add(timeout))
	var size [4]byte
	if _, err := io.ReadFull(rc.c, size[:]); err != nil {
		return nil, err
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err := io.ReadFull(rc.c, body)
	return body, err
}

// Recv reads the response for corr into resp (whose version must be set).
func (rc *Conn) Recv(corr int32, resp kmsg.Response) {
	rc.t.Helper()
	body, err := rc.ReadFrame(10 * time.Second)
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

// Do sends req and returns its decoded response.
func (rc *Conn) Do(req kmsg.Request) kmsg.Response {
	rc.t.Helper()
	corr := rc.Send(req)
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	rc.Recv(corr, resp)
	return resp
}

// ExpectClosed checks that the server closes the connection without
// answering.
func (rc *Conn) ExpectClosed() {
	rc.t.Helper()
	b, err := rc.ReadFrame(10 * time.Second)
	if err == nil {
		rc.t.Fatalf("got a %d-byte response, want the connection closed", len(b))
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		rc.t.Fatalf("connection still open after 10s")
	}
}
